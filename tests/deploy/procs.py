"""Running real gpuledger processes for the load and fault tests: the CLI in subprocesses, each
owning its own embedded store directory (chDB allows one per process), loopback only.

After a process stops, ``query(store_dir, sql)`` reads its store through ``gpuledger query`` in a
fresh process, so the counts come from the store itself.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "load-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "GPULEDGER_INGEST_TOKEN": TOKEN, **extra}


class Proc:
    """A child process whose output lines are kept (for waits and failure messages)."""

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

    def count(self, text: str) -> int:
        return sum(text in line for line in list(self.lines))

    def wait_for(self, text: str, n: int = 1, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while self.count(text) < n:
            if self.p.poll() is not None:
                self._reader.join(2)
                if self.count(text) >= n:
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
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout_s)
        finally:
            self._reader.join(5)

    def finish(self, timeout_s: float = 300) -> int:
        rc = self.p.wait(timeout_s)
        self._reader.join(5)
        return rc

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.lines[-n:])


def gpuledger(store_dir: Path, *args: str, config: Path | None = None, extra_env: dict | None = None) -> Proc:
    cfg = ["--config", str(config)] if config else []
    return Proc(["-m", "gpuledger", *cfg, "--store", f"chdb://{store_dir}", *args], extra_env)


def query(store_dir: Path, sql: str) -> list[dict]:
    """Rows of ``sql`` against a store no process holds (``gpuledger query --format json``)."""
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


def start_up(store_dir: Path, config: Path, extra_env: dict | None = None, timeout_s: float = 90) -> tuple[Proc, str]:
    port = free_port()
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


# ---- what agents and Prometheus send -------------------------------------------------------

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)


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


def remote_write_body(sender: int, gpus: int = 8) -> bytes:
    """A Prometheus remote_write 1.0 request (snappy protobuf) with one dcgm scrape of a node."""
    import cramjam

    from tests.collector.test_remote_write import series, write_request

    ts_ms = int(T0.timestamp() * 1000)
    host = f"prom-node-{sender:04d}"
    timeseries = []
    for g in range(gpus):
        labels = {"UUID": f"GPU-rw-{sender:04d}-{g}", "Hostname": host, "gpu": str(g), "modelName": "NVIDIA H100 80GB HBM3"}
        timeseries.append(series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **labels}, [(float(g * 10), ts_ms)]))
        timeseries.append(series({"__name__": "DCGM_FI_DEV_POWER_USAGE", **labels}, [(300.0 + g, ts_ms)]))
    return bytes(cramjam.snappy.compress_raw(write_request(*timeseries)))


BATCH_HEADERS = {"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": f"Bearer {TOKEN}"}
RW_HEADERS = {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
              "X-Prometheus-Remote-Write-Version": "0.1.0", "Authorization": f"Bearer {TOKEN}"}


def post_until_stored(url: str, body: bytes, headers: dict, deadline: float) -> tuple[float, int, int]:
    """POST like an agent or Prometheus: retry 5xx and connection errors until a 2xx.

    Returns (seconds from the first try to the stored answer, tries, final status)."""
    started, tries = time.perf_counter(), 0
    while True:
        tries += 1
        try:
            request = urllib.request.Request(url, data=body, headers=headers, method="POST")
            with urllib.request.urlopen(request, timeout=30) as response:
                return time.perf_counter() - started, tries, response.status
        except urllib.error.HTTPError as e:
            if e.code < 500:
                return time.perf_counter() - started, tries, e.code
        except OSError:
            pass
        if time.monotonic() > deadline:
            return time.perf_counter() - started, tries, 0
        time.sleep(min(0.05 * tries, 0.5))
