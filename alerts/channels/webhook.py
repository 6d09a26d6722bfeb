"""Generic JSON webhook. The body is Alertmanager's webhook format (version 4), so receivers
written for Alertmanager work as they are; the ``Idempotency-Key`` header carries the
notification's key, so a receiver can drop a repeat after a crash between sending and recording."""
from __future__ import annotations

from alerts.channels.http import Transport, post_json, urllib_transport
from alerts.notification import Notification
from alerts.redact import secret_parts


def common(dicts: list[dict[str, str]]) -> dict[str, str]:
    if not dicts:
        return {}
    first = dicts[0]
    return {k: v for k, v in first.items() if all(d.get(k) == v for d in dicts[1:])}


def webhook_payload(n: Notification, receiver: str = "") -> dict:
    return {
        "version": "4",
        "groupKey": n.group_key,
        # a digest has no alerts: its own status, its lines in "text"
        "status": "firing" if n.firing or n.status == "test" else "digest" if n.status == "digest" else "resolved",
        "receiver": receiver or n.channel,
        "groupLabels": n.group_labels,
        "commonLabels": common([a.labels for a in n.alerts]),
        "commonAnnotations": common([a.annotations for a in n.alerts]),
        "externalURL": n.dashboard_url,
        "truncatedAlerts": 0,
        "idempotencyKey": n.key,
        "title": n.title(),
        "text": n.text(),
        "alerts": [{
            "status": a.status, "labels": a.labels, "annotations": a.annotations, "value": a.value,
            "startsAt": a.starts_at, "endsAt": a.ends_at or "0001-01-01T00:00:00Z",
            "generatorURL": a.url, "fingerprint": a.fingerprint,
        } for a in n.alerts],
    }


class WebhookChannel:
    type = "webhook"

    def __init__(self, name: str, url: str, *, headers: dict[str, str] | None = None,
                 transport: Transport = urllib_transport, timeout_s: float = 10.0, secret_url: bool = True):
        self.name, self._url, self._headers = name, url, dict(headers or {})
        self.transport, self.timeout_s = transport, timeout_s
        self.secrets = secret_parts(url if secret_url else "", self._headers)

    def __repr__(self) -> str:
        return f"WebhookChannel({self.name!r})"

    def send(self, notification: Notification) -> None:
        post_json(self.transport, self.name, self._url, webhook_payload(notification, self.name),
                  headers={**self._headers, "Idempotency-Key": notification.key}, timeout_s=self.timeout_s,
                  secrets=self.secrets)
