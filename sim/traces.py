"""Shapes taken from real cluster traces, with an embedded fallback.

The Helios and Philly files it reads ship in ``sim/data`` (``TRACES_DIR``; see SOURCES.md
there); per minute:

* ``busy`` — Helios VC6YE GPU allocation ratio (``gpu_utilization``): scales how hard training
  jobs drive their GPUs;
* ``active`` — Philly active/total nodes: scales experimentation intensity;
* ``pending_week`` — Helios pending GPU demand averaged per hour of week: where cloud bursts
  start (demand that queues on-prem spills to the cloud);
* ``frac_ge8`` — share of Helios jobs asking for 8 GPUs or more: how often a Slurm host runs one
  whole-host job rather than smaller jobs side by side;
* ``runtime_sigma`` — lognormal spread of GPU-job run times from the Helios cluster summary
  (mean over median), capped so jobs stay within hours to days.

``load_shapes(None)`` gives the same fields from the hour-of-day averages below (computed once
from those traces) instead. Per-minute series are indexed by
absolute minute modulo their length, so a given instant always gets the same value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

TRACES_DIR = Path(__file__).resolve().parent / "data"
HELIOS_SEQUENCE = "helios_vc6YE_per_minute.csv.gz"
HELIOS_SUMMARY = "helios_cluster_summary.csv"
PHILLY_SEQUENCE = "philly_nodes_per_minute.csv.gz"

# Hour-of-day means of the traces above (UTC+8 / UTC-8 local clocks of the source clusters).
FALLBACK_BUSY_BY_HOUR = (
    0.920, 0.917, 0.908, 0.909, 0.911, 0.900, 0.896, 0.886, 0.879, 0.876, 0.872, 0.886,
    0.900, 0.902, 0.873, 0.879, 0.909, 0.921, 0.916, 0.919, 0.921, 0.923, 0.921, 0.920,
)
FALLBACK_PENDING_BY_HOUR = (
    21.1, 23.5, 23.8, 25.9, 26.0, 23.9, 22.4, 20.9, 19.7, 18.5, 17.3, 14.7,
    15.8, 14.8, 14.0, 15.3, 18.5, 21.8, 22.1, 18.7, 18.2, 18.8, 20.1, 21.8,
)
FALLBACK_ACTIVE_BY_HOUR = (
    0.740, 0.742, 0.744, 0.744, 0.743, 0.741, 0.739, 0.735, 0.733, 0.734, 0.734, 0.735,
    0.734, 0.734, 0.734, 0.731, 0.731, 0.728, 0.735, 0.748, 0.750, 0.752, 0.752, 0.749,
)
FALLBACK_FRAC_GE8 = 0.84
FALLBACK_RUNTIME_SIGMA = 1.0
MAX_RUNTIME_SIGMA = 1.0


@dataclass(frozen=True, eq=False)
class TraceShapes:
    busy: np.ndarray          # per minute, 0..1
    active: np.ndarray        # per minute, 0..1
    pending_week: np.ndarray  # 168 hourly weights, > 0
    frac_ge8: float
    runtime_sigma: float
    source: str               # "traces" or "fallback"

    def busy_at(self, ts: np.ndarray) -> np.ndarray:
        """Allocation ratio at epoch seconds ``ts``."""
        return self.busy[(ts // 60) % len(self.busy)]

    def active_at(self, ts: np.ndarray) -> np.ndarray:
        """Active-node ratio at epoch seconds ``ts``."""
        return self.active[(ts // 60) % len(self.active)]


def load_shapes(traces_dir: str | Path | None = None) -> TraceShapes:
    """Shapes from the trace files in ``traces_dir``, or the embedded fallback when None."""
    if traces_dir is None:
        return fallback_shapes()
    root = Path(traces_dir)
    helios = pd.read_csv(root / HELIOS_SEQUENCE)
    philly = pd.read_csv(root / PHILLY_SEQUENCE)
    summary = pd.read_csv(root / HELIOS_SUMMARY)
    busy = helios["gpu_utilization"].to_numpy(np.float64).clip(0.0, 1.0)
    active = (philly["active"] / philly["total"]).to_numpy(np.float64).clip(0.0, 1.0)
    pending = helios["pending_gpu_num"].to_numpy(np.float64)
    jobs = helios["running_job_num"].sum()
    frac_ge8 = float(helios["running_job_num_noless_8"].sum() / jobs) if jobs else FALLBACK_FRAC_GE8
    return TraceShapes(busy=busy, active=active, pending_week=_hour_of_week(pending),
                       frac_ge8=round(frac_ge8, 4), runtime_sigma=_runtime_sigma(summary),
                       source="traces")


def fallback_shapes() -> TraceShapes:
    """The embedded hour-of-day shapes, repeated per minute."""
    busy = np.repeat(np.array(FALLBACK_BUSY_BY_HOUR), 60)
    active = np.repeat(np.array(FALLBACK_ACTIVE_BY_HOUR), 60)
    pending = np.tile(np.array(FALLBACK_PENDING_BY_HOUR), 7) + 1.0
    return TraceShapes(busy=busy, active=active, pending_week=pending,
                       frac_ge8=FALLBACK_FRAC_GE8, runtime_sigma=FALLBACK_RUNTIME_SIGMA,
                       source="fallback")


def _hour_of_week(per_minute: np.ndarray) -> np.ndarray:
    """Mean per hour of week (168 values) of a per-minute series, plus one so none is zero."""
    hours = len(per_minute) // 60
    hourly = per_minute[: hours * 60].reshape(hours, 60).mean(axis=1)
    sums = np.zeros(168)
    counts = np.zeros(168)
    np.add.at(sums, np.arange(hours) % 168, hourly)
    np.add.at(counts, np.arange(hours) % 168, 1)
    return sums / np.maximum(counts, 1) + 1.0


def _runtime_sigma(summary: pd.DataFrame) -> float:
    """Lognormal sigma with the clusters' mean/median GPU-job run time, capped."""
    ratio = (summary["avg_run_time_gpu"] / summary["med_run_time_gpu"]).median()
    sigma = math.sqrt(2.0 * math.log(ratio)) if ratio > 1.0 else FALLBACK_RUNTIME_SIGMA
    return round(min(sigma, MAX_RUNTIME_SIGMA), 4)
