"""Channels: anything with ``name``, ``type``, ``secrets`` and ``send(notification)`` that raises
``DeliveryError`` when the receiver did not take it. ``secrets`` are the pieces of its URL,
headers or password that ``alerts.redact.redact`` takes out of any text about it.

HTTP channels take a ``transport`` (a function from ``Request`` to ``Response``, see ``http``),
the email channel an ``smtp`` factory, so tests plug in loopback servers or plain functions.
``build_channels`` makes them from the config.
"""
from __future__ import annotations

from typing import Protocol

from alerts.notification import Notification


class Channel(Protocol):
    name: str
    type: str
    secrets: tuple[str, ...]

    def send(self, notification: Notification) -> None: ...


def build_channels(configs, transport=None, smtp=None) -> dict[str, Channel]:
    """{name: channel} for every ``ChannelConfig``; ``transport``/``smtp`` default to the real ones."""
    from alerts.channels.alertmanager import AlertmanagerChannel
    from alerts.channels.email import EmailChannel
    from alerts.channels.http import urllib_transport
    from alerts.channels.slack import SlackChannel
    from alerts.channels.webhook import WebhookChannel

    transport = transport or urllib_transport
    out: dict[str, Channel] = {}
    for c in configs:
        url = c.url.get() if c.url else c.endpoint
        headers = {k: v.get() for k, v in c.headers.items()}
        if c.type == "slack":
            out[c.name] = SlackChannel(c.name, url, transport=transport, timeout_s=c.timeout_s)
        elif c.type == "webhook":
            out[c.name] = WebhookChannel(c.name, url, headers=headers, transport=transport, timeout_s=c.timeout_s,
                                         secret_url=bool(c.url))
        elif c.type == "alertmanager":
            out[c.name] = AlertmanagerChannel(c.name, url, headers=headers, transport=transport, timeout_s=c.timeout_s,
                                              secret_url=bool(c.url))
        elif c.type == "email":
            out[c.name] = EmailChannel(
                c.name, host=c.smtp_host, port=c.smtp_port, security=c.smtp_security, user=c.smtp_user,
                password=c.smtp_password.get() if c.smtp_password else "", sender=c.email_from,
                recipients=list(c.email_to), ca_file=c.smtp_ca_file, timeout_s=c.timeout_s, smtp=smtp)
    return out
