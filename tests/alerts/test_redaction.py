"""Channel secrets never leave the channel: a receiver that echoes the secret URL path, query and
headers back in its 4xx/5xx answer, or an exception that quotes them, puts them in no log line,
no recorded attempt or notification row, and no command output (alerts/redact.py)."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

import pytest

from alerts.channels.slack import SlackChannel
from alerts.channels.webhook import WebhookChannel
from alerts.config import ChannelConfig
from alerts.redact import redact, secret_parts
from base.errors import DeliveryError
from base.settings import Secret
from tests.helpers import ROOT, env

from .conftest import make_engine, src_rule

SLACK_PATH = "/services/T0AAAA/B0BBBB/s3cr3tT0ken"
TOKEN = "hdr-t0ken-9f8e7d"
QUERY_KEY = "qk-5e6f7a8b"
SECRETS = ("s3cr3tT0ken", TOKEN, QUERY_KEY, "T0AAAA", "B0BBBB")


@pytest.fixture
def echo():
    """A loopback receiver that answers every POST with ``status`` and a body echoing the request
    path (raw, decoded, JSON-escaped with ``\\/``) and every header."""
    state = {"statuses": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status = state["statuses"].pop(0) if state["statuses"] else 503
            body = (f"no route for POST {self.path} (decoded {unquote(self.path)}); "
                    f"{json.dumps({'path': self.path}).replace('/', chr(92) + '/')}; headers: "
                    + "; ".join(f"{k}: {v}" for k, v in self.headers.items())).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["url"] = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield state
    server.shutdown()
    server.server_close()


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def stored_text(store) -> str:
    rows = store.rows("SELECT * FROM alert_delivery_attempts") + store.rows("SELECT * FROM alert_notifications")
    return " ".join(map(str, rows))


def test_echoed_secrets_reach_no_log_no_row(astore, source, echo, clock, caplog):
    echo["statuses"] = [500, 503, 404, 500, 404]
    channels = [
        ChannelConfig(name="slack", type="slack", url=Secret(echo["url"] + SLACK_PATH, "env SLACK_URL")),
        ChannelConfig(name="hook", type="webhook", url=Secret(f"{echo['url']}/in?key={QUERY_KEY}", "env HOOK"),
                      headers={"Authorization": Secret(f"Bearer {TOKEN}", "env AUTH")}),
    ]
    engine = make_engine(astore, [src_rule()], channels, clock)
    source.set(("vision", "h1", 91.0))
    with caplog.at_level(logging.DEBUG):
        engine.run_once()
        clock.advance(5)
        engine.run_once()
    recorded = stored_text(astore)
    assert "answered HTTP 500: no route for POST ***" in recorded or "answered HTTP 503: no route for POST ***" in recorded
    assert "127.0.0.1" in recorded                       # scheme and host stay, to say where
    assert astore.scalar("SELECT count() FROM alert_delivery_attempts") >= 4
    assert leaks(recorded) == [] and leaks(caplog.text) == []


def test_secrets_in_exception_messages_are_redacted(echo):
    # http.client refuses a header value with a line break and quotes the value in its ValueError
    hook = WebhookChannel("hook", f"{echo['url']}/in?key={QUERY_KEY}", headers={"Authorization": f"Bearer {TOKEN}\r\nX: y"})
    with pytest.raises(DeliveryError) as info:
        hook.send(_notification())
    assert "did not answer: ValueError" in str(info.value) and leaks(str(info.value)) == []
    # a transport of one's own whose error quotes the whole request
    slack = SlackChannel("slack", "https://hooks.example" + SLACK_PATH,
                         transport=lambda r: (_ for _ in ()).throw(DeliveryError(f"cannot reach {r.url} ({unquote(r.url)})")))
    with pytest.raises(DeliveryError) as info:
        slack.send(_notification())
    assert leaks(str(info.value)) == []


def test_one_function_redacts_every_form():
    parts = secret_parts(f"https://user:pw-s3cret@hooks.example{SLACK_PATH}?key={QUERY_KEY}", {"X-Token": TOKEN})
    text = (f"{SLACK_PATH} %2Fservices%2FT0AAAA {SLACK_PATH.replace('/', chr(92) + '/')} key={QUERY_KEY} "
            f"{TOKEN.upper()} pw-s3cret https://hooks.example answered")
    out = redact(text, parts)
    assert leaks(out) == [] and "pw-s3cret" not in out and leaks(out.lower()) == []
    assert out.endswith("https://hooks.example answered")


def test_alerts_test_command_prints_no_secret(tmp_path, echo):
    echo["statuses"] = [404]
    config = tmp_path / "gpuledger.toml"
    config.write_text('[[alerts.channels]]\nname = "ops"\ntype = "slack"\nurl = { env = "SLACK_URL" }\n')
    done = subprocess.run([sys.executable, "-m", "gpuledger", "--config", str(config), "--store",
                           f"chdb://{tmp_path / 'store'}", "alerts", "test", "ops"],
                          cwd=ROOT, env=env(SLACK_URL=echo["url"] + SLACK_PATH), capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "answered HTTP 404" in done.stderr
    assert leaks(done.stdout + done.stderr) == []


def _notification():
    from datetime import datetime, timezone

    from alerts.actions import test_notification

    return test_notification("c", "http://dash.example", datetime(2026, 3, 2, tzinfo=timezone.utc))


def test_a_channel_bug_quoting_its_url_is_redacted_in_traceback_and_row(astore, source, clock, caplog):
    from alerts.channels import build_channels
    from alerts.config import AlertsConfig, DeliveryConfig
    from alerts.engine import Engine

    def broken(request):                       # a transport with a bug whose message quotes the request
        raise RuntimeError(f"cannot build {request.url} with {request.headers}")

    cfg = AlertsConfig(builtin=False, default_channels=["hook"], delivery=DeliveryConfig(inline_wait_max_s=0),
                       channels=[ChannelConfig(name="hook", type="webhook",
                                               url=Secret(f"https://hooks.example/in?key={QUERY_KEY}", "env HOOK"),
                                               headers={"X-Token": Secret(TOKEN, "env T")})])
    engine = Engine(astore, [src_rule()], cfg, build_channels(cfg.channels, transport=broken), clock=clock, sleep=clock.sleep)
    source.set(("vision", "h1", 91.0))
    with caplog.at_level(logging.DEBUG):
        engine.run_once()
    assert "RuntimeError: cannot build ***" in stored_text(astore) and "raised unexpectedly" in caplog.text
    assert leaks(stored_text(astore)) == [] and leaks(caplog.text) == []
