"""Load: the ingest endpoints of a real ``gpuledger up`` under a burst of 500 agents pushing a
round and 500 Prometheus servers remote-writing a scrape, all released at the same instant;
then 500 scrape targets all due at once. Senders retry 5xx and refused connections like the
real ones do. Printed: requests/s, p50/p95/max latency, retries, rows lost, rows doubled.
"""
from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.helpers import T0, TOKEN, agent_batch, percentile, query, series, start_up, up_config, write_request

AGENTS = 500
GPUS = 8
BURST_DEADLINE_S = 120
BATCH_HEADERS = {"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": f"Bearer {TOKEN}"}
RW_HEADERS = {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
              "X-Prometheus-Remote-Write-Version": "0.1.0", "Authorization": f"Bearer {TOKEN}"}


def remote_write_body(sender: int, gpus: int = 8) -> bytes:
    """A Prometheus remote_write 1.0 request (snappy protobuf) with one dcgm scrape of a node."""
    import cramjam

    ts_ms = int(T0.timestamp() * 1000)
    host = f"prom-node-{sender:04d}"
    timeseries = []
    for g in range(gpus):
        labels = {"UUID": f"GPU-rw-{sender:04d}-{g}", "Hostname": host, "gpu": str(g), "modelName": "NVIDIA H100 80GB HBM3"}
        timeseries.append(series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **labels}, [(float(g * 10), ts_ms)]))
        timeseries.append(series({"__name__": "DCGM_FI_DEV_POWER_USAGE", **labels}, [(300.0 + g, ts_ms)]))
    return bytes(cramjam.snappy.compress_raw(write_request(*timeseries)))


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


def figures(name: str, results: list[tuple[float, int, int]], wall: float) -> dict:
    latencies = [r[0] for r in results]
    out = {"requests": len(results), "wall_s": wall, "req_per_s": len(results) / wall,
           "p50_s": percentile(latencies, 50), "p95_s": percentile(latencies, 95), "max_s": max(latencies),
           "retries": sum(r[1] - 1 for r in results), "failed": sum(not 200 <= r[2] < 300 for r in results)}
    print(f"\n{name}: {out['requests']} requests in {wall:.2f} s = {out['req_per_s']:.0f} req/s; latency p50 "
          f"{out['p50_s'] * 1000:.0f} ms, p95 {out['p95_s'] * 1000:.0f} ms, max {out['max_s'] * 1000:.0f} ms; "
          f"{out['retries']} retries, {out['failed']} failed")
    return out


def test_burst_of_500_agents_and_500_remote_writes(tmp_path):
    store = tmp_path / "store"
    batches = [agent_batch(i, 0, GPUS)[1] for i in range(AGENTS)]
    writes = [remote_write_body(i, GPUS) for i in range(AGENTS)]
    proc, url = start_up(store, up_config(tmp_path / "gpuledger.toml"))
    try:
        start = threading.Barrier(2 * AGENTS + 1)
        deadline = time.monotonic() + BURST_DEADLINE_S

        def send(path, body, headers):
            start.wait()
            return post_until_stored(url + path, body, headers, deadline)

        with ThreadPoolExecutor(max_workers=2 * AGENTS) as pool:
            pushed = [pool.submit(send, "/api/v1/ingest/batch", b, BATCH_HEADERS) for b in batches]
            written = [pool.submit(send, "/api/v1/write", w, RW_HEADERS) for w in writes]
            start.wait()
            began = time.perf_counter()
            push_results = [f.result() for f in pushed]
            rw_results = [f.result() for f in written]
            wall = time.perf_counter() - began
        both = figures("ingest burst, 500 agent pushes + 500 remote_writes at once", push_results + rw_results, wall)
        figures("  of which agent batches (/api/v1/ingest/batch)", push_results, wall)
        figures("  of which remote_write (/api/v1/write)", rw_results, wall)
    finally:
        assert proc.stop() == 0, proc.tail()
    assert both["failed"] == 0, f"{both['failed']} requests were never stored"
    [counts] = query(store, "SELECT countIf(source = 'nvml') AS agent_rows, countIf(source = 'remote_write') AS rw_rows, "
                            "count() AS n, uniqExact(host, gpu_uuid, ts) AS distinct_rows FROM gpu_samples")
    expected = 2 * AGENTS * GPUS
    lost, doubled = expected - counts["distinct_rows"], counts["n"] - counts["distinct_rows"]
    print(f"  rows expected {expected}, stored {counts['n']}: rows lost = {lost}, rows doubled = {doubled}")
    assert (counts["agent_rows"], counts["rw_rows"]) == (AGENTS * GPUS, AGENTS * GPUS)
    assert lost == 0 and doubled == 0
    assert both["p95_s"] < 60


class Targets(ThreadingHTTPServer):
    """500 agents' /metrics on one loopback server: /metrics/<n> is agent n's last round."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, agents: int):
        self.texts = {n: self.exposition(n) for n in range(agents)}
        self.hits: dict[int, int] = {}
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), self.Handler)

    @staticmethod
    def exposition(n: int) -> str:
        ts_ms = 1_784_000_000_000
        lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
        lines += [f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-scrape-{n:04d}-{g}",Hostname="scrape-node-{n:04d}"}} '
                  f"{(n + g) % 100} {ts_ms}" for g in range(GPUS)]
        return "\n".join(lines) + "\n"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            n = int(self.path.rsplit("/", 1)[1])
            with self.server.lock:
                self.server.hits[n] = self.server.hits.get(n, 0) + 1
            body = self.server.texts[n].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass


def test_500_scrape_targets_due_at_once_are_all_scraped(tmp_path):
    targets = Targets(AGENTS)
    threading.Thread(target=targets.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{targets.server_address[1]}/metrics"
    scrape = [{"name": f"node-{n:04d}", "url": f"{base}/{n}", "format": "dcgm", "interval_s": 5}
              for n in range(AGENTS)]
    store = tmp_path / "store"
    began = time.perf_counter()
    proc, _ = start_up(store, up_config(tmp_path / "gpuledger.toml", scrape=scrape))
    try:
        deadline = time.monotonic() + 30
        while len(targets.hits) < AGENTS and time.monotonic() < deadline and proc.p.poll() is None:
            time.sleep(0.1)
        wall = time.perf_counter() - began
        time.sleep(2)                                   # let the last inserts finish
    finally:
        assert proc.stop() == 0, proc.tail()
        targets.shutdown()
    missed = sum("was missed by" in line for line in proc.lines)
    scraped = len(targets.hits)
    print(f"\nscrape burst: {scraped}/{AGENTS} targets scraped within {wall:.1f} s of start "
          f"({sum(targets.hits.values())} scrapes, {missed} scheduled scrapes skipped as missed)")
    [counts] = query(store, "SELECT count() AS n, uniqExact(host, gpu_uuid, ts) AS distinct_rows, uniqExact(host) AS hosts "
                            "FROM gpu_samples")
    print(f"  rows: {counts['n']} stored, {counts['distinct_rows']} distinct, from {counts['hosts']} hosts; "
          f"rows doubled = {counts['n'] - counts['distinct_rows']}")
    assert scraped == AGENTS, f"{AGENTS - scraped} of {AGENTS} targets were never scraped in {wall:.0f} s"
    assert counts["hosts"] == AGENTS and counts["distinct_rows"] == AGENTS * GPUS
    assert counts["n"] == counts["distinct_rows"]
