"""Fixtures for the alerts tests: a store with the alert tables, a clock the test moves, and real
receivers on loopback (HTTP, SMTP via aiosmtpd, Debian's prometheus-alertmanager)."""
from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from alerts.config import AlertsConfig, ChannelConfig, DeliveryConfig
from alerts.engine import Engine
from alerts.rules import Rule
from base.settings import Secret
from base.sqlfiles import split_statements, text
from tests.helpers import free_port

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"


class FakeClock:
    """``clock()`` returns the test's time; ``sleep(s)`` moves it instead of waiting."""

    def __init__(self, now: datetime = T0):
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float = 0, **kw) -> datetime:
        self.now += timedelta(seconds=seconds, **kw)
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def apply_alerts_schema(store) -> None:
    for statement in split_statements(text("migrations/005_alerts")):
        store.command(statement)


@pytest.fixture
def astore(store_dsn):
    """A fresh database with only the alert tables (migration 005) — independent of the other
    migrations, so stand-ins for the analytics views can be created freely."""
    from ingest.store import connect

    handle = connect(store_dsn)
    apply_alerts_schema(handle)
    yield handle
    handle.command(f"DROP DATABASE IF EXISTS `{handle.target.database}`")


# --- a rule over a table the test fills --------------------------------------------------------

SOURCE_DDL = "CREATE TABLE src (team String, host String, v Float64) ENGINE = Memory"


class Source:
    """The rows a test rule returns: ``set(("vision", "h1", 3.0), ...)`` replaces them."""

    def __init__(self, store):
        self.store = store
        store.command(SOURCE_DDL)

    def set(self, *rows) -> None:
        self.store.command("TRUNCATE TABLE src")
        if rows:
            self.store.client.insert("src", [list(r) for r in rows], column_names=["team", "host", "v"])


@pytest.fixture
def source(astore) -> Source:
    return Source(astore)


def src_rule(name="gpu_hot", **kw) -> Rule:
    kw.setdefault("annotations", {"summary": "{host} of {team} is at {value}"})
    return Rule(name, sql="SELECT team, host, v AS value FROM src", **kw)


# --- an HTTP receiver --------------------------------------------------------------------------

@dataclass
class Received:
    method: str
    path: str
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class Receiver:
    """Records every request; answers with the queued (status, headers, body) replies, then 200."""

    url: str
    requests: list[Received] = field(default_factory=list)
    replies: list[tuple[int, dict, bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self, status: int, headers: dict | None = None, body: bytes = b"", times: int = 1) -> None:
        self.replies += [(status, headers or {}, body)] * times

    def delivered(self, path: str | None = None) -> list[Received]:
        """Requests answered 2xx (optionally to one path)."""
        return [r for r in self.requests if getattr(r, "status", 200) < 300 and (path is None or r.path == path)]


@pytest.fixture
def receiver():
    state: dict = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            rec = state["receiver"]
            with rec.lock:
                status, headers, reply = rec.replies.pop(0) if rec.replies else (200, {}, b"ok")
                item = Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                item.status = status
                rec.requests.append(item)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["receiver"] = Receiver(f"http://127.0.0.1:{server.server_port}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state["receiver"]
    server.shutdown()
    server.server_close()


def webhook_channel(receiver: Receiver, name="hook", path="/hook", **kw) -> ChannelConfig:
    return ChannelConfig(name=name, type="webhook", endpoint=receiver.url + path, **kw)


def slack_channel(receiver: Receiver, name="slack", secret_path="/services/T0/B0/s3cr3tT0ken", **kw) -> ChannelConfig:
    return ChannelConfig(name=name, type="slack", url=Secret(receiver.url + secret_path, "env SLACK_URL"), **kw)


def make_engine(store, rules, channels, clock, **cfg_kw) -> Engine:
    from alerts.channels import build_channels

    cfg_kw.setdefault("default_channels", [c.name for c in channels])
    cfg_kw.setdefault("delivery", DeliveryConfig(inline_wait_max_s=0))
    cfg = AlertsConfig(builtin=False, channels=list(channels), base_url="http://dash.example:8050", **cfg_kw)
    return Engine(store, rules, cfg, build_channels(cfg.channels), clock=clock, sleep=clock.sleep)


# --- SMTP (aiosmtpd) ---------------------------------------------------------------------------

@dataclass
class Mailbox:
    host: str
    port: int
    messages: list = field(default_factory=list)     # (envelope from, recipients, raw bytes)
    logins: list = field(default_factory=list)


def _smtp_server(tls_context=None, require_auth=False):
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    box = Mailbox("127.0.0.1", free_port())

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            box.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
            return "250 OK"

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = auth_data.login == b"alerts" and auth_data.password == b"mail-s3cret"
        box.logins.append((auth_data.login, ok))
        return AuthResult(success=ok, handled=False)

    kwargs = {}
    if tls_context is not None:
        kwargs.update(tls_context=tls_context, require_starttls=True)
    if require_auth:
        kwargs.update(authenticator=authenticator, auth_required=True)
    controller = Controller(Handler(), hostname=box.host, port=box.port, **kwargs)
    controller.start()
    return controller, box


@pytest.fixture
def smtp_server():
    controller, box = _smtp_server()
    yield box
    controller.stop()


@pytest.fixture(scope="session")
def tls_cert(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (made with openssl)."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture
def smtp_tls_server(tls_cert):
    import ssl

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(tls_cert[0]), str(tls_cert[1]))
    controller, box = _smtp_server(context, require_auth=True)
    yield box
    controller.stop()


# --- Alertmanager ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def alertmanager(tmp_path_factory):
    """Debian's prometheus-alertmanager on a free loopback port, clustering off. Yields its URL."""
    assert Path(ALERTMANAGER).exists() or shutil.which("prometheus-alertmanager"), \
        "install Debian's prometheus-alertmanager (scripts/test.sh does)"
    binary = ALERTMANAGER if Path(ALERTMANAGER).exists() else shutil.which("prometheus-alertmanager")
    d = tmp_path_factory.mktemp("alertmanager")
    (d / "alertmanager.yml").write_text("route:\n  receiver: blackhole\n  group_wait: 1h\nreceivers:\n  - name: blackhole\n")
    port = free_port()
    proc = subprocess.Popen([binary, f"--config.file={d / 'alertmanager.yml'}", f"--storage.path={d / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                            stdout=subprocess.DEVNULL, stderr=open(d / "log.txt", "wb"))
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise AssertionError(f"alertmanager did not start: {(d / 'log.txt').read_text()[-2000:]}")
        time.sleep(0.1)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
