"""Processes holding a GPU: memory from ``nvmlDeviceGetComputeRunningProcesses``, SM and
memory-controller share averaged over the interval from ``nvmlDeviceGetProcessUtilization``
(NVML keeps per-process samples only on whole GPUs, not MIG devices)."""
from __future__ import annotations

from dataclasses import dataclass

from base.errors import GpuLost
from collector.nvml_fields import Entity, FieldReader, column

_PROC_UTIL = "process_util"


@dataclass(slots=True)
class SeenProcess:
    pid: int
    used_memory_bytes: int | None
    sm_util: float | None = None
    mem_util: float | None = None


def read_processes(reader: FieldReader, ent: Entity) -> list[SeenProcess] | None:
    """The compute processes on the entity, or None when NVML cannot tell."""
    infos = reader.get(ent, "processes", reader.nvml.nvmlDeviceGetComputeRunningProcesses,
                       ent.handle)
    if infos is None:
        return None
    procs = [SeenProcess(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory))
             for p in infos]
    if procs:
        shares = read_process_utilization(reader, ent)
        for p in procs:
            p.sm_util, p.mem_util = shares.get(p.pid, (None, None))
    return procs


def read_process_utilization(reader: FieldReader, ent: Entity) -> dict[int, tuple]:
    """pid -> (mean SM %, mean memory %) over the samples since the last call."""
    n = reader.nvml
    if _PROC_UTIL in ent.unsupported:
        return {}
    last = ent.last_ts.get(_PROC_UTIL, 0)
    try:
        samples = n.nvmlDeviceGetProcessUtilization(ent.handle, last)
    except n.NVMLError_NotFound:
        return {}
    except (n.NVMLError_NotSupported, n.NVMLError_FunctionNotFound):
        ent.unsupported.add(_PROC_UTIL)
        return {}
    except (n.NVMLError_GpuIsLost, n.NVMLError_Unknown) as e:
        raise GpuLost(e.value) from e
    except n.NVMLError:
        reader.errors[_PROC_UTIL] += 1
        return {}
    if not samples:
        return {}
    # NVML returns only samples newer than ``last`` (nvmlDeviceGetProcessUtilization contract)
    sums: dict[int, list] = {}
    for pid, sm, mem in zip(column(samples, "pid"), column(samples, "smUtil"),
                            column(samples, "memUtil")):
        acc = sums.get(pid)
        if acc is None:
            acc = sums[pid] = [0, 0, 0]
        acc[0] += sm
        acc[1] += mem
        acc[2] += 1
    ent.last_ts[_PROC_UTIL] = max(last, max(column(samples, "timeStamp")))
    return {pid: (sm / k, mem / k) for pid, (sm, mem, k) in sums.items()}
