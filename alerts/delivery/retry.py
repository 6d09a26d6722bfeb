"""Delivering the outbox: every due notification, retried with backoff, every attempt recorded.

* A failed attempt is retried after ``backoff_initial_s`` doubling up to ``backoff_max_s``, or
  after the receiver's ``Retry-After`` when it answered 429 (or 503 with one).
* A wait of at most ``inline_wait_max_s`` is slept in the same pass (``sleep`` is passed in);
  a longer one schedules the next attempt for a later pass and moves on.
* A channel that fails is skipped for the rest of the pass, so a dead channel costs one attempt
  per pass and never holds up the others.
* A group's notifications reach a channel in the order they were decided: a newer one waits while
  an older one of the same group and channel is still to be retried (a "resolved" never arrives
  before the "firing" it resolves).
* An attempt that cannot succeed (a 4xx, a refused login), or a notification still undelivered
  after ``give_up_after``, is marked ``failed``.
"""
from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from alerts.clock import Clock
from alerts.config import DeliveryConfig
from alerts.durations import parse_duration
from alerts.outbox import DELIVERED, FAILED, PENDING, OutboxEntry, pending, write
from alerts.redact import redact
from base.errors import DeliveryError

log = logging.getLogger(__name__)

ATTEMPT_COLUMNS = ["ts", "key", "channel", "attempt", "ok", "status_code", "error", "retry_after_s", "duration_ms"]
MAX_ATTEMPTS_PER_PASS = 6


@dataclass
class DeliveryReport:
    delivered: list[str] = field(default_factory=list)       # keys
    retrying: dict[str, str] = field(default_factory=dict)   # key -> last error
    failed: dict[str, str] = field(default_factory=dict)     # key -> error
    skipped_channels: dict[str, str] = field(default_factory=dict)


def backoff(attempts: int, cfg: DeliveryConfig) -> float:
    """Wait after the ``attempts``-th failure: initial, 2x, 4x, ... capped."""
    return min(cfg.backoff_max_s, cfg.backoff_initial_s * 2 ** max(0, attempts - 1))


class Deliverer:
    def __init__(self, store, channels: dict, cfg: DeliveryConfig | None = None, *, clock: Clock,
                 sleep: Callable[[float], None] = time.sleep):
        self.store, self.channels, self.cfg = store, channels, cfg or DeliveryConfig()
        self.clock, self.sleep = clock, sleep
        self.give_up_s = parse_duration(self.cfg.give_up_after)

    def run(self, only: list[str] | None = None) -> DeliveryReport:
        """Deliver every due notification (of the ``only`` channels, when given)."""
        report = DeliveryReport()
        blocked: set[str] = set()
        waiting: set[tuple[str, str]] = set()     # groups with an older notification still undelivered
        now = self.clock()
        for entry in pending(self.store, only):
            group = (entry.channel, entry.group_key)
            if entry.channel in blocked or group in waiting or entry.next_attempt_at > now:
                waiting.add(group)        # not due, or behind one of its group not yet delivered
                continue
            channel = self.channels.get(entry.channel)
            if channel is None:
                self._finish(entry, FAILED, f"channel {entry.channel} is not configured any more", report)
                continue
            if not self.deliver(channel, entry, report):
                blocked.add(entry.channel)
                report.skipped_channels[entry.channel] = entry.last_error
            if entry.status == PENDING:
                waiting.add(group)
        return report

    def deliver(self, channel, entry: OutboxEntry, report: DeliveryReport) -> bool:
        """Attempt ``entry`` until delivered, given up, or its next wait is too long for this pass.
        True unless the channel is failing (so the pass moves on to other channels)."""
        notification = entry.notification
        for _ in range(MAX_ATTEMPTS_PER_PASS):
            now = self.clock()
            entry.attempts += 1
            started = time.perf_counter()
            try:
                channel.send(notification)
            except DeliveryError as exc:
                error, retryable, status, after = str(exc), exc.retryable, exc.status or 0, exc.retry_after
            except Exception as exc:  # a bug in a channel must not stop delivery to the others
                log.error("channel %s raised unexpectedly: %s", entry.channel,
                          redact(traceback.format_exc(), getattr(channel, "secrets", ())))
                error, retryable, status, after = f"channel {entry.channel}: {type(exc).__name__}: {exc}", True, 0, None
            else:
                self._attempt(entry, now, True, 0, "", None, started)
                entry.delivered_at = now
                self._finish(entry, DELIVERED, "", report)
                return True
            error = redact(error, getattr(channel, "secrets", ()))     # whatever the channel let through
            self._attempt(entry, now, False, status, error, after, started)
            entry.last_error = error
            if not retryable:
                log.warning("giving up on notification %s: %s", entry.key[:12], error)
                self._finish(entry, FAILED, error, report)
                return True
            wait = after if after is not None else backoff(entry.attempts, self.cfg)
            if now + timedelta(seconds=wait) - entry.created_at > timedelta(seconds=self.give_up_s):
                log.warning("giving up on notification %s after %d attempts: %s", entry.key[:12], entry.attempts, error)
                self._finish(entry, FAILED, error, report)
                return False
            if wait > self.cfg.inline_wait_max_s:
                break
            self.sleep(wait)
        entry.next_attempt_at = self.clock() + timedelta(seconds=wait)
        write(self.store, [entry])
        report.retrying[entry.key] = entry.last_error
        log.warning("notification %s to %s not delivered (attempt %d), next try at %s: %s", entry.key[:12],
                    entry.channel, entry.attempts, entry.next_attempt_at.strftime("%H:%M:%S"), entry.last_error)
        return False

    def _finish(self, entry: OutboxEntry, status: str, error: str, report: DeliveryReport) -> None:
        entry.status = status
        entry.last_error = error
        write(self.store, [entry])
        if status == DELIVERED:
            report.delivered.append(entry.key)
        else:
            report.failed[entry.key] = error

    def _attempt(self, entry, now: datetime, ok: bool, status: int, error: str, after, started: float) -> None:
        row = [now, entry.key, entry.channel, entry.attempts, ok, status, error, float(after or 0.0),
               (time.perf_counter() - started) * 1000]
        self.store.insert("alert_delivery_attempts", [row], ATTEMPT_COLUMNS)


def attempts(store, key: str | None = None) -> list[dict]:
    """Recorded attempts (of one notification when ``key`` is given), oldest first."""
    where = "WHERE key = {key:String}" if key else ""
    rows = store.rows(f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM alert_delivery_attempts {where} ORDER BY ts, attempt",
                      {"key": key} if key else None)
    return [dict(zip(ATTEMPT_COLUMNS, r)) for r in rows]
