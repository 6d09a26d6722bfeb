"""Derivation speed on 256 GPUs × 30 days at 15 s (~44 M samples) and the fleet's cloud bills for
those days (the simulator's FOCUS files, loaded as ``gpuledger ingest billing`` loads them, so the
derivation attributes them to GPUs as on a real hybrid fleet), in one run:

* the rollup + idle windows (gpu_minute, gpu_hour, idle_windows) next to a straightforward
  pandas implementation of the same rollup + idle windows (bench/pandas_reference.py, which
  tests/bench checks computes the same tables; goal: >= 10x faster);
* the complete derivation (also costs, attribution, spend, daily rollups, compliance; goal < 60 s),
  next to the same pandas reference;
* the incremental run after one more hour of samples arrives (goal < 2 s);
* the complete derivation next to what it took before idle windows were exact to the sample:
  the same run less the sample-exact idle work (idle segments + stitching, timed on their own)
  plus the minute-resolution idle query it replaced (bench/minute_idle_windows.sql, timed on the
  same store); goal: no more than 20 % slower;
* the complete derivation next to one plain ClickHouse scan of the same samples: ``GROUP BY``
  (GPU entity, minute) with ``avg`` of GPU utilization, memory utilization and power, written
  into a MergeTree table as the derivation writes its tables (the engine's own speed on this
  machine in this run); goal: no more than 3x the scan.
"""
from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow.parquet as pq

from bench import pandas_reference
from bench.common import bench_store, best_of, report, row, work_dir


def days_of(store, since, until) -> list:
    return [d for (d,) in store.rows("SELECT DISTINCT toDate(ts) AS d FROM gpu_samples WHERE d >= {a:Date} AND d <= {b:Date} "
                                     "ORDER BY d", {"a": since, "b": until})]


def rollup_and_idle(store, cfg, since, until) -> tuple[float, float]:
    """Seconds to recompute gpu_minute, gpu_hour and the idle windows of every day, as a rollup
    does; and of those, the seconds of the sample-exact idle work (segments and stitching)."""
    from ingest.rollup import configtables
    from ingest.rollup import run as derive

    days = days_of(store, since, until)
    params = {"max_gap_s": cfg.analytics.max_gap_s, "default_interval_s": cfg.analytics.default_interval_s}
    handles = derive.worker_handles(store, cfg.analytics.workers)
    idle = derive.idle_parameters(cfg)
    whole = dict.fromkeys(days)
    read = derive.sample_units(days, whole, derive.day_inputs(store, since, until))
    started = time.perf_counter()
    parts = derive.derive_minutes(handles, read, params, idle)
    derive.in_parallel(handles, derive.hour_units(days, whole),
                       lambda handle, unit: derive.derive_steps(handle, *unit, [derive.HOUR_STEP]))
    configtables.refresh(store, cfg)
    idle_started = time.perf_counter()
    derive.derive_idle_segments(handles, read, parts, idle)
    start = datetime.combine(days[0], datetime.min.time(), timezone.utc)
    derive.derive_idle_windows(store, cfg, start, datetime.combine(until + timedelta(days=1), datetime.min.time(), timezone.utc))
    finished = time.perf_counter()
    return finished - started, finished - idle_started


def minute_idle_windows(store, cfg, since, until) -> float:
    """Seconds the minute-resolution idle query (the before-figure) takes over the same days."""
    text = (Path(__file__).parent / "minute_idle_windows.sql").read_text()
    start = datetime.combine(since, datetime.min.time())
    params = {"from": start, "scan_from": start, "until": datetime.combine(until + timedelta(days=1), datetime.min.time()),
              "max_gap_minutes": cfg.analytics.idle_max_gap_minutes}
    started = time.perf_counter()
    store.scalar(f"SELECT count() FROM ({text})", params)
    return time.perf_counter() - started


SCAN_TABLE = """CREATE TABLE IF NOT EXISTS bench_minute_scan (host String, gpu_uuid String, mig_instance String,
    minute DateTime, util_gpu Nullable(Float64), util_mem Nullable(Float64), power_w Nullable(Float64))
ENGINE = MergeTree PARTITION BY toDate(minute) ORDER BY (host, gpu_uuid, mig_instance, minute)"""
SCAN = """INSERT INTO bench_minute_scan
SELECT host, gpu_uuid, mig_instance, toStartOfMinute(ts) AS minute, avg(util_gpu), avg(util_mem), avg(power_w)
FROM gpu_samples GROUP BY host, gpu_uuid, mig_instance, minute"""


