"""The store goes away mid-stream and comes back, across agent crashes: the stored counts are
exact — no loss, no duplicates.

The receiving end is a platform process (``platform_proc``) owning its own embedded store; the
agent (``agent_proc``) pushes batches to it through its spool. Sequence:

1. agent A1 ships rounds 0..39 while the platform is up; the platform is killed (-9) after a
   few batches; A1 keeps spooling and then dies hard (-9 equivalent) with batches unsent;
2. agent A2 replays A1's spool and samples rounds 40..69 while the platform is still down;
3. the platform restarts on the same store; A2 dies right after its 3rd batch is stored and
   before it is acknowledged;
4. agent A3 replays everything left (the stored-but-unacknowledged batch included), samples
   rounds 70..74 and drains.

Then every round 0..74 is stored exactly once for each GPU, in both tables.
"""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.telemetry.helpers import free_port, get, wait_until

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "INGEST_TOKEN": "outage-token", "PYTHONPATH": str(ROOT)}


class Proc:
    """A child process whose output lines are collected (and kept for failure messages)."""

    def __init__(self, *args: str):
        self.p = subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, env=ENV, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._q: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))

    def count(self, prefix: str) -> int:
        return sum(line.startswith(prefix) for line in list(self.lines))

    def wait(self, timeout: float = 120) -> int:
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise AssertionError("process did not finish:\n" + self.tail())

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(10)

    def tail(self) -> str:
        return "\n".join(self.lines[-40:])


def platform(store_dir: Path, port: int) -> Proc:
    proc = Proc("tests.telemetry.platform_proc", str(store_dir), str(port))
    url = f"http://127.0.0.1:{port}/healthz"

    def healthy():
        assert proc.p.poll() is None, "platform exited:\n" + proc.tail()
        try:
            return '"ok": true' in get(url, 2).replace('"ok":true', '"ok": true')
        except OSError:
            return False
    wait_until(healthy, 90, 0.3, "the platform to come up")
    return proc


def query(store_dir: Path, sql: str) -> list[list[str]]:
    out = subprocess.run([sys.executable, "-m", "gpuledger", "--store", f"chdb://{store_dir}", "query", sql,
                          "--format", "csv"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [line.split(",") for line in out.stdout.strip().splitlines()[1:]]


def test_outage_and_agent_crashes_lose_nothing_and_store_nothing_twice(tmp_path):
    store_dir, spool_dir, port = tmp_path / "store", tmp_path / "spool", free_port()
    url = f"http://127.0.0.1:{port}"
    procs: list[Proc] = []
    try:
        p1 = platform(store_dir, port)
        procs.append(p1)
        a1 = Proc("tests.telemetry.agent_proc", str(spool_dir), url, "0", "40", "--hard-exit")
        procs.append(a1)
        wait_until(lambda: a1.count("sent ") >= 6, 60, what="A1 to ship a few batches:\n" + a1.tail())
        p1.stop(signal.SIGKILL)                                    # the store goes away mid-stream
        assert a1.wait() == 137 and a1.count("spooled ") == 40 and "rounds done" in a1.lines, a1.tail()
        assert a1.count("sent ") < 80, "A1 shipped everything before the outage; the test proves nothing"

        a2 = Proc("tests.telemetry.agent_proc", str(spool_dir), url, "40", "30", "--die-after-send", "3")
        procs.append(a2)
        wait_until(lambda: "rounds done" in a2.lines, 60, what="A2's rounds:\n" + a2.tail())
        assert a2.count("sent ") == 0
        time.sleep(1.0)                                            # a few failed retries
        p2 = platform(store_dir, port)                             # the store comes back
        procs.append(p2)
        assert a2.wait() == 137 and a2.count("sent ") == 3, a2.tail()

        a3 = Proc("tests.telemetry.agent_proc", str(spool_dir), url, "70", "5")
        procs.append(a3)
        assert a3.wait() == 0 and "drained" in a3.lines, a3.tail()
        p2.stop()
        assert p2.p.returncode == 0, p2.tail()
    finally:
        for proc in procs:
            proc.stop(signal.SIGKILL)
    for table in ("gpu_samples", "gpu_processes"):
        rows = query(store_dir, f"SELECT count(), uniqExact(gpu_uuid, ts), uniqExact(ts), "
                                f"toUnixTimestamp(min(ts)), toUnixTimestamp(max(ts)) FROM {table}")
        assert rows == [["150", "150", "75", "1784000000", str(1784000000 + 740)]], (table, rows)
