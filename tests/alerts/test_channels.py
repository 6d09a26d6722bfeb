"""Channels against real receivers on loopback: HTTP (Slack, webhook), SMTP (aiosmtpd),
Debian's prometheus-alertmanager."""
import email
import email.policy
import json
import urllib.request

import pytest

from alerts.actions import test_notification as make_test_notification
from alerts.channels.alertmanager import AlertmanagerChannel
from alerts.channels.email import EmailChannel
from alerts.channels.http import Response, retry_after
from alerts.channels.slack import SlackChannel
from alerts.channels.webhook import WebhookChannel
from alerts.config import ChannelConfig
from alerts.notification import AlertView, Notification
from base.errors import DeliveryError, RateLimited
from base.settings import Secret

from .conftest import make_engine, slack_channel, src_rule


def sample(status="firing", created="2026-03-02T09:00:00.000Z") -> Notification:
    alerts = (
        AlertView("aaaa", status, {"alertname": "gpu_idle_window", "severity": "warning", "team": "data-science",
                                   "host": "dgx-07", "gpu_uuid": "GPU-1"},
                  {"summary": "allocated GPU idle 6.0 h on dgx-07 <GPU-1> & co", "since": "2026-03-02 03:00",
                   "usd": "19.2", "usd_per_hour": "3.2", "value": "6 h",
                   "runbook_url": "https://wiki.example/runbooks#gpu_idle_window"}, 6.0, "2026-03-02T08:00:00Z",
                  "2026-03-02T08:59:00Z" if status == "resolved" else "", "http://dash:8050/idle?team=data-science"),
        AlertView("bbbb", status, {"alertname": "gpu_idle_window", "severity": "critical", "team": "data-science",
                                   "host": "dgx-08", "gpu_uuid": "GPU-2"},
                  {"summary": "idle on dgx-08", "usd": "10.5", "usd_per_hour": "2.1"}, 5.0, "2026-03-02T08:10:00Z",
                  "2026-03-02T08:59:00Z" if status == "resolved" else "", "http://dash:8050/idle?team=data-science"),
    )
    return Notification("k" * 32, "c", '[["alertname","gpu_idle_window"],["team","data-science"]]',
                        {"alertname": "gpu_idle_window", "team": "data-science"}, status, alerts, created,
                        "http://dash:8050/alerts", {"repeat_s": 3600.0})


def test_slack_gets_block_kit_with_text_fallback_and_dashboard_links(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule(page="idle", severity="critical")], [slack_channel(receiver)], clock)
    source.set(("data-science", "dgx-07", 1.5))
    engine.run_once()
    [req] = receiver.delivered()
    assert req.path == "/services/T0/B0/s3cr3tT0ken" and req.headers["content-type"] == "application/json"
    body = req.json()
    assert body["text"].startswith("[FIRING:1] team data-science · gpu_hot\n")
    assert "dgx-07 of data-science is at 1.5" in body["text"]
    header, section, actions = body["blocks"]
    assert header["type"] == "header" and header["text"]["text"] == "[FIRING:1] team data-science · gpu_hot"
    assert section["text"]["type"] == "mrkdwn"
    assert "<http://dash.example:8050/idle?team=data-science|dgx-07 of data-science is at 1.5>" in section["text"]["text"]
    assert ":red_circle:" in section["text"]["text"]
    assert actions["elements"][0]["url"] == "http://dash.example:8050/alerts"


def test_slack_escapes_mrkdwn_and_marks_resolved(receiver):
    SlackChannel("s", receiver.url + "/hook").send(sample("resolved"))
    body = receiver.delivered()[0].json()
    assert body["text"].startswith("[RESOLVED] team data-science · gpu_idle_window · $29.70 so far, $5.30/h\n")
    first = body["blocks"][1]["text"]["text"]
    assert "&lt;GPU-1&gt; &amp; co" in first and ":white_check_mark: resolved" in first
    assert "when: since 2026-03-02 03:00 UTC (5 h 59 min, resolved 2026-03-02 08:59 UTC)" in first


