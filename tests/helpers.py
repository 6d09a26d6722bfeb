"""What more than one test folder uses, in one place: loopback ports and bounded waits, real
gpuledger processes (each with its own embedded store: chDB allows one per process), a fake GPU
node and an in-process platform server, telemetry batches, an independent remote_write encoder,
an HTTP client for ``dashboard.probe``, and walks over the CLI and the config schema for the docs
tests.

Fixtures stay in ``conftest.py`` files (``tests/conftest.py`` for those every folder uses); the
processes the tests start are ``tests/agent_proc.py`` and ``tests/ingest/platform_proc.py``.
"""
from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import math
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import typing
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]          # the checkout
TOKEN = "load-test-token"                           # the receiver's token in the processes started here
T0 = datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)


# ---- loopback and waits -----------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout_s: float = 30.0, every_s: float = 0.1, what: str = "condition"):
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def get(url: str, timeout_s: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return response.read().decode()


# ---- processes --------------------------------------------------------------------------------

def env(**extra) -> dict:
    """This environment, with the checkout importable and the receiver token in
    $GPULEDGER_INGEST_TOKEN (what the configs below read)."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "GPULEDGER_INGEST_TOKEN": TOKEN, **extra}


class Proc:
    """``python ARGS`` as a child process whose output lines are kept (for waits and failure
    messages). ``count``/``wait_for`` match anywhere in a line, or with ``prefix=True`` only at its
    start (for the lines a helper process prints, among the log lines)."""

    def __init__(self, args: list[str], extra_env: dict | None = None, cwd: Path = ROOT):
        self.args = args
        self.p = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env(**(extra_env or {})), text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))

    def count(self, text: str, prefix: bool = False) -> int:
        return sum((line.startswith(text) if prefix else text in line) for line in list(self.lines))

    def wait_for(self, text: str, n: int = 1, timeout_s: float = 60, prefix: bool = False) -> None:
        deadline = time.monotonic() + timeout_s
        while self.count(text, prefix) < n:
            if self.p.poll() is not None:
                self._reader.join(2)
                if self.count(text, prefix) >= n:
                    return
                raise AssertionError(f"{' '.join(self.args)} exited ({self.p.returncode}) before {text!r} x{n}:\n"
                                     + self.tail())
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {text!r} x{n}:\n" + self.tail())
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL: no clean-up, no flush, exactly like a crash or the OOM killer."""
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGKILL)
        self.p.wait(30)

    def stop(self, timeout_s: float = 60) -> int:
        """SIGTERM, and its exit status (killed, and a failure, if it does not exit in ``timeout_s``)."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        return self.finish(timeout_s)

    def finish(self, timeout_s: float = 300) -> int:
        """Its exit status once it exits (killed, and a failure, if it does not within ``timeout_s``)."""
        try:
            return self.p.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{' '.join(self.args)} did not exit in {timeout_s:.0f} s:\n" + self.tail())
        finally:
            self._reader.join(5)

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.lines[-n:])


def gpuledger(store_dir: Path, *args: str, config: Path | None = None, extra_env: dict | None = None) -> Proc:
    """``gpuledger [--config CONFIG] --store chdb://STORE_DIR ARGS…`` as a Proc."""
    cfg = ["--config", str(config)] if config else []
    return Proc(["-m", "gpuledger", *cfg, "--store", f"chdb://{store_dir}", *args], extra_env)


