"""Receiver throughput: 500 agents pushing 64-row rounds to ``POST /api/v1/ingest/batch`` at once.

The receiver runs in its own process (its own embedded store, the pooled server of
``gpuledger up``). The 500 senders are one asyncio loop in this process, released together, each
pushing its rounds one after another (gzip JSON, a connection a push, as ``gpuledger collect
--push-url`` does). Real agents run on 500 machines; here their CPU is taken from the same 2 cores
as the receiver's, so the load generator writes pre-built requests on raw sockets, the cheapest
sender Python has. Printed:

* one lock: the receiver storing each request by itself, one at a time behind a lock
  (``insert_valid`` under a lock, as before issue #16): the reference "today";
* grouped: the receiver as it is (``ingest.group_commit``: requests arriving during an insert go
  into the next one), rows/s and p95 of a push, against one lock;
* the store path alone: the same requests, already checked, handed to ``GroupCommit`` by 500
  threads at once, against one raw ``Store.insert`` of all the rows into an empty table;
* the HTTP server alone: the same server with a handler that only reads the body and answers 200,
  against that raw insert: the ceiling of any receiver on this server and machine.

Goals (issue #16): grouped >= 5x one lock at no worse a p95; grouped >= 0.7x the raw insert.

    python3 -m bench.bench_receiver [--quick]
"""
from __future__ import annotations

import asyncio
import gzip
import multiprocessing
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

from bench.common import bench_store, report, row, work_dir
from collector.batches import Batch
from collector.records import GPU_SAMPLE_COLUMNS, GpuSample, as_row
from ingest.group_commit import GroupCommit, Request
from ingest.writer import split_valid

T0 = datetime(2026, 3, 2, tzinfo=timezone.utc)
AGENTS, GPUS = 500, 64
PATH = "/api/v1/ingest/batch"


def round_rows(agent: int, n: int) -> list[list]:
    ts = T0 + timedelta(seconds=10 * n)
    return [list(as_row(GpuSample(
        ts=ts, host=f"agent-{agent:04d}", gpu_uuid=f"GPU-{agent:04d}-{g:02d}", gpu_index=g, environment="onprem",
        cluster="berlin", pool="h100", model="NVIDIA H100 80GB HBM3", driver_version="590.48.01", cuda_version="13.1",
        util_gpu=float((agent + g + n) % 100), util_mem=float((g + n) % 50), mem_used_bytes=(g + 1) << 30,
        mem_total_bytes=80 << 30, power_w=300.0 + g, energy_j=1e6 + n * 3000.0, temperature_c=60.0,
        sm_clock_mhz=1980, mem_clock_mhz=2619, throttle_reasons=0, process_count=1, team="nlp", user="alice",
        job_id=f"job-{g}", source="nvml"))) for g in range(GPUS)]


def start_server(web):
    """``web`` served on a loopback port as ``gpuledger up`` serves it (``gpuledger.serving``, its
    default number of threads, no access log), in a daemon thread; returns the server."""
    from werkzeug.serving import WSGIRequestHandler

    from gpuledger.config import ServerConfig
    from gpuledger.serving import PooledWSGIServer

    class Handler(WSGIRequestHandler):
        def log_request(self, *args) -> None:  # as gpuledger up: no access log line per request
            pass

    server = PooledWSGIServer("127.0.0.1", 0, web, threads=ServerConfig().threads, handler=Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve(mode: str, ready, done) -> None:
    """The receiver (``mode`` "grouped", "one lock" or "http only") on a loopback port of a
    process of its own."""
    import logging

    from flask import Flask, request

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

    store = connect(f"chdb://{work_dir('receiver')}")
    prepare(store)
    web = Flask("bench_receiver")
    if mode == "http only":
        web.add_url_rule(PATH, "batch", lambda: (request.get_data(), "")[1], methods=["POST"])
    else:
        (OneLock if mode == "one lock" else Receiver)(store, auth=False).register(web)
    server = start_server(web)
    ready.put(server.server_port)
    done.get()
    ready.put(store.scalar("SELECT count() FROM gpu_samples"))
    server.shutdown()


async def _push_all(port: int, requests: list[list[bytes]]) -> tuple[float, list[float]]:
    """Every sender pushing its requests in turn, all released at once: (wall s, latencies)."""
    latencies: list[float] = []
    go = asyncio.Event()

    async def sender(mine: list[bytes]) -> None:
        await go.wait()
        for data in mine:
            began = time.perf_counter()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(data)
            await writer.drain()
            answer = await reader.read()
            writer.close()
            if not answer.startswith((b"HTTP/1.0 20", b"HTTP/1.1 20")):
                raise RuntimeError(f"a push was answered {answer[:200]!r}")
            latencies.append(time.perf_counter() - began)

    tasks = [asyncio.create_task(sender(mine)) for mine in requests]
    await asyncio.sleep(0.5)                  # every sender waiting at the start line
    began = time.perf_counter()
    go.set()
    await asyncio.gather(*tasks)
    return time.perf_counter() - began, latencies


def _request(port: int, body: bytes, path: str = PATH, content_type: str = "application/json",
             encoding: str = "gzip") -> bytes:
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
            f"Content-Encoding: {encoding}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


def burst(mode: str, bodies: list[list[bytes]]) -> tuple[float, list[float], int]:
    """(wall seconds, request latencies, rows stored) of every agent pushing its rounds at once."""
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=serve, args=(mode, ready, done), daemon=True)
    proc.start()
    try:
        port = ready.get(timeout=120)
        wall, latencies = asyncio.run(_push_all(port, [[_request(port, b) for b in mine] for mine in bodies]))
        done.put(True)
        stored = ready.get(timeout=120)
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
    return wall, latencies, stored


