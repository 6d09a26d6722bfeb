"""The dashboard under 50 concurrent users while a backfill runs (bounded, loopback only).

`gpuledger up` starts on a store whose samples and bills are loaded but not yet derived, so its
scheduler's first derive is a backfill of every day; 50 simulated users load pages (the router
and every callback of the page, as the browser does) meanwhile. Asserts that every request is
answered 200, that the load overlapped the backfill and that the backfill completes without error;
prints requests/s, p50 and p95. The speed target (issue #16: p95 under 1 s) is held by
``python3 -m bench --only dashboard_users``, which measures the same case next to a reference in
the same run: a timed assertion here fails on a slow machine whatever the code does.
"""
import json
import threading
import time
import urllib.request

from dashboard import ids, probe
from tests.helpers import HttpClient, Proc, free_port, gpuledger, percentile

USERS = 50
PAGES_PER_USER = 2


def health(url: str) -> dict:
    with urllib.request.urlopen(url + "/healthz", timeout=10) as response:
        return json.loads(response.read())


def test_dashboard_under_50_users_while_a_backfill_runs(tmp_path):
    store = tmp_path / "store"
    sim = tmp_path / "sim"
    assert gpuledger(store, "sim", "--out", str(sim), "--gpus", "32", "--days", "5").finish() == 0
    assert gpuledger(store, "ingest", "samples", str(sim / "samples")).finish() == 0
    assert gpuledger(store, "ingest", "billing", str(sim / "billing")).finish() == 0
    config = tmp_path / "gpuledger.toml"
    config.write_text((sim / "gpuledger.toml").read_text() + "\n[collector]\nlocal_sampling = false\n")
    port = free_port()
    up = Proc(["-m", "gpuledger", "--config", str(config), "--store", f"chdb://{store}", "up", "--host", "127.0.0.1",
               "--port", str(port), "--no-auth"])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                state = health(url)
                break
            except OSError:
                assert up.p.poll() is None and time.monotonic() < deadline, up.tail()
                time.sleep(0.2)
        assert state["parts"]["rollup"]["last_ok"] is None, "the backfill finished before the load started"
        deps = {page: probe.page_callbacks(HttpClient(url), page) for page in ids.PAGES}
        statuses, seconds, during_backfill = [], [], []
        lock = threading.Lock()

        def user(n: int):
            client = HttpClient(url)
            for k in range(PAGES_PER_USER):
                page = ids.PAGES[(n + k) % len(ids.PAGES)]
                path = "/" if page == "overview" else f"/{page}"
                calls = [probe.call_router(client, path, "?range=7d")]
                calls += [probe.call(client, page, dep, {"range": "7d"}) for dep in deps[page]]
                with lock:
                    statuses.extend(c.status for c in calls)
                    seconds.extend(c.seconds for c in calls)

        started = time.monotonic()
        threads = [threading.Thread(target=user, args=(n,)) for n in range(USERS)]
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            during_backfill.append(health(url)["parts"]["rollup"]["last_ok"] is None)
            time.sleep(0.5)
        elapsed = time.monotonic() - started
        deadline = time.monotonic() + 600
        while health(url)["parts"]["rollup"]["last_ok"] is None:
            assert time.monotonic() < deadline, "the backfill did not finish"
            time.sleep(1)
        final = health(url)
        print(f"\n{USERS} users × {PAGES_PER_USER} pages during a backfill: {len(statuses)} requests in {elapsed:.1f} s, "
              f"{len(statuses) / elapsed:.1f} requests/s, p50 {percentile(seconds, 50) * 1000:.0f} ms, "
              f"p95 {percentile(seconds, 95) * 1000:.0f} ms, "
              f"errors {sum(s != 200 for s in statuses)}; backfill still running during "
              f"{100 * sum(during_backfill) / max(len(during_backfill), 1):.0f}% of the load")
        assert statuses and all(s == 200 for s in statuses)
        assert any(during_backfill), "the load never overlapped the backfill"
        assert final["parts"]["rollup"]["last_error"] is None
        assert final["status"] == "ok"
    finally:
        up.stop()
