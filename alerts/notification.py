"""What a notification says: a group of alerts for one channel, and plain-text renderings of it.

A ``Notification`` is stored as JSON in the outbox before it is sent, so a retry (or a restart)
sends exactly what was decided. Channels turn it into their own format.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


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
        """``[FIRING:2] gpu_idle_window team=data-science`` (Alertmanager's default subject)."""
        if self.status == "test":
            return "[TEST] gpuledger test notification"
        names = sorted({a.name for a in self.alerts})
        head = f"[FIRING:{len(self.firing)}]" if self.firing else "[RESOLVED]"
        groups = " ".join(f"{k}={v}" for k, v in sorted(self.group_labels.items())
                          if k != "alertname" and v)
        return " ".join(p for p in (head, ", ".join(names), groups) if p)

    def lines(self) -> list[str]:
        """One plain-text line per alert."""
        out = []
        for a in self.alerts:
            mark = "FIRING" if a.status == "firing" else "RESOLVED"
            severity = a.labels.get("severity", "")
            out.append(f"{mark} [{severity}] {a.summary}" + (f" ({a.url})" if a.url else ""))
        return out

    def text(self) -> str:
        body = [self.title(), ""] + self.lines()
        if self.dashboard_url:
            body += ["", f"All alerts: {self.dashboard_url}"]
        return "\n".join(body)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Notification:
        data = json.loads(text)
        data["alerts"] = tuple(AlertView(**a) for a in data["alerts"])
        return cls(**data)
