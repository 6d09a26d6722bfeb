"""GPU samples, one DataFrame per UTC day, computed with numpy over (entity x timestamp)."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from collector.records import GPU_SAMPLE_COLUMNS

from .catalog import MODELS
from .fleet import Fleet
from .planted import HEALTH_ECC_UNCORRECTED, HEALTH_XIDS, health_event, overlays, planted_windows
from .timeline import HELD, OFF, Timeline, Window, day_starts, resolve_window
from .workloads import MODE_ACTIVE, MODE_DIURNAL, MODE_FLAT, MODE_IDLE

STATIC_STRINGS = ("environment", "region", "cluster", "pool", "host", "instance_id",
                  "instance_type", "gpu_uuid", "mig_instance", "mig_profile", "model",
                  "pci_bus_id", "driver_version", "cuda_version")
OWNER_STRINGS = ("team", "user", "job_id", "k8s_namespace", "k8s_pod", "slurm_account", "image")
MIB = 1024 * 1024
THROTTLE_GPU_IDLE, THROTTLE_SW_POWER_CAP = 0x1, 0x4


def sample_frames(fleet: Fleet, days: int = 30, interval_s: int = 60,
                  end: datetime | None = None) -> Iterator[pd.DataFrame]:
    """History of every GPU entity, one DataFrame per UTC calendar day (the first and last may
    be partial when ``end`` is not midnight), columns exactly ``GPU_SAMPLE_COLUMNS``."""
    window = resolve_window(days, interval_s, end)
    timeline = Timeline(fleet, window.start, window.end, overlays(planted_windows(fleet, window)))
    yield from window_frames(fleet, timeline, window)


def write_samples(fleet: Fleet, out_dir, days: int = 30, interval_s: int = 60,
                  end: datetime | None = None) -> list[Path]:
    """``gpu_samples_YYYY-MM-DD.parquet`` files (zstd), one per day; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for frame in sample_frames(fleet, days, interval_s, end):
        path = out / f"gpu_samples_{frame['ts'].iloc[0]:%Y-%m-%d}.parquet"
        frame.to_parquet(path, engine="pyarrow", compression="zstd", index=False)
        paths.append(path)
    return paths


@dataclass(frozen=True, eq=False)
class EntityTable:
    """Per-entity constants as arrays, so rows are filled by fancy indexing."""

    strings: dict[str, np.ndarray]
    gpu_index: np.ndarray
    mem_total: np.ndarray
    idle_w: np.ndarray
    max_w: np.ndarray
    sm_idle: np.ndarray
    sm_max: np.ndarray
    mem_mhz: np.ndarray
    utc_offset_s: np.ndarray
    energy_start: np.ndarray


def entity_table(fleet: Fleet) -> EntityTable:
    hosts = {h.name: h for h in fleet.hosts}
    rows = []
    for e in fleet.entities:
        pool, host = fleet.pool(e.pool), hosts[e.host]
        inst = fleet.instances[e.instance] if e.instance >= 0 else None
        rows.append({"environment": pool.environment, "region": pool.region,
                     "cluster": pool.cluster, "pool": pool.name, "host": e.host,
                     "instance_id": inst.instance_id if inst else "",
                     "instance_type": inst.instance_type if inst else "",
                     "gpu_uuid": e.gpu_uuid, "mig_instance": e.mig_instance,
                     "mig_profile": e.mig_profile, "model": MODELS[e.model].name,
                     "pci_bus_id": e.pci_bus_id, "driver_version": host.driver,
                     "cuda_version": host.cuda})
    models = [MODELS[e.model] for e in fleet.entities]
    share = np.array([e.share for e in fleet.entities])
    rng = np.random.default_rng([fleet.seed, 5])
    return EntityTable(
        strings={c: np.array([r[c] for r in rows], dtype=object) for c in STATIC_STRINGS},
        gpu_index=np.array([e.gpu_index for e in fleet.entities], dtype=np.uint16),
        mem_total=np.array([e.mem_mib for e in fleet.entities], dtype=np.uint64) * MIB,
        idle_w=np.array([m.idle_w for m in models]) * share,
        max_w=np.array([m.max_w for m in models]) * share,
        sm_idle=np.array([m.sm_idle_mhz for m in models], dtype=np.uint32),
        sm_max=np.array([m.sm_max_mhz for m in models], dtype=np.uint32),
        mem_mhz=np.array([m.mem_mhz for m in models], dtype=np.uint32),
        utc_offset_s=np.array([e.utc_offset_h * 3600 for e in fleet.entities], dtype=np.int64),
        energy_start=np.round(rng.uniform(5e7, 5e9, len(fleet.entities)) * share, 3),
    )