def store_path(batches: list[list[Batch]]) -> float:
    """Seconds for 500 threads to hand their checked requests to one ``GroupCommit`` at once."""
    store = bench_store("receiver_groups")
    types = store.column_types("gpu_samples")
    requests = [[Request(b.id, b.table, tuple(b.columns), *split_valid(types, b.columns, b.rows)) for b in mine]
                for mine in batches]
    groups = GroupCommit(store)
    start = threading.Barrier(len(requests) + 1)

    def agent(mine: list[Request]) -> None:
        start.wait()
        for request in mine:
            groups.store_request(request)

    threads = [threading.Thread(target=agent, args=(mine,)) for mine in requests]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    stored = store.scalar("SELECT count() FROM gpu_samples")
    if stored != sum(len(b.rows) for mine in batches for b in mine):
        raise RuntimeError(f"store path: {stored} rows stored")
    return wall


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def raw_rate(rows: list[tuple]) -> float:
    """rows/s of one raw insert of ``rows`` into an empty gpu_samples (best of 2)."""
    best = float("inf")
    for _ in range(2):
        store = bench_store("receiver_raw")
        began = time.perf_counter()
        store.insert("gpu_samples", rows, GPU_SAMPLE_COLUMNS)
        best = min(best, time.perf_counter() - began)
    return len(rows) / best


def run(quick: bool = False) -> list[dict]:
    rounds = 1 if quick else 3
    batches = [[Batch(f"agent-{a:04d}/gpu_samples/{n}", "gpu_samples", GPU_SAMPLE_COLUMNS, round_rows(a, n))
                for n in range(rounds)] for a in range(AGENTS)]
    bodies = [[gzip.compress(b.to_json(), 1) for b in mine] for mine in batches]
    total = AGENTS * rounds * GPUS
    figures = {}
    for mode in ("one lock", "grouped", "http only"):
        wall, latencies, stored = burst(mode, bodies)
        if mode != "http only" and stored != total:
            raise RuntimeError(f"{mode}: {stored} rows stored of {total}")
        figures[mode] = (total / wall, p95(latencies))
    raw = raw_rate([tuple(r) for mine in batches for b in mine for r in b.rows])
    groups = total / store_path(batches)
    (old, old_p95), (new, new_p95), (http, _) = figures["one lock"], figures["grouped"], figures["http only"]
    what = f"{AGENTS} agents x {rounds} round(s) of {GPUS} rows"
    return [
        row(f"receiver one lock (before), {what}", old, "rows/s", None, "reference"),
        row("receiver one lock (before): p95 of a push", old_p95, "s", None, "reference"),
        row(f"receiver grouped, {what}: vs one lock", new, "rows/s", old, ">= 5"),
        row("receiver grouped: p95 of a push vs one lock", new_p95, "s", old_p95, ">= 1", higher_is_better=False),
        row("receiver grouped vs one raw insert of the rows", new, "rows/s", raw, ">= 0.7"),
        row("store path: group commit of the checked requests vs raw", groups, "rows/s", raw, ">= 0.7"),
        row("HTTP server alone (handler reads the body) vs raw", http, "rows/s", raw, "ceiling"),
    ]


if __name__ == "__main__":
    print(report(run(quick="--quick" in sys.argv)))