def plain_scan(store) -> float:
    """Seconds of the best of two plain GROUP BY (GPU entity, minute) scans of every sample."""
    store.command(SCAN_TABLE)

    def once(_):
        store.command(SCAN)
    return best_of(2, once, setup=lambda: store.command("TRUNCATE TABLE bench_minute_scan"))


def run(quick: bool = False) -> list[dict]:
    import sim
    from gpuledger import config as configuration
    from gpuledger.demo import config_text
    from ingest.billing.load import ingest_billing
    from ingest.rollup.run import rollup
    from ingest.samples import ingest_samples

    gpus, days = (32, 3) if quick else (256, 30)
    end = datetime(2026, 11, 1, tzinfo=timezone.utc)
    work = work_dir("derive")
    fleet = sim.build_fleet(gpus=gpus, seed=11)
    files = sim.write_samples(fleet, work / "samples", days=days, interval_s=15, end=end)
    (work / "gpuledger.toml").write_text(config_text(sim.fleet_metadata(fleet)))
    cfg = configuration.load(str(work / "gpuledger.toml"), env={})
    store = bench_store("derive")
    ingest_samples(store, files[:-1], progress=lambda m: None)  # the last hour comes in later
    # the fleet's cloud bills for the same days, so the derivation attributes them to GPUs as it
    # does on a real hybrid fleet (billing_line_hour, gpu_cost_hour, the showback's gpu-time rows)
    bill_lines = ingest_billing(store, sim.write_billing(fleet, work / "billing", days=days, end=end),
                                progress=lambda m: None).rows
    last = pq.read_table(files[-1]).to_pandas()
    cut = last["ts"].max().floor("h")
    first_part, last_hour = last[last["ts"] < cut], last[last["ts"] >= cut]
    store.client.insert_df("gpu_samples", first_part)
    samples = store.scalar("SELECT count() FROM gpu_samples") + len(last_hour)

    now = end + timedelta(hours=1)
    since, until = (end - timedelta(days=days + 1)).date(), end.date()
    started = time.perf_counter()
    rollup(store, cfg, since=since, until=until, progress=lambda m: None, now=now)
    full = time.perf_counter() - started
    scan = plain_scan(store)
    rollup_idle, exact_idle = rollup_and_idle(store, cfg, since, until)
    minute_idle = minute_idle_windows(store, cfg, since, until)

    store.client.insert_df("gpu_samples", last_hour)
    started = time.perf_counter()
    report_inc = rollup(store, cfg, since=(end - timedelta(days=days + 1)).date(), until=end.date(), progress=lambda m: None, now=now)
    incremental = time.perf_counter() - started

    thresholds, rates, teams = pandas_reference.inputs(store)
    started = time.perf_counter()
    pandas_reference.rollup_and_idle(files, cfg.analytics, thresholds, rates, teams)
    pandas_s = time.perf_counter() - started
    attributed = store.scalar("SELECT count() FROM showback_focus_day WHERE x_AllocationMethod = 'gpu-time'")
    print(f"derive: {bill_lines:,} bill lines loaded; {attributed:,} showback rows of bills attributed by GPU time",
          file=sys.stderr)
    label = f"{gpus} GPUs × {days} d at 15 s ({samples / 1e6:.1f} M samples, {bill_lines:,} bill lines)"
    return [
        row(f"rollup + idle windows, {label} (ref: pandas)", rollup_idle, "s", pandas_s, ">= 10x pandas",
            higher_is_better=False),
        row(f"complete derivation, {label} (ref: pandas rollup + idle)", full, "s", pandas_s, "< 60 s",
            higher_is_better=False),
        row(f"incremental run after one more hour ({len(report_inc.days)} day recomputed), s", incremental, "s",
            full, "< 2 s", higher_is_better=False),
        row(f"complete derivation, sample-exact idle windows ({exact_idle:.1f} s) (ref: with minute idle windows "
            f"({minute_idle:.1f} s), before)", full, "s", full - exact_idle + minute_idle, "<= 1.2x before",
            higher_is_better=False),
        row("complete derivation (ref: one plain GROUP BY (GPU, minute) scan of the same samples with avg of "
            "util, memory and power)", full, "s", scan, "<= 3x scan (ratio: derivation / scan)"),
    ]


if __name__ == "__main__":
    import sys

    print(report(run(quick="--quick" in sys.argv)))