def window_frames(fleet: Fleet, timeline: Timeline, window: Window) -> Iterator[pd.DataFrame]:
    """One frame per calendar day of ``window``; energy counters carry over between days."""
    table = entity_table(fleet)
    energy = table.energy_start.copy()
    health = health_event(fleet, window)
    starts = day_starts(window.start, window.end)
    for d0, d1 in zip(starts, starts[1:] + [window.end]):
        yield day_frame(fleet, timeline, table, energy, health, d0, d1, window.interval_s)


def day_frame(fleet, timeline, table, energy, health, d0, d1, interval) -> pd.DataFrame:
    """Samples in ``[d0, d1)``, entity-major; advances ``energy`` in place."""
    ts = np.arange(d0, d1, interval, dtype=np.int64)
    n_ent = len(fleet.entities)
    ent = np.repeat(np.arange(n_ent), len(ts))
    tt = np.tile(ts, n_ent)
    seg = timeline.lookup(ent, tt)
    keep = timeline.state[seg] != OFF
    ent, tt, seg = ent[keep], tt[keep], seg[keep]
    held = timeline.state[seg] == HELD
    job = np.where(held, timeline.job[seg], -1)
    rng = np.random.default_rng([fleet.seed, 4, d0, interval])
    noise = rng.standard_normal((3, len(tt)))
    util, util_mem = _utilization(fleet, timeline, table, ent, tt, job, held, noise)
    jc = timeline.job_columns
    mem_frac = np.clip(jc["mem_frac"][job] + 0.01 * noise[2], 0.02, 0.98)
    mem_used = np.where(held, table.mem_total[ent] * mem_frac, table.mem_total[ent] * 0.005)
    power = np.round((table.idle_w[ent] + (table.max_w[ent] - table.idle_w[ent]) * 0.85
                      * (util / 100.0) ** 0.9) * (1 + 0.01 * noise[2]), 2)
    energy_j = _energy(ent, power * interval, energy)
    cols = {c: _take_strings(table.strings[c], ent) for c in STATIC_STRINGS}
    owner_rows = np.where(job >= 0, job, len(jc["team"]) - 1)  # the last job row is all ""
    cols.update({c: _take_strings(jc[c], owner_rows) for c in OWNER_STRINGS})
    in_pod = (jc["k8s_pod"] != "").astype(np.int64)            # a pod's GPU: its "main" container
    cols["k8s_container"] = _take_strings(np.array(["", "main"], dtype=object), in_pod[owner_rows])
    cols.update({
        "ts": pd.to_datetime(tt * 1000, unit="ms", utc=True).astype("datetime64[ms, UTC]"),
        "gpu_index": table.gpu_index[ent],
        "util_gpu": util.astype(np.float32), "util_mem": util_mem.astype(np.float32),
        "mem_used_bytes": _uint(mem_used.astype(np.uint64), "UInt64"),
        "mem_total_bytes": _uint(table.mem_total[ent], "UInt64"),
        "power_w": power.astype(np.float32), "energy_j": np.round(energy_j, 3),
        "temperature_c": np.round(30 + 0.5 * util + 0.8 * noise[1]).astype(np.float32),
        "sm_clock_mhz": _uint(np.where(util < 5, table.sm_idle[ent], table.sm_max[ent]), "UInt32"),
        "mem_clock_mhz": _uint(table.mem_mhz[ent], "UInt32"),
        "throttle_reasons": _uint(np.where(util < 5, THROTTLE_GPU_IDLE,
                                           np.where(util >= 90, THROTTLE_SW_POWER_CAP, 0)),
                                  "UInt64"),
        "process_count": _uint(np.where(held, jc["procs"][job], 0), "UInt16"),
        "source": _take_strings(np.array(["sim"], dtype=object), np.zeros(len(tt), np.int64)),
    })
    cols.update(_health_columns(ent, tt, health, interval))
    return pd.DataFrame({c: cols[c] for c in GPU_SAMPLE_COLUMNS})


