"""Idle runs found straight from samples, as the platform defines idle windows (DESIGN.md
"Idle window"), for samples without gaps other than stopped instances."""
from __future__ import annotations

import pandas as pd

THRESHOLD = 5.0
MIN_LENGTH = pd.Timedelta(minutes=15)
KEY = ["host", "gpu_uuid", "mig_instance"]


def mark_low_runs(samples: pd.DataFrame, interval_s: int) -> pd.DataFrame:
    """``samples`` sorted by entity and time, with ``run``: the number of the maximal run of
    consecutive samples below the threshold on GPU and memory controller that lasts at least
    the minimum length, or -1. A missing sample (stopped instance) or a change of owner ends a
    run."""
    step = pd.Timedelta(seconds=interval_s)
    data = samples.sort_values(KEY + ["ts"], kind="stable").reset_index(drop=True)
    low = (data["util_gpu"] < THRESHOLD) & (data["util_mem"] < THRESHOLD)
    same = (data[KEY + ["job_id"]] == data[KEY + ["job_id"]].shift()).all(axis=1)
    contiguous = same & (data["ts"] - data["ts"].shift() == step)
    starts = low & ~(low.shift(fill_value=False) & contiguous)
    run = starts.cumsum().where(low, -1)
    first, last = data["ts"].groupby(run).transform("min"), data["ts"].groupby(run).transform("max")
    long_enough = low & (last + step - first >= MIN_LENGTH)
    return data.assign(run=run.where(long_enough, -1))


def low_runs(samples: pd.DataFrame, interval_s: int) -> pd.DataFrame:
    """One row per run of ``mark_low_runs``: entity, owner, start and end (the first sample
    after the run)."""
    data = mark_low_runs(samples, interval_s)
    rows = data[data["run"] >= 0]
    runs = rows.groupby("run").agg(host=("host", "first"), gpu_uuid=("gpu_uuid", "first"),
                                   mig_instance=("mig_instance", "first"),
                                   team=("team", "first"), job_id=("job_id", "first"),
                                   start=("ts", "min"), last=("ts", "max"))
    runs["end"] = runs["last"] + pd.Timedelta(seconds=interval_s)
    return runs.reset_index(drop=True)


def window_keys(entries) -> set[tuple]:
    """(host, gpu_uuid, mig_instance, start, end) of manifest entries."""
    return {(p["host"], p["gpu_uuid"], p["mig_instance"], pd.Timestamp(p["start"]),
             pd.Timestamp(p["end"])) for p in entries}
