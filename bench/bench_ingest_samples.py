"""``gpuledger ingest samples`` rate on a 2M-row Parquet file vs ClickHouse reading it itself.

Reference: ``INSERT INTO gpu_samples SELECT * FROM file(path, Parquet)`` into an empty table of
the same store, in the same run. Goal: ours >= 0.7 of the reference rate.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import bench_store, best_of, report, row, work_dir
from collector.records import GPU_SAMPLE_COLUMNS


def make_parquet(path: Path, rows: int, seed: int = 1) -> Path:
    """Realistic sample rows: 256 GPUs on 32 hosts at 15 s, all telemetry columns filled."""
    rng = np.random.default_rng(seed)
    gpus = 256
    steps = rows // gpus + 1
    gpu = np.tile(np.arange(gpus), steps)[:rows]
    step = np.repeat(np.arange(steps), gpus)[:rows]
    ts = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(step * 15, unit="s")
    util = np.clip(rng.normal(60, 25, rows), 0, 100).astype("float32")
    frame = pd.DataFrame({
        "ts": ts.astype("datetime64[ms, UTC]"),
        "host": np.array([f"dgx-{i:03d}" for i in range(gpus // 8)])[gpu // 8],
        "gpu_uuid": np.array([f"GPU-{i:08x}-1111-2222-3333-444455556666" for i in range(gpus)])[gpu],
        "environment": "onprem", "region": "ams1", "cluster": "train", "pool": "h100",
        "gpu_index": (gpu % 8).astype("uint16"), "model": "NVIDIA H100 80GB HBM3",
        "driver_version": "550.54.15", "cuda_version": "12.4",
        "util_gpu": util, "util_mem": (util * 0.6).astype("float32"),
        "mem_used_bytes": (util.astype("uint64") * 800_000_000).astype("uint64"),
        "mem_total_bytes": np.full(rows, 85_899_345_920, dtype="uint64"),
        "power_w": (80 + util * 6).astype("float32"),
        "energy_j": (step * 15.0 * 400).astype("float64"),
        "temperature_c": (30 + util / 3).astype("float32"),
        "sm_clock_mhz": np.full(rows, 1980, dtype="uint32"),
        "xid_count": np.zeros(rows, dtype="uint32"),
        "process_count": (util > 5).astype("uint16"),
        "team": np.array(["vision", "nlp", "speech", "ranking"])[gpu % 4],
        "source": "import",
    })
    assert set(frame.columns) <= set(GPU_SAMPLE_COLUMNS)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, compression="zstd")
    return path


def run(quick: bool = False) -> list[dict]:
    from ingest.samples import ingest_samples

    rows = 200_000 if quick else 2_000_000
    work = work_dir("samples")
    path = make_parquet(work / "samples.parquet", rows)
    repeat = 2 if quick else 3

    def ours(store):
        ingest_samples(store, [path], progress=lambda m: None)

    def clickhouse(store):
        store.command("INSERT INTO gpu_samples SELECT * FROM file({p:String}, Parquet)", parameters={"p": str(path)})

    ref = best_of(repeat, clickhouse, lambda: bench_store("ref"))
    ours_s = best_of(repeat, ours, lambda: bench_store("ours"))
    return [row(f"ingest samples, {rows:,}-row Parquet", rows / ours_s, "rows/s", rows / ref, ">= 0.7 of ClickHouse file()")]


if __name__ == "__main__":
    import sys

    print(report(run(quick="--quick" in sys.argv)))