def test_webhook_posts_alertmanager_format_with_idempotency_key_and_secret_headers(receiver):
    WebhookChannel("w", receiver.url + "/in", headers={"Authorization": "Bearer tok"}).send(sample())
    [req] = receiver.delivered()
    assert req.headers["idempotency-key"] == "k" * 32 and req.headers["authorization"] == "Bearer tok"
    body = req.json()
    assert body["version"] == "4" and body["status"] == "firing" and body["receiver"] == "w"
    assert body["commonLabels"] == {"alertname": "gpu_idle_window", "team": "data-science"}
    assert [a["fingerprint"] for a in body["alerts"]] == ["aaaa", "bbbb"]
    assert body["alerts"][0]["generatorURL"] == "http://dash:8050/idle?team=data-science"
    assert body["externalURL"] == "http://dash:8050/alerts"


def test_429_with_http_date_and_5xx_are_retryable_4xx_not(receiver):
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    receiver.reply(429, {"Retry-After": "12"})
    receiver.reply(502)
    receiver.reply(404)
    hook = WebhookChannel("w", receiver.url + "/in")
    with pytest.raises(RateLimited) as info:
        hook.send(sample())
    assert info.value.retry_after == 12.0 and info.value.retryable
    with pytest.raises(DeliveryError) as info:
        hook.send(sample())
    assert info.value.retryable and info.value.status == 502
    with pytest.raises(DeliveryError) as info:
        hook.send(sample())
    assert not info.value.retryable


def test_a_transport_can_be_a_plain_function():
    seen = []

    def transport(request):
        seen.append(request)
        return Response(200)

    WebhookChannel("w", "https://hooks.example/secret-path", transport=transport).send(sample())
    assert seen[0].method == "POST" and json.loads(seen[0].body)["groupKey"] == sample().group_key
    assert "secret-path" not in repr(seen[0])


def parse_mail(raw: bytes):
    return email.message_from_bytes(raw, policy=email.policy.default)


def test_email_is_well_formed_multipart_with_text_and_html(smtp_server):
    EmailChannel("mail", host=smtp_server.host, port=smtp_server.port, security="none",
                 sender="gpuledger@example.org", recipients=["a@example.org", "b@example.org"]).send(sample())
    [(sender, rcpts, raw)] = smtp_server.messages
    assert sender == "gpuledger@example.org" and rcpts == ["a@example.org", "b@example.org"]
    msg = parse_mail(raw)
    assert msg["Subject"] == "[FIRING:2] team data-science · gpu_idle_window · $29.70 so far, $5.30/h"
    assert msg.get_content_type() == "multipart/alternative" and msg["Message-ID"] and msg["Date"]
    assert [p.get_content_type() for p in msg.iter_parts()] == ["text/plain", "text/html"]
    text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")
    html = msg.get_body(("html",)).get_content()
    assert "FIRING [warning] allocated GPU idle 6.0 h on dgx-07 <GPU-1> & co" in text
    # when (UTC, how long by the time of the notification), money, value with its unit, whose, where, links
    assert ("    when: since 2026-03-02 03:00 UTC (6 h 0 min)\n    money: $19.20 so far, $3.20/h\n    value: 6 h\n"
            "    whose: team data-science\n    where: host dgx-07, GPU GPU-1\n"
            "    open: http://dash:8050/idle?team=data-science\n"
            "    runbook: https://wiki.example/runbooks#gpu_idle_window\n") in text
    assert "when: since 2026-03-02 08:10 UTC (50 min)" in text          # no window start: since it fired
    assert "http://dash:8050/alerts" in text
    assert "money: $19.20 so far, $3.20/h" in html
    assert '<a href="http://dash:8050/idle?team=data-science">allocated GPU idle 6.0 h on dgx-07 &lt;GPU-1&gt; &amp; co</a>' in html


def test_email_with_starttls_and_auth(smtp_tls_server, tls_cert):
    channel = EmailChannel("mail", host=smtp_tls_server.host, port=smtp_tls_server.port, security="starttls",
                           user="alerts", password="mail-s3cret", ca_file=str(tls_cert[0]),
                           sender="gpuledger@example.org", recipients=["oncall@example.org"])
    channel.send(sample("resolved"))
    assert smtp_tls_server.logins == [(b"alerts", True)]
    assert parse_mail(smtp_tls_server.messages[0][2])["Subject"].startswith("[RESOLVED]")
    wrong = EmailChannel("mail", host=smtp_tls_server.host, port=smtp_tls_server.port, security="starttls",
                         user="alerts", password="not-the-password", ca_file=str(tls_cert[0]),
                         sender="gpuledger@example.org", recipients=["oncall@example.org"])
    with pytest.raises(DeliveryError) as info:
        wrong.send(sample())
    assert not info.value.retryable and "refused the login of 'alerts'" in str(info.value)
    assert "not-the-password" not in str(info.value) and "not-the-password" not in repr(wrong)


