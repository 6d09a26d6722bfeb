"""Routing alerts to channels and grouping them into notifications, as Alertmanager does.

Each firing alert goes to its channels (``channels_for``); on each channel, alerts with the same
values of their rule's ``group_by`` labels form one group, and a group gets one notification
when:

* it has an alert that fired after the group's last notification (a new or re-fired alert);
* an alert of its last notification has resolved (sent when the channel's ``send_resolved``);
* it still has firing alerts and ``repeat_interval`` has passed since its last notification.

Silenced and inhibited alerts are left out of notifications. The last notification of each group
(from the outbox) is the only memory needed, so a restart changes nothing.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from urllib.parse import urlencode

from alerts.clock import iso
from alerts.notification import AlertView, Notification
from alerts.rules import Rule
from alerts.state import FIRING, RESOLVED, AlertState


@dataclass(frozen=True)
class Routing:
    routes: tuple = ()                           # (match dict, channels) pairs
    team_contacts: dict[str, str] = field(default_factory=dict)
    default_channels: tuple[str, ...] = ()

    def channels_for(self, labels: dict[str, str], rule_channels=()) -> list[str]:
        """The rule's channels, plus those of every route matching the labels; else the team's
        contact channel; else the default channels."""
        out = list(rule_channels)
        for match, channels in self.routes:
            if all(labels.get(k, "") == v for k, v in match.items()):
                out += channels
        if not out and labels.get("team") in self.team_contacts:
            out.append(self.team_contacts[labels["team"]])
        if not out:
            out = list(self.default_channels)
        return list(dict.fromkeys(out))


@dataclass(frozen=True)
class LastNotification:
    firing: frozenset[str]
    created_at: datetime


@dataclass
class _Group:
    channel: str
    key: str
    labels: dict[str, str]
    repeat_s: float
    firing: dict[str, tuple[AlertState, Rule]] = field(default_factory=dict)


def group_key(group_by, labels: dict[str, str]) -> str:
    return json.dumps([[name, labels.get(name, "")] for name in sorted(group_by)], separators=(",", ":"))


# alert label -> the dashboard's URL parameter (dashboard/filters.py: the global filters; the Idle &
# waste page's focus on one GPU entity and one of its windows: gpu, mig, window)
URL_FILTERS = {"team": "team", "environment": "env", "gpu_uuid": "gpu", "mig_instance": "mig",
               "window_start": "window"}


def alert_url(base_url: str, page: str, labels: dict[str, str], annotations: dict[str, str] | None = None,
              today: date | None = None) -> str:
    """The dashboard page about an alert, filtered to exactly its team, environment, GPU and idle
    window (``from``/``to``: the window's days, its end's day or ``today`` while it is open)."""
    query = {param: labels[label] for label, param in URL_FILTERS.items() if labels.get(label)}
    if labels.get("window_start"):
        start = labels["window_start"][:10]
        end = (annotations or {}).get("window_end", "")[:10] or (today.isoformat() if today else start)
        query.update({"from": start, "to": max(start, end)})
    return f"{base_url.rstrip('/')}/{page}" + (f"?{urlencode(query)}" if query else "")


def view(st: AlertState, rule: Rule | None, base_url: str, status: str, now: datetime | None = None) -> AlertView:
    return AlertView(st.fingerprint, status, dict(st.labels), dict(st.annotations), st.value,
                     iso(st.fired_at or st.active_since), iso(st.resolved_at) if status == "resolved" else "",
                     alert_url(base_url, rule.page if rule else "alerts", st.labels, st.annotations, (now or st.evaluated_at or st.active_since).date()))


def plan(states: list[tuple[AlertState, Rule]], muted: dict[str, str], last: dict[tuple[str, str], LastNotification],
         routing: Routing, now: datetime, base_url: str, send_resolved: dict[str, bool]) -> list[Notification]:
    """The notifications this round calls for (empty when nothing changed and nothing is due)."""
    by_fp = {st.fingerprint: (st, rule) for st, rule in states}
    groups: dict[tuple[str, str], _Group] = {}
    for st, rule in states:
        if st.state != FIRING or st.fingerprint in muted:
            continue
        for channel in routing.channels_for(st.labels, rule.channels):
            key = group_key(rule.group_by, st.labels)
            group = groups.get((channel, key))
            if group is None:
                labels = {n: st.labels.get(n, "") for n in rule.group_by}
                group = groups[(channel, key)] = _Group(channel, key, labels, rule.repeat_interval_s)
            group.repeat_s = min(group.repeat_s, rule.repeat_interval_s)
            group.firing[st.fingerprint] = (st, rule)
    out = []
    for channel, key in sorted(set(groups) | set(last)):
        group = groups.get((channel, key))
        previous = last.get((channel, key))
        firing = group.firing if group else {}
        new = [fp for fp, (st, _) in firing.items()
               if previous is None or fp not in previous.firing or (st.fired_at and st.fired_at > previous.created_at)]
        resolved = []
        if previous is not None and send_resolved.get(channel, True):
            for fp in sorted(previous.firing - set(firing)):
                st, rule = by_fp.get(fp, (None, None))
                if st is not None and st.state == RESOLVED and fp not in muted:
                    resolved.append((st, rule))
        repeat_due = bool(firing) and previous is not None and group is not None and \
            now - previous.created_at >= timedelta(seconds=group.repeat_s)
        if not (new or resolved or repeat_due):
            continue
        alerts = [view(st, rule, base_url, "firing", now) for st, rule in sorted(firing.values(), key=_order)]
        alerts += [view(st, rule, base_url, "resolved", now) for st, rule in sorted(resolved, key=_order)]
        labels = group.labels if group else _group_labels(key)
        out.append(Notification(
            key=idempotency_key(channel, key, now, alerts), channel=channel, group_key=key, group_labels=labels,
            status="firing" if firing else "resolved", alerts=tuple(alerts), created_at=iso_ms(now),
            dashboard_url=f"{base_url.rstrip('/')}/alerts",
            extra={"repeat_s": group.repeat_s if group else 0.0},
        ))
    return out


def _order(pair) -> tuple:
    st = pair[0]
    return (-{"critical": 2, "warning": 1}.get(st.severity, 0), st.rule, sorted(st.labels.items()))


def _group_labels(key: str) -> dict[str, str]:
    return {name: value for name, value in json.loads(key)}


def iso_ms(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def idempotency_key(channel: str, group: str, now: datetime, alerts: list[AlertView]) -> str:
    parts = [channel, group, iso_ms(now)] + [f"{a.status}:{a.fingerprint}" for a in alerts]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
