"""Capacity figures for docs/deploy.md: disk per sample row and per 1,000 GPUs a day, measured on
the demo fleet's data (``sim``, the same generator as ``gpuledger demo``).

The simulated fleet's samples are loaded with ``ingest samples`` and derived with the
scheduler's code, the tables are merged (``OPTIMIZE ... FINAL``, as ClickHouse's background
merges do over time), and ``system.parts`` gives compressed and uncompressed bytes. Each figure's
reference is the uncompressed size measured in the same run, so the ratio is the compression
ratio. Per-1,000-GPU figures scale the measured bytes per row by one row per GPU (or MIG
instance) per sample interval: 86,400 / interval rows per GPU a day.

    python3 -m bench.bench_sizing [--quick]
"""
from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone

from bench.common import bench_store, report, row, work_dir

GPUS_PER_FLEET = 1000
TABLES = ("gpu_samples", "gpu_minute", "gpu_hour", "gpu_cost_hour", "idle_windows")


def measure(gpus: int, days: int, interval_s: int, seed: int = 7, derive_too: bool = True) -> dict:
    """Load ``days`` of a ``gpus``-GPU simulated fleet at ``interval_s``; sizes per table."""
    from gpuledger import config as configuration
    from gpuledger.demo import write_simulation
    from ingest.rollup.run import rollup
    from ingest.samples import ingest_samples

    end = datetime(2026, 3, 1, tzinfo=timezone.utc)
    work = work_dir("sizing")
    files = write_simulation(work, gpus=gpus, days=days, interval_s=interval_s, seed=seed, end=end,
                             progress=lambda m: None)
    store = bench_store(f"sizing_{interval_s}")
    ingest_samples(store, files["samples"], progress=lambda m: None)
    if derive_too:
        cfg = configuration.load(str(files["config"]), env={})
        rollup(store, cfg, since=(end - timedelta(days=days)).date(), until=end.date(), progress=lambda m: None,
               now=end)
    return sizes(store, TABLES, interval_s)


def sizes(store, tables, interval_s: int) -> dict:
    """Rows and compressed / uncompressed bytes of each of ``tables`` once merged (``OPTIMIZE ...
    FINAL``), from system.parts; with the GPU entities in gpu_samples and their days of samples."""
    out = {}
    for table in tables:
        store.command(f"OPTIMIZE TABLE {table} FINAL")
        rows, compressed, uncompressed = store.rows(
            "SELECT sum(rows), sum(data_compressed_bytes), sum(data_uncompressed_bytes) FROM system.parts "
            "WHERE database = currentDatabase() AND table = {t:String} AND active", {"t": table})[0]
        out[table] = {"rows": int(rows or 0), "compressed": int(compressed or 0), "uncompressed": int(uncompressed or 0)}
    out["entities"] = int(store.scalar("SELECT uniqExact(host, gpu_uuid, mig_instance) FROM gpu_samples"))
    out["entity_days"] = float(store.scalar(
        "SELECT sum(n) FROM (SELECT count() * {i:UInt32} / 86400 AS n FROM gpu_samples GROUP BY host, gpu_uuid, mig_instance)",
        {"i": interval_s}))
    return out


def run(quick: bool = False) -> list[dict]:
    gpus, days = (16, 1) if quick else (64, 3)
    results = []
    for interval_s in (10, 60):
        sizes = measure(gpus, days, interval_s, derive_too=interval_s == 10)
        s = sizes["gpu_samples"]
        per_row, per_row_raw = s["compressed"] / s["rows"], s["uncompressed"] / s["rows"]
        rows_day = GPUS_PER_FLEET * 86400 / interval_s
        label = f"{interval_s} s, {gpus} GPUs x {days} d sim, {s['rows']:,} rows"
        results.append(row(f"gpu_samples bytes/row on disk ({label})", per_row, "B/row", per_row_raw,
                           "ratio = compression ratio", higher_is_better=False))
        results.append(row(f"gpu_samples rows/day per 1,000 GPUs at {interval_s} s", rows_day, "rows/day", None,
                           "86,400 / interval per GPU"))
        results.append(row(f"gpu_samples disk/day per 1,000 GPUs at {interval_s} s", rows_day * per_row / 1e9, "GB/day",
                           rows_day * per_row_raw / 1e9, "ratio = compression ratio", higher_is_better=False))
        if interval_s == 10:
            for table in ("gpu_minute", "gpu_hour", "gpu_cost_hour", "idle_windows"):
                t = sizes[table]
                if not t["rows"]:
                    continue
                per_gpu_day = t["compressed"] / sizes["entity_days"]
                results.append(row(f"{table} disk/day per 1,000 GPUs ({t['rows']:,} rows measured)",
                                   per_gpu_day * GPUS_PER_FLEET / 1e6, "MB/day",
                                   t["uncompressed"] / sizes["entity_days"] * GPUS_PER_FLEET / 1e6,
                                   "kept beyond raw TTL", higher_is_better=False))
    return results


if __name__ == "__main__":
    print(report(run(quick="--quick" in sys.argv)))
