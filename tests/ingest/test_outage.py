"""The store goes away mid-stream and comes back, across agent crashes: the stored counts are
exact — no loss, no duplicates.

The receiving end is a platform process (``tests/ingest/platform_proc.py``) owning its own
embedded store; the agent (``tests/agent_proc.py``) pushes batches to it through its spool. Sequence:

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

import time
from pathlib import Path

from tests.helpers import Proc, free_port, get, query, wait_until

TOKEN = {"GPULEDGER_INGEST_TOKEN": "outage-token"}


def agent(*args: str) -> Proc:
    return Proc(["-m", "tests.agent_proc", *args], TOKEN)


def platform(store_dir: Path, port: int) -> Proc:
    proc = Proc(["-m", "tests.ingest.platform_proc", str(store_dir), str(port)], TOKEN)
    url = f"http://127.0.0.1:{port}/healthz"

    def healthy():
        assert proc.p.poll() is None, "platform exited:\n" + proc.tail()
        try:
            return '"ok": true' in get(url, 2).replace('"ok":true', '"ok": true')
        except OSError:
            return False
    wait_until(healthy, 90, 0.3, "the platform to come up")
    return proc


def test_outage_and_agent_crashes_lose_nothing_and_store_nothing_twice(tmp_path):
    store_dir, spool_dir, port = tmp_path / "store", tmp_path / "spool", free_port()
    url = f"http://127.0.0.1:{port}"
    procs: list[Proc] = []
    try:
        p1 = platform(store_dir, port)
        procs.append(p1)
        a1 = agent(str(spool_dir), url, "0", "40", "--hard-exit")
        procs.append(a1)
        wait_until(lambda: a1.count("sent ", prefix=True) >= 6, 60, what="A1 to ship a few batches:\n" + a1.tail())
        p1.kill()                                                  # the store goes away mid-stream
        assert a1.finish(120) == 137 and a1.count("spooled ", prefix=True) == 40 and "rounds done" in a1.lines, a1.tail()
        assert a1.count("sent ", prefix=True) < 80, "A1 shipped everything before the outage; the test proves nothing"

        a2 = agent(str(spool_dir), url, "40", "30", "--die-after-send", "3")
        procs.append(a2)
        wait_until(lambda: "rounds done" in a2.lines, 60, what="A2's rounds:\n" + a2.tail())
        assert a2.count("sent ", prefix=True) == 0
        time.sleep(1.0)                                            # a few failed retries
        p2 = platform(store_dir, port)                             # the store comes back
        procs.append(p2)
        assert a2.finish(120) == 137 and a2.count("sent ", prefix=True) == 3, a2.tail()

        a3 = agent(str(spool_dir), url, "70", "5")
        procs.append(a3)
        assert a3.finish(120) == 0 and "drained" in a3.lines, a3.tail()
        assert p2.stop(30) == 0, p2.tail()
    finally:
        for proc in procs:
            proc.kill()
    for table in ("gpu_samples", "gpu_processes"):
        rows = [[str(v) for v in row.values()]
                for row in query(store_dir, f"SELECT count(), uniqExact(gpu_uuid, ts), uniqExact(ts), "
                                            f"toUnixTimestamp(min(ts)), toUnixTimestamp(max(ts)) FROM {table}")]
        assert rows == [["150", "150", "75", "1784000000", str(1784000000 + 740)]], (table, rows)