def test_email_refuses_an_untrusted_certificate(smtp_tls_server):
    channel = EmailChannel("mail", host=smtp_tls_server.host, port=smtp_tls_server.port, security="starttls",
                           user="alerts", password="mail-s3cret", sender="g@example.org", recipients=["o@example.org"])
    with pytest.raises(DeliveryError, match="SSLCertVerificationError"):
        channel.send(sample())
    assert smtp_tls_server.messages == []


def am_alerts(url: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/api/v2/alerts", timeout=5) as resp:
        return json.loads(resp.read())


def test_alertmanager_accepts_our_alerts_and_lists_them(alertmanager):
    channel = AlertmanagerChannel("am", alertmanager)
    note = sample(created="2026-03-02T09:00:00.000Z")
    firing = Notification(note.key, note.channel, note.group_key, note.group_labels, "firing", note.alerts,
                          _now_iso(), note.dashboard_url, note.extra)
    channel.send(firing)
    listed = {a["labels"]["host"]: a for a in am_alerts(alertmanager) if a["labels"].get("alertname") == "gpu_idle_window"}
    assert set(listed) == {"dgx-07", "dgx-08"}
    assert listed["dgx-07"]["status"]["state"] == "active"
    assert listed["dgx-07"]["labels"]["team"] == "data-science"
    assert listed["dgx-07"]["annotations"]["summary"].startswith("allocated GPU idle 6.0 h")
    assert listed["dgx-07"]["generatorURL"] == "http://dash:8050/idle?team=data-science"
    resolved = tuple(AlertView(a.fingerprint, "resolved", a.labels, a.annotations, a.value, a.starts_at,
                               _now_iso(-1), a.url) for a in note.alerts)
    channel.send(Notification("r" * 32, "am", note.group_key, note.group_labels, "resolved", resolved, _now_iso(),
                              note.dashboard_url))
    assert [a for a in am_alerts(alertmanager) if a["labels"].get("alertname") == "gpu_idle_window"] == []


def test_alertmanager_rejects_nonsense_and_we_say_so(alertmanager):
    channel = AlertmanagerChannel("am", alertmanager)
    bad = AlertView("x", "firing", {"bad label": "v"}, {}, 1.0, "2026-03-02T08:00:00Z")
    with pytest.raises(DeliveryError) as info:
        channel.send(Notification("b" * 32, "am", "g", {}, "firing", (bad,), _now_iso()))
    assert info.value.status == 400 and not info.value.retryable


def test_engine_to_alertmanager_end_to_end(astore, source, alertmanager, clock):
    from datetime import datetime, timezone

    clock.now = datetime.now(timezone.utc)
    am = ChannelConfig(name="am", type="alertmanager", endpoint=alertmanager)
    engine = make_engine(astore, [src_rule("e2e_hot")], [am], clock)
    source.set(("vision", "h9", 97.0))
    engine.run_once()
    listed = [a for a in am_alerts(alertmanager) if a["labels"].get("alertname") == "e2e_hot"]
    assert [(a["labels"]["host"], a["labels"]["severity"]) for a in listed] == [("h9", "warning")]


def test_test_notification_reaches_the_channel(receiver, clock):
    n = make_test_notification("slack", "http://dash:8050", clock())
    SlackChannel("slack", receiver.url + "/x").send(n)
    assert receiver.delivered()[0].json()["text"].startswith("[TEST] gpuledger test notification")


def _now_iso(minutes: int = 0) -> str:
    from datetime import datetime, timedelta, timezone

    t = datetime.now(timezone.utc) + timedelta(minutes=minutes)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_secret_channel_url_is_hidden_in_config_repr():
    c = ChannelConfig(name="s", type="slack", url=Secret("https://hooks.slack.com/services/T/B/SECRET", "env X"))
    assert "SECRET" not in repr(c) and "env X" in repr(c)
