"""Derivation speed on 256 GPUs × 30 days at 15 s (~44 M samples), in one run:

* the rollup + idle windows (gpu_minute, gpu_hour, idle_windows) next to a straightforward
  pandas implementation of the same rollup + idle windows (goal: >= 10x faster);
* the complete derivation (also costs, attribution, spend, daily rollups, compliance; goal < 60 s);
* the incremental run after one more hour of samples arrives (goal < 2 s).
"""
from __future__ import annotations

import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from bench.common import bench_store, report, row

PANDAS_COLUMNS = ["ts", "host", "gpu_uuid", "mig_instance", "util_gpu", "util_mem", "process_count", "power_w"]


def pandas_rollup_and_idle(files: list[Path], max_gap_s=300, default_s=60, idle_pct=5.0, min_minutes=15, gap_minutes=2):
    """The same semantics as sql/analytics/minute.sql + idle.sql, written plainly in pandas."""
    minutes = []
    for path in files:
        df = pq.read_table(path, columns=PANDAS_COLUMNS).to_pandas()
        df["t"] = df["ts"].astype("int64") / 1e3 if df["ts"].dtype.unit == "ms" else df["ts"].astype("int64") / 1e9
        df = df.sort_values(["host", "gpu_uuid", "mig_instance", "t"])
        grp = df.groupby(["host", "gpu_uuid", "mig_instance"], sort=False)["t"]
        nxt, prv = grp.shift(-1) - df["t"], df["t"] - grp.shift(1)
        df["hold"] = np.where(nxt <= max_gap_s, nxt, np.where(prv <= max_gap_s, prv, default_s))
        df["minute"] = (df["t"] // 60).astype("int64")
        df["held"] = df["process_count"].fillna(0) > 0
        df["ug"] = df["util_gpu"] * df["hold"]
        df["um"] = df["util_mem"] * df["hold"]
        df["energy"] = df["power_w"] * df["hold"]
        agg = df.groupby(["host", "gpu_uuid", "mig_instance", "minute"], sort=False).agg(
            covered=("hold", "sum"), ug=("ug", "sum"), um=("um", "sum"), energy=("energy", "sum"), held=("held", "max"))
        minutes.append(agg.reset_index())
    m = pd.concat(minutes, ignore_index=True)
    hours = m.assign(hour=m["minute"] // 60).groupby(["host", "gpu_uuid", "mig_instance", "hour"]).agg(
        covered=("covered", "sum"), ug=("ug", "sum"), energy=("energy", "sum"))
    m = m[m["covered"] >= 30].sort_values(["host", "gpu_uuid", "mig_instance", "minute"])
    m["idle"] = (m["ug"] / m["covered"] < idle_pct) & (m["um"] / m["covered"] < idle_pct)
    key = m["host"] + "|" + m["gpu_uuid"] + "|" + m["mig_instance"]
    m["rank"] = m.groupby(key).cumcount()
    idle = m[m["idle"]].copy()
    ikey = key[m["idle"]]
    prev_rank = idle.groupby(ikey)["rank"].shift(1)
    prev_min = idle.groupby(ikey)["minute"].shift(1)
    prev_held = idle.groupby(ikey)["held"].shift(1)
    new = prev_rank.isna() | (idle["rank"] - prev_rank != 1) | (idle["minute"] - prev_min > gap_minutes + 1) | (idle["held"] != prev_held)
    idle["run"] = new.groupby(ikey).cumsum()
    windows = idle.groupby([ikey, idle["run"]]).agg(start=("minute", "min"), end=("minute", "max"))
    windows = windows[(windows["end"] + 1 - windows["start"]) >= min_minutes]
    return len(hours), len(windows)


def rollup_and_idle(store, cfg, since, until) -> float:
    """Seconds to recompute gpu_minute, gpu_hour and the idle windows of every day, as derive does."""
    from ingest.analytics import configtables
    from ingest.analytics.derive import derive_idle_windows, in_parallel, rollup_day

    days = [d for (d,) in store.rows("SELECT DISTINCT toDate(ts) AS d FROM gpu_samples WHERE d >= {a:Date} AND d <= {b:Date} "
                                     "ORDER BY d", {"a": since, "b": until})]
    params = {"max_gap_s": cfg.analytics.max_gap_s, "default_interval_s": cfg.analytics.default_interval_s}
    handles = [store] + [store.clone() for _ in range(cfg.analytics.workers - 1)]
    started = time.perf_counter()
    in_parallel(handles, days, lambda handle, day: rollup_day(handle, day, params))
    configtables.refresh(store, cfg)
    start = datetime.combine(days[0], datetime.min.time(), timezone.utc)
    derive_idle_windows(store, cfg, start, datetime.combine(until + timedelta(days=1), datetime.min.time(), timezone.utc))
    seconds = time.perf_counter() - started
    for handle in handles[1:]:
        handle.close()
    return seconds


def run(quick: bool = False) -> list[dict]:
    from collector import sim
    from gpuledger import config as configuration
    from gpuledger.demo import config_text
    from ingest.analytics.derive import derive
    from ingest.samples import ingest_samples

    gpus, days = (32, 3) if quick else (256, 30)
    end = datetime(2026, 11, 1, tzinfo=timezone.utc)
    work = Path(tempfile.mkdtemp(prefix="gpuledger-bench-derive-"))
    fleet = sim.build_fleet(gpus=gpus, seed=11)
    files = sim.write_samples(fleet, work / "samples", days=days, interval_s=15, end=end)
    (work / "gpuledger.toml").write_text(config_text(sim.fleet_metadata(fleet)))
    cfg = configuration.load(str(work / "gpuledger.toml"), env={})
    store = bench_store("derive")
    ingest_samples(store, files[:-1], progress=lambda m: None)  # the last hour comes in later
    last = pq.read_table(files[-1]).to_pandas()
    cut = last["ts"].max().floor("h")
    first_part, last_hour = last[last["ts"] < cut], last[last["ts"] >= cut]
    store.client.insert_df("gpu_samples", first_part)
    samples = store.scalar("SELECT count() FROM gpu_samples") + len(last_hour)

    now = end + timedelta(hours=1)
    since, until = (end - timedelta(days=days + 1)).date(), end.date()
    started = time.perf_counter()
    derive(store, cfg, since=since, until=until, progress=lambda m: None, now=now)
    full = time.perf_counter() - started
    rollup_idle = rollup_and_idle(store, cfg, since, until)

    store.client.insert_df("gpu_samples", last_hour)
    started = time.perf_counter()
    report_inc = derive(store, cfg, since=(end - timedelta(days=days + 1)).date(), until=end.date(), progress=lambda m: None, now=now)
    incremental = time.perf_counter() - started

    started = time.perf_counter()
    pandas_rollup_and_idle(files)
    pandas_s = time.perf_counter() - started
    label = f"{gpus} GPUs × {days} d at 15 s ({samples / 1e6:.1f} M samples)"
    return [
        row(f"rollup + idle windows, {label} (ref: pandas)", rollup_idle, "s", pandas_s, ">= 10x pandas",
            higher_is_better=False),
        row(f"complete derivation, {label}", full, "s", None, "< 60 s", higher_is_better=False),
        row(f"incremental run after one more hour ({len(report_inc.days)} day recomputed), s", incremental, "s",
            full, "< 2 s", higher_is_better=False),
    ]


if __name__ == "__main__":
    import sys

    print(report(run(quick="--quick" in sys.argv)))
