"""Value types at the collector/store boundary.

Field names are the column names of ``sql/migrations/001_gpu_samples.sql`` (and later migrations), so a
batch insert is just the values in field order.
"""
from __future__ import annotations

import dataclasses
import functools
import operator
from dataclasses import dataclass
from datetime import datetime


@dataclass(slots=True)
class GpuSample:
    ts: datetime
    host: str
    gpu_uuid: str
    environment: str = "onprem"
    region: str = ""
    cluster: str = ""
    pool: str = ""
    instance_id: str = ""
    instance_type: str = ""
    gpu_index: int = 0
    mig_instance: str = ""
    mig_profile: str = ""
    model: str = ""
    pci_bus_id: str = ""
    driver_version: str = ""
    cuda_version: str = ""
    image: str = ""
    util_gpu: float | None = None
    util_mem: float | None = None
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    power_w: float | None = None
    energy_j: float | None = None
    temperature_c: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    throttle_reasons: int | None = None
    ecc_corrected_volatile: int | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_corrected_aggregate: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    xid_count: int = 0
    xid_last: int | None = None
    process_count: int | None = None
    team: str = ""
    user: str = ""
    job_id: str = ""
    k8s_namespace: str = ""
    k8s_pod: str = ""
    k8s_container: str = ""
    slurm_account: str = ""
    source: str = ""


GPU_SAMPLE_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(GpuSample))


@dataclass(slots=True)
class GpuProcess:
    """One process holding a GPU (or MIG instance) at one sample, with its owner.

    ``sm_util`` / ``mem_util`` are the process's share averaged over the interval (NULL when
    NVML keeps no per-process samples, e.g. on MIG instances); owner fields are '' when unknown.
    """
    ts: datetime
    host: str
    gpu_uuid: str
    pid: int
    mig_instance: str = ""
    process_name: str = ""
    used_memory_bytes: int | None = None
    sm_util: float | None = None
    mem_util: float | None = None
    container_id: str = ""
    team: str = ""
    user: str = ""
    job_id: str = ""
    k8s_namespace: str = ""
    k8s_pod: str = ""
    k8s_container: str = ""
    slurm_account: str = ""


@dataclass(slots=True)
class GpuHealthEvent:
    """Something that happened to a GPU rather than a measurement of it.

    ``kind``: ``gpu_lost`` (NVML reports the GPU lost or in an unknown state; it is retried every
    round), ``gpu_recovered`` (a lost GPU answers again), ``xid`` (an XID critical error; ``code``
    is the XID number). ``code`` is the NVML error code for the first two kinds.
    """
    ts: datetime
    host: str
    gpu_uuid: str
    kind: str
    gpu_index: int = 0
    mig_instance: str = ""
    code: int | None = None
    detail: str = ""


GPU_PROCESS_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(GpuProcess))
GPU_HEALTH_EVENT_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(GpuHealthEvent))


def as_row(record) -> tuple:
    """The record's values in column order, ready for a batch insert (fast: no deep copy)."""
    return _getter(type(record))(record)


@functools.cache
def _getter(cls):
    return operator.attrgetter(*(f.name for f in dataclasses.fields(cls)))
