"""Write-path throughput: rows/s through our writers vs a raw insert of the same rows.

Rows are agent-shaped ``gpu_samples`` (all 41 columns, a 64-GPU node's rounds). Each figure
has its reference measured in the same run, into a fresh database of the same embedded store:

* ``Writer``: ``ingest.writer.Writer`` (buffering, tuple conversion, a deduplication token
  digested from the rows) vs ``client.insert`` of the same tuples in the same batch sizes;
* spool + shipper: what the agent does per round — ``Spool.append`` (JSON encoding, CRC,
  write, fsync), then ``Shipper.ship`` (read back, decode, insert with the batch id as
  token, fsynced ack) — vs ``client.insert`` of the same batches.

Goal for both: >= 0.7 of raw.

    python3 -m bench.bench_writer [--quick]
"""
from __future__ import annotations

import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

from bench.common import bench_store, report, row
from collector.batches import Batch
from collector.records import GPU_SAMPLE_COLUMNS, GpuSample, as_row
from collector.shipper import Shipper
from collector.spool import Spool
from ingest.writer import StoreDestination, Writer

T0 = datetime(2026, 3, 2, tzinfo=timezone.utc)


def rounds(count: int, gpus: int) -> list[list[tuple]]:
    out = []
    for r in range(count):
        ts = T0 + timedelta(seconds=10 * r)
        out.append([as_row(GpuSample(
            ts=ts, host="bench-node", gpu_uuid=f"GPU-{g:04d}", gpu_index=g, environment="onprem",
            cluster="berlin", pool="h100", model="NVIDIA H100 80GB HBM3", driver_version="590.48.01",
            cuda_version="13.1", util_gpu=float((r * 7 + g) % 100), util_mem=float((r + g) % 50),
            mem_used_bytes=(g + 1) << 30, mem_total_bytes=80 << 30, power_w=300.0 + g, energy_j=1e6 + r * 3000.0,
            temperature_c=60.0, sm_clock_mhz=1980, mem_clock_mhz=2619, throttle_reasons=0,
            ecc_corrected_volatile=0, ecc_uncorrected_volatile=0, ecc_corrected_aggregate=0,
            ecc_uncorrected_aggregate=0, process_count=1, team="nlp", user="alice", job_id=f"job-{g}",
            source="nvml")) for g in range(gpus)])
    return out


def timed(func) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def raw(store, batches) -> None:
    for rows in batches:
        store.client.insert("gpu_samples", rows, column_names=list(GPU_SAMPLE_COLUMNS))


def through_writer(store, batches) -> None:
    writer = Writer(store, "gpu_samples", GPU_SAMPLE_COLUMNS, batch_rows=len(batches[0]))
    for rows in batches:
        writer.add_many(rows)
    writer.flush()


def through_spool(store, batches) -> None:
    with tempfile.TemporaryDirectory(prefix="gpuledger-bench-spool-") as d:
        spool = Spool(d)
        shipper = Shipper(spool, StoreDestination(lambda: store))
        for n, rows in enumerate(batches):
            spool.append(Batch(f"bench-node/gpu_samples/{n}", "gpu_samples", GPU_SAMPLE_COLUMNS,
                               [list(r) for r in rows]))
            shipper.ship()
        spool.close()


def best(repeat: int, make, name: str, batches) -> float:
    times = []
    for _ in range(repeat):
        store = bench_store(name)
        times.append(timed(lambda store=store: make(store, batches)))
        assert store.scalar("SELECT count() FROM gpu_samples") == sum(map(len, batches))
    return min(times)


def run(quick: bool = False) -> list[dict]:
    count, gpus, repeat = (20, 64, 2) if quick else (100, 64, 3)
    agent = rounds(count, gpus)                            # one batch per 64-GPU round
    big = [sum(agent[i:i + 20], []) for i in range(0, count, 20)]   # 1,280-row batches
    n_agent, n_big = count * gpus, count * gpus
    results = []
    for label, batches, n in (("64-row rounds", agent, n_agent), ("1,280-row batches", big, n_big)):
        ref = n / best(repeat, raw, "raw", batches)
        results.append(row(f"Writer, {label}", n / best(repeat, through_writer, "writer", batches), "rows/s",
                           ref, ">= 0.7"))
        results.append(row(f"spool+shipper (fsync), {label}", n / best(repeat, through_spool, "spool", batches),
                           "rows/s", ref, ">= 0.7"))
    return results


if __name__ == "__main__":
    print(report(run(quick="--quick" in sys.argv)))
