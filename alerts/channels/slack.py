"""Slack incoming webhook: Block Kit blocks with a plain ``text`` fallback (shown in
notifications and by clients without blocks), each alert linking to its dashboard page."""
from __future__ import annotations

from alerts.channels.http import Transport, post_json, urllib_transport
from alerts.notification import Notification
from alerts.redact import secret_parts

MAX_ALERTS = 20                     # Slack allows 50 blocks; keep the message readable
EMOJI = {"critical": ":red_circle:", "warning": ":large_orange_circle:", "info": ":large_blue_circle:"}


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_payload(n: Notification) -> dict:
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": n.title()[:150], "emoji": True}}]
    if n.body:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": escape("\n".join(n.body))[:2900]}})
    for a in n.alerts[:MAX_ALERTS]:
        mark = ":white_check_mark: resolved" if a.status == "resolved" else EMOJI.get(a.labels.get("severity"), "")
        summary = escape(a.summary)
        title = f"<{a.url}|{summary}>" if a.url else summary
        details = "\n".join(escape(line) for line in a.details(n.created_at) if not line.startswith("open: "))
        text = f"{mark} *{title}*\n{details}\n`{a.name}`"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}})
    if len(n.alerts) > MAX_ALERTS:
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": f"… and {len(n.alerts) - MAX_ALERTS} more on the dashboard"}]})
    if n.dashboard_url:
        blocks.append({"type": "actions", "elements": [
            {"type": "button", "text": {"type": "plain_text", "text": "Open in gpuledger"}, "url": n.dashboard_url}]})
    return {"text": n.text()[:3000], "blocks": blocks}


class SlackChannel:
    type = "slack"

    def __init__(self, name: str, url: str, *, transport: Transport = urllib_transport, timeout_s: float = 10.0):
        self.name, self._url, self.transport, self.timeout_s = name, url, transport, timeout_s
        self.secrets = secret_parts(url)

    def __repr__(self) -> str:
        return f"SlackChannel({self.name!r})"

    def send(self, notification: Notification) -> None:
        post_json(self.transport, self.name, self._url, slack_payload(notification), timeout_s=self.timeout_s,
                  secrets=self.secrets)
