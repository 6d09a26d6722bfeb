"""The notification outbox in ``alert_notifications``: written before sending, updated after.

A notification is recorded (status ``pending``) with its idempotency key before any attempt;
delivery marks it ``delivered``, or schedules the next attempt, or gives up (``failed``). The
last notification of each group, whatever its status, is what grouping compares against, so a
decided notification is never decided again, and one not yet delivered is retried until it is.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime

from alerts.clock import utc, version
from alerts.grouping import LastNotification
from alerts.notification import Notification
from base.sqlfiles import sql

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


@dataclass
class OutboxEntry:
    key: str
    channel: str
    group_key: str
    kind: str
    firing: list[str]
    resolved: list[str]
    payload: str
    status: str
    created_at: datetime
    next_attempt_at: datetime
    delivered_at: datetime | None = None
    attempts: int = 0
    last_error: str = ""

    @property
    def notification(self) -> Notification:
        return Notification.from_json(self.payload)


COLUMNS = [f.name for f in dataclasses.fields(OutboxEntry)]


def entry_for(n: Notification, now: datetime) -> OutboxEntry:
    return OutboxEntry(n.key, n.channel, n.group_key, n.status, [a.fingerprint for a in n.firing],
                       [a.fingerprint for a in n.resolved], n.to_json(), PENDING, now, now)


def enqueue(store, notifications: list[Notification], now: datetime) -> list[OutboxEntry]:
    entries = [entry_for(n, now) for n in notifications]
    write(store, entries)
    return entries


def write(store, entries: list[OutboxEntry]) -> None:
    if entries:
        rows = [[*dataclasses.astuple(e), version()] for e in entries]
        store.insert("alert_notifications", rows, COLUMNS + ["version"])


def pending(store, channels: list[str] | None = None) -> list[OutboxEntry]:
    """Pending notifications, due or not, oldest first. A group's notifications on a channel go
    out in this order: the delivery holds a newer one back while an older one waits for a retry,
    so a receiver never hears "resolved" before the "firing" it resolves."""
    where, params = "status = 'pending'", {}
    if channels is not None:
        where += " AND channel IN {channels:Array(String)}"
        params["channels"] = list(channels)
    rows = store.rows(f"SELECT {', '.join(COLUMNS)} FROM alert_notifications FINAL WHERE {where} "
                      "ORDER BY created_at, key", params or None)
    return [_entry(row) for row in rows]


def last_per_group(store) -> dict[tuple[str, str], LastNotification]:
    rows = store.rows(sql("alerts/engine/last_per_group"))
    return {(c, g): LastNotification(frozenset(f), utc(t)) for c, g, f, t in rows}


def entries(store, status: str | None = None) -> list[OutboxEntry]:
    where = "WHERE status = {status:String}" if status else ""
    rows = store.rows(f"SELECT {', '.join(COLUMNS)} FROM alert_notifications FINAL {where} ORDER BY created_at, key",
                      {"status": status} if status else None)
    return [_entry(row) for row in rows]


def _entry(row) -> OutboxEntry:
    e = OutboxEntry(*row)
    e.firing, e.resolved = list(e.firing), list(e.resolved)
    e.created_at, e.next_attempt_at, e.delivered_at = utc(e.created_at), utc(e.next_attempt_at), utc(e.delivered_at)
    return e
