"""Reading NVML values one field at a time, so that each field degrades on its own.

A field NVML does not support on a device (``NVMLError_NotSupported``, or a function missing
from an older driver, ``NVMLError_FunctionNotFound``) becomes ``None`` and is not asked again
for that device. A field the agent may not read (``NVMLError_NoPermission``) or that fails
for another reason becomes ``None`` for this round and is counted in the agent's error
counters (``gpuledger_agent_sample_errors_total{field=...}``). A lost GPU
(``NVMLError_GpuIsLost`` / ``NVMLError_Unknown``) stops the reading of that GPU: see
:class:`GpuLost`.
"""
from __future__ import annotations

import itertools
import operator
from collections import Counter
from dataclasses import dataclass, field

from base.errors import GpuLost

MIB = 1024 * 1024

# nvmlValueType_t -> attribute of c_nvmlValue_t
_VALUE_ATTR = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal",
               6: "usVal"}


@dataclass(eq=False)
class Entity:
    """A sampled thing (a GPU or a MIG device): its handle and what NVML told us about it."""
    handle: object
    mig_instance: str = ""
    mig_profile: str = ""
    unsupported: set[str] = field(default_factory=set)
    last_ts: dict[object, int] = field(default_factory=dict)


class FieldReader:
    """Calls one NVML function for one field and applies the degradation rules above."""

    def __init__(self, nvml, errors: Counter):
        self.nvml = nvml
        self.errors = errors
        self._unsupported = (nvml.NVMLError_NotSupported, nvml.NVMLError_FunctionNotFound)
        self._lost = (nvml.NVMLError_GpuIsLost, nvml.NVMLError_Unknown)
        self._not_found = nvml.NVMLError_NotFound
        self._error = nvml.NVMLError

    def get(self, ent: Entity, name: str, fn, *args):
        """``fn(*args)``, or None when the field is unsupported or failed."""
        if name in ent.unsupported:
            return None
        try:
            return fn(*args)
        except self._unsupported:
            ent.unsupported.add(name)
        except self._lost as e:
            raise GpuLost(e.value) from e
        except self._error:
            self.errors[name] += 1
        return None

    def average_samples(self, ent: Entity, name: str, kind: int):
        """Mean of the samples NVML buffered since the last call (``nvmlDeviceGetSamples``
        with the last seen timestamp), or None when there is none."""
        if name in ent.unsupported:
            return None
        last = ent.last_ts.get(kind, 0)
        try:
            vtype, samples = self.nvml.nvmlDeviceGetSamples(ent.handle, kind, last)
        except self._not_found:
            return None
        except self._unsupported:
            ent.unsupported.add(name)
            return None
        except self._lost as e:
            raise GpuLost(e.value) from e
        except self._error:
            self.errors[name] += 1
            return None
        if not samples:
            return None
        # NVML returns only samples newer than ``last`` (nvmlDeviceGetSamples contract)
        values = list(map(operator.attrgetter(_VALUE_ATTR.get(vtype, "uiVal")),
                          column(samples, "sampleValue")))
        ent.last_ts[kind] = max(last, max(column(samples, "timeStamp")))
        return sum(values) / len(values)


def column(structs: list, name: str):
    """One field of every struct in a list of NVML ctypes structs, as an iterator.

    pynvml's structs run a Python ``__getattribute__`` on every field access (to decode
    bytes); a round reads a few hundred sample fields per GPU, so numeric fields are read
    through the ctypes field descriptor, in C. Other objects: plain getattr."""
    desc = getattr(type(structs[0]), name, None)
    if desc is not None and hasattr(desc, "__set__") and hasattr(desc, "offset"):
        return map(desc.__get__, structs, itertools.repeat(None))
    return map(operator.attrgetter(name), structs)


def read_utilization(reader: FieldReader, ent: Entity) -> tuple[float | None, float | None]:
    """(GPU %, memory-controller %) averaged over the interval from NVML's sample buffer,
    falling back to ``nvmlDeviceGetUtilizationRates`` (NVML's latest one-period value) only
    when the buffer is unsupported or holds no new sample."""
    nvml = reader.nvml
    gpu = reader.average_samples(ent, "util_gpu", nvml.NVML_GPU_UTILIZATION_SAMPLES)
    mem = reader.average_samples(ent, "util_mem", nvml.NVML_MEMORY_UTILIZATION_SAMPLES)
    if gpu is None or mem is None:
        rates = reader.get(ent, "util_rates", nvml.nvmlDeviceGetUtilizationRates, ent.handle)
        if rates is not None:
            gpu = float(rates.gpu) if gpu is None else gpu
            mem = float(rates.memory) if mem is None else mem
    return gpu, mem


