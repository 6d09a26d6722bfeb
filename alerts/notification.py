"""What a notification says: a group of alerts for one channel, and plain-text renderings of it.

A ``Notification`` is stored as JSON in the outbox before it is sent, so a retry (or a restart)
sends exactly what was decided. Channels turn it into their own format.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from alerts.clock import parse_iso

SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}
# labels that say whose an alert is, in the order a reader looks for them
OWNER_LABELS = (("team", "team"), ("user", "user"), ("job_id", "job"), ("k8s_namespace", "namespace"),
                ("k8s_pod", "pod"), ("slurm_account", "account"))
WHERE_LABELS = (("host", "host"), ("gpu_uuid", "GPU"), ("mig_instance", "MIG"), ("pool", "pool"),
                ("environment", "env"), ("region", "region"))


def _usd(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def duration_text(seconds: float) -> str:
    """``3 h 10 min``, ``2 d 4 h``, ``45 min``."""
    minutes = max(int(seconds // 60), 0)
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {mins} min" if hours else f"{mins} min"


@dataclass(frozen=True)
class AlertView:
    fingerprint: str
    status: str                      # firing | resolved
    labels: dict[str, str]
    annotations: dict[str, str]
    value: float
    starts_at: str                   # ISO 8601 UTC
    ends_at: str = ""                # set when resolved
    url: str = ""                    # the dashboard page about it

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "")

    @property
    def summary(self) -> str:
        return self.annotations.get("summary") or self.name

    @property
    def usd(self) -> float | None:
        """The money at stake so far (the rule's ``usd`` annotation)."""
        return _usd(self.annotations.get("usd"))

    @property
    def usd_per_hour(self) -> float | None:
        return _usd(self.annotations.get("usd_per_hour"))

    def details(self, at: str) -> list[str]:
        """When (UTC, how long by ``at`` or until it resolved), how much, whose, where, links."""
        since = self.annotations.get("since") or self.starts_at
        start, end = parse_iso(since), parse_iso(self.ends_at or at)
        when = f"since {since.replace('T', ' ').replace('Z', '')[:16]} UTC"
        if start and end:
            when += f" ({duration_text((end - start).total_seconds())}"
            when += f", resolved {self.ends_at.replace('T', ' ')[:16]} UTC)" if self.ends_at else ")"
        money = [f"${self.usd:,.2f} so far" if self.usd is not None else "",
                 f"${self.usd_per_hour:,.2f}/h" if self.usd_per_hour is not None else ""]
        out = [f"when: {when}"]
        if any(money):
            out.append("money: " + ", ".join(m for m in money if m))
        if self.annotations.get("value"):
            out.append(f"value: {self.annotations['value']}")
        for title, names in (("whose", OWNER_LABELS), ("where", WHERE_LABELS)):
            parts = [f"{word} {self.labels[key]}" for key, word in names if self.labels.get(key)]
            if parts:
                out.append(f"{title}: " + ", ".join(parts))
        if self.url:
            out.append(f"open: {self.url}")
        if self.annotations.get("runbook_url"):
            out.append(f"runbook: {self.annotations['runbook_url']}")
        return out


@dataclass(frozen=True)
class Notification:
    key: str                         # idempotency key
    channel: str
    group_key: str
    group_labels: dict[str, str]
    status: str                      # firing | resolved | test
    alerts: tuple[AlertView, ...]
    created_at: str
    dashboard_url: str = ""          # the dashboard's alerts page
    extra: dict = field(default_factory=dict)
    subject: str = ""                # a report's own subject (a digest); alerts' is made by title()
    body: tuple[str, ...] = ()       # a report's lines of text (a digest), instead of one per alert

    @property
    def firing(self) -> list[AlertView]:
        return [a for a in self.alerts if a.status == "firing"]

    @property
    def resolved(self) -> list[AlertView]:
        return [a for a in self.alerts if a.status == "resolved"]

    @property
    def severity(self) -> str:
        ranked = sorted((a.labels.get("severity", "warning") for a in (self.firing or self.alerts)),
                        key=lambda s: SEVERITY_RANK.get(s, 1))
        return ranked[-1] if ranked else "info"

    def title(self) -> str:
        """``[FIRING:2] team research · gpu_idle_window · $40.10 so far, $9.60/h``: who, what and
        the money, as a mail subject or a chat headline."""
        if self.subject:
            return self.subject
        if self.status == "test":
            return "[TEST] gpuledger test notification"
        shown = self.firing or self.alerts
        head = f"[FIRING:{len(self.firing)}]" if self.firing else "[RESOLVED]"
        teams = sorted({a.labels.get("team", "") for a in shown} - {""})
        who = f"team {teams[0]}" if len(teams) == 1 else f"{len(teams)} teams" if teams else ""
        names = ", ".join(sorted({a.name for a in shown}))
        usd = [a.usd for a in shown if a.usd is not None]
        rate = [a.usd_per_hour for a in shown if a.usd_per_hour is not None]
        money = ", ".join(([f"${sum(usd):,.2f}" + (" so far" if rate else "")] if usd else []) +
                          ([f"${sum(rate):,.2f}/h"] if rate else []))
        return " · ".join(p for p in (f"{head} {who}".strip(), names, money) if p)

    def lines(self) -> list[str]:
        """Per alert: what happened and what to do, then when, money, whose, where and links."""
        out = []
        for a in self.alerts:
            mark = "FIRING" if a.status == "firing" else "RESOLVED"
            out.append(f"{mark} [{a.labels.get('severity', '')}] {a.summary}")
            out += [f"    {line}" for line in a.details(self.created_at)]
        return out

    def text(self) -> str:
        body = [self.title(), ""] + (list(self.body) or self.lines())
        if self.dashboard_url:
            body += ["", f"All alerts: {self.dashboard_url}"]
        return "\n".join(body)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Notification:
        data = json.loads(text)
        data["alerts"] = tuple(AlertView(**a) for a in data["alerts"])
        data["body"] = tuple(data.get("body", ()))
        return cls(**data)