def query(store_dir: Path, sql: str) -> list[dict]:
    """Rows of ``sql`` against a store no process holds (``gpuledger query --format json``), so the
    counts come from the store itself."""
    out = subprocess.run([sys.executable, "-m", "gpuledger", "--store", f"chdb://{store_dir}", "query", sql,
                          "--format", "json"], cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def up_config(path: Path, scrape: list[dict] | None = None, extra: str = "") -> Path:
    """A config for ``gpuledger up`` on loopback: receiver token from the environment, no local GPUs."""
    lines = ["[receiver]", 'token = { env = "GPULEDGER_INGEST_TOKEN" }', "",
             "[collector]", "local_sampling = false", ""]
    for target in scrape or []:
        lines += ["[[scrape]]"] + [f"{k} = {json.dumps(v)}" for k, v in target.items()] + [""]
    path.write_text("\n".join(lines) + extra)
    return path


def start_up(store_dir: Path, config: Path, extra_env: dict | None = None, timeout_s: float = 90,
             port: int | None = None) -> tuple[Proc, str]:
    """``gpuledger up`` on loopback (a free port unless one is given), once it answers /healthz."""
    port = port or free_port()
    proc = gpuledger(store_dir, "up", "--host", "127.0.0.1", "--port", str(port), config=config, extra_env=extra_env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except (OSError, urllib.error.HTTPError):
            pass
        if proc.p.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("gpuledger up did not answer /healthz:\n" + proc.tail())
        time.sleep(0.2)


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


# ---- a GPU node and a platform in this process ------------------------------------------------

def fake_node(gpus: int = 2, seed: str = "telemetry"):
    """A node of L40S GPUs with one busy process each, on a fake clock (a FakeNvml)."""
    from collector import fake_gpu_models as models
    from collector.fake_nvml import MIB, FakeNvml, FakeProcess

    fleet = [models.l40s(i, seed=seed, util_gpu=40 + 10 * i, util_mem=20 + i, power_w=200.5 + i,
                         processes=[FakeProcess(4000 + i, (1000 + i) * MIB, "python3", 30, 10)])
             for i in range(gpus)]
    return FakeNvml(fleet, start_s=1_784_000_000.0)


class ServedPlatform:
    """A Platform served on a loopback port in a thread (stop() ends it)."""

    def __init__(self, platform):
        self.platform = platform
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=platform.serve, args=("127.0.0.1", self.port), daemon=True)

    def __enter__(self):
        self._thread.start()
        wait_until(lambda: _answers(self.url + "/healthz"), 30, what="the platform to answer")
        return self

    def __exit__(self, *exc):
        self.platform.stop()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "the platform did not stop"


def _answers(url: str) -> bool:
    try:
        get(url, 2)
        return True
    except OSError as e:
        return getattr(e, "code", None) is not None


def platform_config(**sections):
    """A stand-in for gpuledger.config.Config with the sections the telemetry parts read."""
    from gpuledger.config import Config

    cfg = Config()
    return SimpleNamespace(**{**vars(cfg), **sections}) if sections else cfg


# ---- telemetry batches ------------------------------------------------------------------------

def batch(n: int, rows: int = 3, host: str = "node-1"):
    """Batch ``n`` of a node: ``rows`` GPUs sampled at T0 + 10 n seconds."""
    from collector.batches import Batch
    from collector.records import GPU_SAMPLE_COLUMNS, GpuSample, as_row

    records = [GpuSample(ts=T0 + timedelta(seconds=10 * n), host=host, gpu_uuid=f"GPU-{g}",
                         gpu_index=g, util_gpu=float(n % 100), power_w=100.0 + g, source="nvml")
               for g in range(rows)]
    return Batch(f"{host}/gpu_samples/{n}", "gpu_samples", GPU_SAMPLE_COLUMNS,
                 [list(as_row(r)) for r in records])


def agent_batch(agent: int, round_: int, gpus: int = 8) -> tuple[str, bytes]:
    """One agent's sampling round as ``gpuledger collect`` pushes it: (batch id, gzip JSON)."""
    from collector.batches import Batch
    from collector.records import GPU_SAMPLE_COLUMNS, GpuSample, as_row

    host = f"agent-{agent:04d}"
    ts = T0 + timedelta(seconds=10 * round_)
    rows = [list(as_row(GpuSample(ts=ts, host=host, gpu_uuid=f"GPU-{agent:04d}-{g}", gpu_index=g, pool="load",
                                  util_gpu=float((agent + g + round_) % 100), power_w=250.0 + g, source="nvml")))
            for g in range(gpus)]
    batch = Batch(f"{host}/gpu_samples/{round_}", "gpu_samples", GPU_SAMPLE_COLUMNS, rows)
    return batch.id, gzip.compress(batch.to_json(), 1)


# ---- remote_write payloads, by an encoder independent of ours ---------------------------------
# Protobuf by the wire-format rules (varint keys, length-delimited messages, little-endian
# doubles) and snappy as literal-only blocks, which every snappy decoder must accept.

def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, wire: int, payload: bytes) -> bytes:
    key = varint(number << 3 | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


def label(name: str, value: str) -> bytes:
    return field(1, 2, field(1, 2, name.encode()) + field(2, 2, value.encode()))


def point(value: float, ts_ms: int) -> bytes:
    return field(2, 2, field(1, 1, struct.pack("<d", value)) + field(2, 0, varint(ts_ms)))


def series(labels: dict, points: list, exemplar: bool = False) -> bytes:
    body = b"".join(label(k, v) for k, v in labels.items())
    body += b"".join(point(v, t) for v, t in points)
    if exemplar:   # field 3 (Exemplar) must be skipped
        body += field(3, 2, label("trace_id", "abc") + field(2, 1, struct.pack("<d", 1.0)))
    return field(1, 2, body)


def write_request(*timeseries: bytes, metadata: bool = False) -> bytes:
    body = b"".join(timeseries)
    if metadata:   # field 3 (MetricMetadata) must be skipped
        body += field(3, 2, field(1, 0, varint(2)) + field(2, 2, b"DCGM_FI_DEV_GPU_UTIL"))
    return body


def snappy_literal(data: bytes) -> bytes:
    out = bytearray(varint(len(data)))
    for i in range(0, len(data), 60):
        chunk = data[i:i + 60]
        out.append((len(chunk) - 1) << 2)       # literal tag, length-1 in the upper 6 bits
        out += chunk
    return bytes(out)


# ---- the dashboard over HTTP ------------------------------------------------------------------

class HttpClient:
    """What ``dashboard.probe`` needs of Flask's test client (``get``/``post`` answering
    ``status_code`` and ``get_json``), over real HTTP."""

    def __init__(self, base: str, timeout_s: float = 300):
        import requests

        self.base, self.timeout_s, self.session = base, timeout_s, requests.Session()

    def get(self, path):
        return _Response(self.session.get(self.base + path, timeout=self.timeout_s))

    def post(self, path, data, content_type):
        return _Response(self.session.post(self.base + path, data=data, headers={"Content-Type": content_type},
                                           timeout=self.timeout_s))


class _Response:
    def __init__(self, response):
        self.status_code, self._response = response.status_code, response

    def get_json(self, silent=False):
        try:
            return self._response.json()
        except ValueError:
            if silent:
                return None
            raise


# ---- the CLI and the config schema, for the docs tests ----------------------------------------

def commands(parser: argparse.ArgumentParser, prefix: str = "gpuledger"):
    """(full command name, as "gpuledger alerts silence add", its parser) for every command that takes
    no subcommand."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from commands(sub, f"{prefix} {name}")


def long_options(parser: argparse.ArgumentParser):
    """A command's ``--options`` (but --help)."""
    for action in parser._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag != "--help":
                yield flag


def config_keys(cls, skip: tuple[str, ...] = (), seen: set | None = None):
    """Every field name of a config dataclass and of the dataclasses its fields hold, each class once."""
    seen = set() if seen is None else seen
    for name, hint in typing.get_type_hints(cls).items():
        if name in skip:
            continue
        yield name
        for candidate in (hint, *getattr(hint, "__args__", ())):
            if dataclasses.is_dataclass(candidate) and candidate not in seen:
                seen.add(candidate)
                yield from config_keys(candidate, skip, seen)


def self_signed_cert(where: Path) -> tuple[Path, Path]:
    """(certificate, key) PEM files of a self-signed certificate for 127.0.0.1, made here."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = where / "cert.pem", where / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class BearerJsonServer:
    """A loopback stand-in for an HTTPS API that answers ``GET path`` with ``document()`` only to
    ``Authorization: Bearer <token>`` (the kubelet's /pods, the API server's pod list), 401
    otherwise; ``asked`` records (path, Authorization) of every request. Its certificate is
    self-signed (``self.ca``: the file a client trusts)."""

    def __init__(self, path: str, token: str, document, where: Path):
        import http.server
        import ssl

        self.asked: list[tuple[str, str | None]] = []
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                auth = self.headers.get("Authorization")
                stand_in.asked.append((self.path, auth))
                ok = self.path == path and auth == f"Bearer {token}"
                body = document() if ok else b'{"kind":"Status","code":401}'
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.ca, key = self_signed_cert(where)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.ca, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
