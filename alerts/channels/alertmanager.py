"""Prometheus Alertmanager: ``POST {endpoint}/api/v2/alerts`` with the notification's alerts,
so Alertmanager's own routing, silences and receivers take over from there.

Empty label values are left out (Prometheus treats them as absent). A firing alert's ``endsAt``
is set past the group's next repeat, so Alertmanager keeps it firing until gpuledger repeats or
resolves it; a resolved alert carries the time it resolved."""
from __future__ import annotations

from datetime import timedelta

from alerts.channels.http import Transport, post_json, urllib_transport
from alerts.clock import parse_iso
from alerts.notification import Notification
from alerts.redact import secret_parts

DEFAULT_HOLD_S = 4 * 3600.0


def alertmanager_payload(n: Notification) -> list[dict]:
    hold = float(n.extra.get("repeat_s", DEFAULT_HOLD_S)) * 1.5 + 300
    sent = parse_iso(n.created_at)
    out = []
    for a in n.alerts:
        labels = {k: v for k, v in a.labels.items() if v}
        if n.status == "test":
            labels["test"] = "true"
        alert = {"labels": labels, "annotations": {k: v for k, v in a.annotations.items() if v},
                 "startsAt": a.starts_at, "generatorURL": a.url}
        alert["endsAt"] = a.ends_at if a.status == "resolved" and a.ends_at else \
            (sent + timedelta(seconds=hold)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        out.append(alert)
    return out


class AlertmanagerChannel:
    type = "alertmanager"

    def __init__(self, name: str, endpoint: str, *, headers: dict[str, str] | None = None,
                 transport: Transport = urllib_transport, timeout_s: float = 10.0, secret_url: bool = False):
        self.name, self._endpoint, self._headers = name, endpoint.rstrip("/"), dict(headers or {})
        self.transport, self.timeout_s = transport, timeout_s
        self.secrets = secret_parts(endpoint if secret_url else "", self._headers)

    def __repr__(self) -> str:
        return f"AlertmanagerChannel({self.name!r})"

    def send(self, notification: Notification) -> None:
        post_json(self.transport, self.name, f"{self._endpoint}/api/v2/alerts", alertmanager_payload(notification),
                  headers=self._headers, timeout_s=self.timeout_s, secrets=self.secrets)