def read_memory(reader: FieldReader, ent: Entity) -> tuple[int | None, int | None, int | None]:
    """(used, total, reserved) bytes of the GPU or of the MIG device.

    Used as nvidia-smi and dcgm-exporter count it: what processes allocated, without the memory
    the driver and firmware reserve (NVML's v2 call; 479 MiB on an H100 80GB, 0 on a MIG device).
    Only where the driver or the binding lacks the v2 call, v1's used, which counts the reserved
    memory in (reserved None then)."""
    nvml = reader.nvml
    version = getattr(nvml, "nvmlMemory_v2", None)
    if version is not None and "memory" not in ent.unsupported:
        mem = reader.get(ent, "memory", nvml.nvmlDeviceGetMemoryInfo, ent.handle, version)
        if mem is not None:
            return int(mem.used), int(mem.total), int(mem.reserved)
        if "memory" not in ent.unsupported:          # failed this round: no value, not v1's
            return None, None, None
    mem = reader.get(ent, "memory_v1", nvml.nvmlDeviceGetMemoryInfo, ent.handle)
    return (None, None, None) if mem is None else (int(mem.used), int(mem.total), None)


def read_physical(reader: FieldReader, ent: Entity) -> dict:
    """Power, energy, temperature, clocks, clock-event reasons and ECC counters: properties
    of the physical GPU (MIG devices answer NOT_SUPPORTED for them)."""
    n, h, get = reader.nvml, ent.handle, reader.get
    power_mw = get(ent, "power_w", n.nvmlDeviceGetPowerUsage, h)
    energy_mj = get(ent, "energy_j", n.nvmlDeviceGetTotalEnergyConsumption, h)
    temp = get(ent, "temperature_c", n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU)
    return {
        "power_w": None if power_mw is None else power_mw / 1000.0,
        "energy_j": None if energy_mj is None else energy_mj / 1000.0,
        "temperature_c": None if temp is None else float(temp),
        "sm_clock_mhz": get(ent, "sm_clock_mhz", n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
        "mem_clock_mhz": get(ent, "mem_clock_mhz", n.nvmlDeviceGetClockInfo, h,
                             n.NVML_CLOCK_MEM),
        "throttle_reasons": read_clock_event_reasons(reader, ent),
        **read_ecc(reader, ent),
    }


def read_clock_event_reasons(reader: FieldReader, ent: Entity) -> int | None:
    """The clocks-event (formerly throttle) reason bitmask; drivers older than R535 only have
    ``nvmlDeviceGetCurrentClocksThrottleReasons``."""
    n = reader.nvml
    value = reader.get(ent, "throttle_reasons", n.nvmlDeviceGetCurrentClocksEventReasons,
                       ent.handle)
    if value is None and "throttle_reasons" in ent.unsupported:
        value = reader.get(ent, "throttle_reasons_legacy",
                           n.nvmlDeviceGetCurrentClocksThrottleReasons, ent.handle)
    return value


def read_ecc(reader: FieldReader, ent: Entity) -> dict:
    """Corrected / uncorrected ECC error totals, volatile (since driver load) and aggregate
    (lifetime). GPUs without ECC, or with ECC disabled, answer NOT_SUPPORTED: None."""
    n = reader.nvml
    out = {}
    for col, etype, ctype in (
            ("ecc_corrected_volatile", n.NVML_MEMORY_ERROR_TYPE_CORRECTED, n.NVML_VOLATILE_ECC),
            ("ecc_uncorrected_volatile", n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
             n.NVML_VOLATILE_ECC),
            ("ecc_corrected_aggregate", n.NVML_MEMORY_ERROR_TYPE_CORRECTED,
             n.NVML_AGGREGATE_ECC),
            ("ecc_uncorrected_aggregate", n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
             n.NVML_AGGREGATE_ECC)):
        out[col] = reader.get(ent, col, n.nvmlDeviceGetTotalEccErrors, ent.handle, etype, ctype)
    return out


def decode(value) -> str:
    """NVML strings arrive as ``str`` from most pynvml calls but as ``bytes`` inside structs."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def mig_profile_of(name: str, attributes=None) -> str:
    """The MIG profile (``1g.10gb``) from a MIG device name ("NVIDIA H100 80GB HBM3 MIG
    1g.10gb"), else from its attributes (GPU-instance slices, memory in MiB)."""
    if " MIG " in name:
        return name.rsplit(" MIG ", 1)[1].strip()
    if attributes is not None and attributes.gpuInstanceSliceCount:
        return f"{attributes.gpuInstanceSliceCount}g.{round(attributes.memorySizeMB / 1024)}gb"
    return ""
