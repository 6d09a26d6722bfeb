"""Fixtures for the fleet simulator: the default fleet and its 30-day history, built once."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import pandas as pd
import pytest

from sim import build_fleet, natural_idle_windows, planted_problems, sample_frames

END = datetime(2024, 5, 20, 13, 0, tzinfo=timezone.utc)
DAYS = 30
INTERVAL_S = 60
KEEP = ("ts", "host", "gpu_uuid", "mig_instance", "environment", "region", "pool",
        "instance_id", "instance_type", "util_gpu", "util_mem", "process_count", "team", "user",
        "job_id", "k8s_namespace", "slurm_account", "driver_version", "cuda_version",
        "xid_count", "xid_last", "ecc_uncorrected_volatile")


@pytest.fixture(scope="session")
def traces_dir():
    from sim.traces import TRACES_DIR

    return TRACES_DIR


@pytest.fixture(scope="session")
def fleet(traces_dir):
    return build_fleet(64, 7, traces_dir=traces_dir)


@pytest.fixture(scope="session")
def history(fleet):
    """The default-size history (64 GPUs, 30 days, 60 s), a few columns kept, plus timing."""
    started = time.perf_counter()
    frames, rows = [], 0
    for frame in sample_frames(fleet, DAYS, INTERVAL_S, END):
        rows += len(frame)
        frames.append(frame[list(KEEP)])
    seconds = time.perf_counter() - started
    return {"samples": pd.concat(frames, ignore_index=True), "rows": rows, "seconds": seconds,
            "frames": len(frames)}


@pytest.fixture(scope="session")
def samples(history) -> pd.DataFrame:
    return history["samples"]


@pytest.fixture(scope="session")
def manifest(fleet):
    return planted_problems(fleet, DAYS, INTERVAL_S, END)


@pytest.fixture(scope="session")
def natural_windows(fleet):
    return natural_idle_windows(fleet, DAYS, INTERVAL_S, END)
