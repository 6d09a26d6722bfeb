"""Receiver throughput: 500 agents pushing 64-row rounds to ``POST /api/v1/ingest/batch`` at once.

The receiver runs in its own process (its own embedded store, werkzeug's threaded server, as in
``gpuledger up``); 500 sender threads in this one are released together and each pushes its
rounds one after another (gzip JSON, as ``gpuledger collect --push-url`` does). Printed for both:

* grouped: the receiver as it is (``ingest.group_commit``: requests arriving during an insert go
  into the next one);
* one lock: the same receiver storing each request by itself, one at a time behind a lock
  (``insert_valid`` under a lock, as before issue #16): the reference "today";

rows/s (rows stored / wall time of the burst) and p95 of a request's answer. Reference for the
grouped rows/s: one raw ``client.insert`` of all the burst's rows into an empty table of an
embedded store. Goals: grouped >= 5x one lock at no worse a p95; grouped >= 0.7x the raw insert.

    python3 -m bench.bench_receiver [--quick]
"""
from __future__ import annotations

import gzip
import multiprocessing
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime, timedelta, timezone

from bench.common import bench_store, report, row
from collector.batches import Batch
from collector.records import GPU_SAMPLE_COLUMNS, GpuSample, as_row

T0 = datetime(2026, 3, 2, tzinfo=timezone.utc)
AGENTS, GPUS = 500, 64


def round_rows(agent: int, n: int) -> list[list]:
    ts = T0 + timedelta(seconds=10 * n)
    return [list(as_row(GpuSample(
        ts=ts, host=f"agent-{agent:04d}", gpu_uuid=f"GPU-{agent:04d}-{g:02d}", gpu_index=g, environment="onprem",
        cluster="berlin", pool="h100", model="NVIDIA H100 80GB HBM3", driver_version="590.48.01", cuda_version="13.1",
        util_gpu=float((agent + g + n) % 100), util_mem=float((g + n) % 50), mem_used_bytes=(g + 1) << 30,
        mem_total_bytes=80 << 30, power_w=300.0 + g, energy_j=1e6 + n * 3000.0, temperature_c=60.0,
        sm_clock_mhz=1980, mem_clock_mhz=2619, throttle_reasons=0, process_count=1, team="nlp", user="alice",
        job_id=f"job-{g}", source="nvml"))) for g in range(GPUS)]


def serve(mode: str, ready, done) -> None:
    """The receiver (``mode`` "grouped" or "one lock") on a loopback port of a process of its own."""
    import logging

    from flask import Flask
    from werkzeug.serving import ThreadedWSGIServer

    from ingest.receiver import Receiver
    from ingest.schema import prepare
    from ingest.store import connect
    from ingest.writer import insert_valid

    logging.disable(logging.WARNING)

    class OneLock(Receiver):
        """The receiver before group commit: each request's own insert, one at a time."""
        _lock = threading.Lock()

        def store_rows(self, id, table, columns, rows, now):
            with self._lock:
                return insert_valid(self.store, table, columns, rows, id, now)

    class Server(ThreadedWSGIServer):
        request_queue_size = 1024              # 500 senders connect at once

    store = connect(f"chdb://{tempfile.mkdtemp(prefix='gpuledger-bench-receiver-')}")
    prepare(store)
    web = Flask("bench_receiver")
    (OneLock if mode == "one lock" else Receiver)(store, auth=False).register(web)
    server = Server("127.0.0.1", 0, web)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ready.put(server.server_port)
    done.get()
    ready.put(store.scalar("SELECT count() FROM gpu_samples"))
    server.shutdown()


def burst(mode: str, bodies: list[list[bytes]]) -> tuple[float, list[float], int]:
    """(wall seconds, request latencies, rows stored) of every agent pushing its rounds at once."""
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=serve, args=(mode, ready, done), daemon=True)
    proc.start()
    try:
        url = f"http://127.0.0.1:{ready.get(timeout=120)}/api/v1/ingest/batch"
        latencies: list[float] = []
        failures: list[str] = []
        start = threading.Barrier(len(bodies) + 1)

        def agent(rounds: list[bytes]) -> None:
            start.wait()
            for body in rounds:
                began = time.perf_counter()
                req = urllib.request.Request(url, data=body, method="POST", headers={
                    "Content-Type": "application/json", "Content-Encoding": "gzip"})
                try:
                    with urllib.request.urlopen(req, timeout=300) as answer:
                        answer.read()
                except OSError as e:
                    failures.append(str(e))
                latencies.append(time.perf_counter() - began)

        threads = [threading.Thread(target=agent, args=(b,)) for b in bodies]
        for t in threads:
            t.start()
        start.wait()
        began = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - began
        done.put(True)
        stored = ready.get(timeout=120)
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
    if failures:
        raise RuntimeError(f"{mode}: {len(failures)} pushes failed, first: {failures[0]}")
    return wall, latencies, stored


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def raw_rate(rows: list[tuple]) -> float:
    """rows/s of one raw insert of ``rows`` into an empty gpu_samples (best of 2)."""
    best = float("inf")
    for _ in range(2):
        store = bench_store("receiver_raw")
        began = time.perf_counter()
        store.client.insert("gpu_samples", rows, column_names=list(GPU_SAMPLE_COLUMNS))
        best = min(best, time.perf_counter() - began)
    return len(rows) / best


def run(quick: bool = False) -> list[dict]:
    rounds = 1 if quick else 3
    batches = [[Batch(f"agent-{a:04d}/gpu_samples/{n}", "gpu_samples", GPU_SAMPLE_COLUMNS, round_rows(a, n))
                for n in range(rounds)] for a in range(AGENTS)]
    bodies = [[gzip.compress(b.to_json(), 1) for b in mine] for mine in batches]
    total = AGENTS * rounds * GPUS
    figures = {}
    for mode in ("one lock", "grouped"):
        wall, latencies, stored = burst(mode, bodies)
        if stored != total:
            raise RuntimeError(f"{mode}: {stored} rows stored of {total}")
        figures[mode] = (total / wall, p95(latencies))
    raw = raw_rate([tuple(r) for mine in batches for b in mine for r in b.rows])
    (old, old_p95), (new, new_p95) = figures["one lock"], figures["grouped"]
    what = f"{AGENTS} agents x {rounds} round(s) of {GPUS} rows"
    return [
        row(f"receiver one lock (before), {what}", old, "rows/s", None, "reference"),
        row("receiver one lock (before): p95 of a push", old_p95, "s", None, "reference"),
        row(f"receiver grouped, {what}: vs one lock", new, "rows/s", old, ">= 5"),
        row("receiver grouped: p95 of a push vs one lock", new_p95, "s", old_p95, ">= 1", higher_is_better=False),
        row("receiver grouped vs one raw insert of the rows", new, "rows/s", raw, ">= 0.7"),
    ]


if __name__ == "__main__":
    print(report(run(quick="--quick" in sys.argv)))