def _utilization(fleet, timeline, table, ent, tt, job, held, noise):
    """GPU and memory-controller utilization (%) per row, by the holding job's mode."""
    jc = timeline.job_columns
    mode, base, amp = jc["mode"][job], jc["base"][job], jc["amp"][job]
    local_h = ((tt + table.utc_offset_s[ent]) % 86400) / 3600.0
    diurnal = 0.5 - 0.5 * np.cos(2 * np.pi * (local_h - 4.0) / 24.0)
    busy = fleet.shapes.busy_at(tt)
    active = fleet.shapes.active_at(tt)
    util = np.select(
        [mode == MODE_FLAT, mode == MODE_DIURNAL, mode == MODE_ACTIVE],
        [base * (0.8 + 0.2 * busy) + 2 * noise[0], base + amp * diurnal + 3 * noise[0],
         base * (0.7 + 0.3 * active) + 4 * noise[0]],
        default=0.0)
    idle = mode == MODE_IDLE
    util = np.where(idle, np.clip(np.abs(noise[0]) * 0.6, 0, 2.0), np.clip(util, 10.0, 100.0))
    util_mem = np.where(idle, np.clip(np.abs(noise[1]) * 0.3, 0, 1.0),
                        np.clip(util * jc["mem_ratio"][job] + 2 * noise[1], 3.0, 100.0))
    return (np.round(np.where(held, util, 0.0), 1), np.round(np.where(held, util_mem, 0.0), 1))


def _energy(ent: np.ndarray, joules: np.ndarray, carry: np.ndarray) -> np.ndarray:
    """Running energy counter per entity (rows are entity-major); updates ``carry``."""
    total = np.cumsum(joules)
    first = np.searchsorted(ent, ent, side="left")
    before = np.where(first > 0, total[first - 1], 0.0)
    counter = carry[ent] + (total - before)
    last = np.searchsorted(ent, np.arange(len(carry)), side="right") - 1
    present = np.isin(np.arange(len(carry)), ent)
    carry[present] = counter[last[present]]
    return counter


def _health_columns(ent, tt, health, interval) -> dict:
    """ECC and XID columns: zero everywhere but on the planted GPU-health entity."""
    entity, t_xid = health
    on = ent == entity
    ecc = np.where(on & (tt >= t_xid), HEALTH_ECC_UNCORRECTED, 0).astype(np.uint64)
    zeros = np.zeros(len(tt), dtype=np.uint64)
    xid_last = np.zeros(len(tt), dtype=np.uint32)
    for k, code in enumerate(HEALTH_XIDS):
        xid_last[on & (tt == t_xid + k * interval)] = code
    has = xid_last > 0
    return {
        "ecc_corrected_volatile": _uint(zeros, "UInt64"),
        "ecc_uncorrected_volatile": _uint(ecc, "UInt64"),
        "ecc_corrected_aggregate": _uint(zeros.copy(), "UInt64"),
        "ecc_uncorrected_aggregate": _uint(ecc.copy(), "UInt64"),
        "xid_count": has.astype(np.uint32),
        "xid_last": pd.arrays.IntegerArray(xid_last, ~has),
    }


def _take_strings(values: np.ndarray, rows: np.ndarray) -> pd.Series:
    """``values[rows]`` as a pandas string column, built in Arrow (fast for millions of rows)."""
    return pa.array(values.tolist(), type=pa.string()).take(pa.array(rows)).to_pandas()


def _uint(values: np.ndarray, dtype: str) -> pd.arrays.IntegerArray:
    """A nullable unsigned column with no nulls."""
    np_dtype = {"UInt16": np.uint16, "UInt32": np.uint32, "UInt64": np.uint64}[dtype]
    return pd.arrays.IntegerArray(np.asarray(values).astype(np_dtype), np.zeros(len(values), bool))
