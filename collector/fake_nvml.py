"""A stand-in for the ``pynvml`` module (nvidia-ml-py) on machines without a GPU.

It implements exactly the NVML calls ``collector.nvml.NvmlSampler`` makes, with pynvml's
signatures, its ctypes return structs (``c_nvmlMemory_t``, ``c_nvmlSample_t``,
``c_nvmlProcessUtilizationSample_t``, ``nvmlPciInfo_t`` ...), its constants and its exception
classes (errors are raised as ``pynvml.NVMLError(code)``, so ``except
pynvml.NVMLError_NotSupported`` works unchanged). Pass an instance wherever the real module
would go::

    from collector.fake_nvml import FakeNvml, FakeGpu, FakeMig, FakeProcess
    from collector import fake_gpu_models as models

    fake = FakeNvml([models.h100_80gb(index=0), models.l40s(index=1)])
    sampler = NvmlSampler(nvml=fake, clock=fake.clock, host="node-1")

Constructor: ``FakeNvml(gpus, driver_version="590.48.01", cuda_version=13010,
start_s=1_784_000_000.0, sample_period_s=1.0, init_error=None)``. ``gpus`` is a list of
:class:`FakeGpu` (index = position). ``init_error`` is an NVML error code raised by
``nvmlInit`` (e.g. ``pynvml.NVML_ERROR_LIBRARY_NOT_FOUND`` for a node without the driver).

Driving it (what a fleet simulator does each round):

* set values on the dataclasses: ``gpu.util_gpu = 80``, ``gpu.power_w = 410.5``,
  ``gpu.memory_used = ...`` (what processes allocated, as nvidia-smi's "Used"; NVML's v1
  ``nvmlDeviceGetMemoryInfo`` adds ``gpu.memory_reserved``, the driver's and firmware's share, as
  a real driver does), ``gpu.processes = [FakeProcess(pid=4242, used_memory=...)]``,
  ``gpu.mig[0].memory_used = ...``;
* ``fake.advance(seconds)`` moves the fake clock: NVML's utilization sample buffer receives one
  sample per ``sample_period_s`` with the current ``util_gpu`` / ``util_mem`` (and each
  process's ``sm_util`` / ``mem_util``), and the energy counter integrates ``power_w``;
* ``fake.clock()`` is the fake wall clock in seconds (pass it to the sampler);
* errors: ``gpu.fail["nvmlDeviceGetPowerUsage"] = pynvml.NVML_ERROR_NOT_SUPPORTED`` (any NVML
  function name, any code); ``gpu.lost = True`` makes every call on that GPU raise
  ``NVMLError_GpuIsLost`` until set back to False;
* XID: ``fake.inject_xid(gpu_index, 79, gpu_instance_id=None)`` queues a critical-XID event for
  event sets that registered the GPU.

Like real hardware: a GPU in MIG mode answers ``NOT_SUPPORTED`` for utilization (rates, sample
buffer, per process); MIG device handles answer name, UUID, memory, processes, GPU-instance id
and attributes, and ``NOT_SUPPORTED`` for the physical GPU's power, energy, temperature,
clocks, clock-event reasons and ECC counters. Calls before ``nvmlInit`` raise
``NVMLError_Uninitialized``.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import pynvml
from pynvml import NVMLError

MIB = 1024 * 1024
_NO_INSTANCE = 0xFFFFFFFF
_BUFFER = 120  # NVML keeps a bounded ring of utilization samples


@dataclass
class FakeProcess:
    """A compute process holding a GPU or MIG instance."""
    pid: int
    used_memory: int | None = 1024 * MIB
    name: str = "python3"
    sm_util: int | None = None   # None: NVML keeps no per-process samples for it
    mem_util: int | None = None


@dataclass
class FakeMig:
    """A MIG device (GPU instance + compute instance) of a FakeGpu."""
    gpu_instance_id: int
    profile: str                    # e.g. "1g.10gb"
    uuid: str
    memory_total: int
    memory_used: int = 0
    memory_reserved: int = 0
    slices: int = 1
    processes: list[FakeProcess] = field(default_factory=list)
    compute_instance_id: int = 0


@dataclass
class FakeGpu:
    """One physical GPU with the values NVML reports this round (all settable)."""
    name: str
    uuid: str
    pci_bus_id: str
    memory_total: int
    memory_used: int = 0
    memory_reserved: int = 0        # the driver's and firmware's (nvidia-smi's "Reserved")
    util_gpu: int = 0
    util_mem: int = 0
    power_w: float = 60.0
    energy_mj: int = 0
    temperature_c: int = 35
    sm_clock_mhz: int = 1980
    mem_clock_mhz: int = 2619
    clocks_event_reasons: int = 0x1   # nvmlClocksEventReasonGpuIdle
    ecc: dict[tuple[int, int], int] = field(default_factory=dict)  # (errorType, counterType) -> n
    processes: list[FakeProcess] = field(default_factory=list)
    mig: list[FakeMig] | None = None  # None: MIG disabled (or not MIG-capable)
    mig_capable: bool = False
    max_mig_devices: int = 7
    fail: dict[str, int] = field(default_factory=dict)  # NVML function name -> error code
    lost: bool = False


class _Handle:
    """Opaque device handle, like pynvml's c_nvmlDevice_t."""
    __slots__ = ("gpu", "mig", "index")

    def __init__(self, gpu: FakeGpu, index: int, mig: FakeMig | None = None):
        self.gpu, self.index, self.mig = gpu, index, mig


class _EventData:
    """Same attribute names as pynvml.c_nvmlEventData_t."""
    __slots__ = ("device", "eventType", "eventData", "gpuInstanceId", "computeInstanceId")

    def __init__(self, device, event_type, data, gi, ci):
        self.device, self.eventType, self.eventData = device, event_type, data
        self.gpuInstanceId, self.computeInstanceId = gi, ci


class _EventSet:
    def __init__(self):
        self.devices: dict[int, int] = {}   # gpu index -> registered event mask
        self.queue: list[_EventData] = []


_MIG_HANDLE_CALLS = frozenset({
    "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGpuInstanceId",
    "nvmlDeviceGetAttributes", "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
})
_NOT_IN_MIG_MODE = frozenset({
    "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetSamples", "nvmlDeviceGetProcessUtilization",
})


class FakeNvml:
    """The fake module; see the module docstring for how to build and drive it."""

    def __init__(self, gpus: list[FakeGpu], driver_version: str = "590.48.01",
                 cuda_version: int = 13010, start_s: float = 1_784_000_000.0,
                 sample_period_s: float = 1.0, init_error: int | None = None):
        self.gpus = list(gpus)
        self.driver_version, self.cuda_version = driver_version, cuda_version
        self.sample_period_s, self.init_error = sample_period_s, init_error
        self._now_us = int(start_s * 1_000_000)
        self._initialized = False
        self._samples: dict[tuple[int, int], list] = {}   # (gpu index, sampling type) -> samples
        self._proc_samples: dict[int, list] = {}
        self._event_sets: list[_EventSet] = []
        self._handles: dict[tuple, _Handle] = {}   # NVML handles are stable per device
        self.calls = 0   # number of NVML calls answered (benchmarks use it)

    # ---- driving the fake -------------------------------------------------------------
    def clock(self) -> float:
        """The fake wall clock, in seconds since the epoch."""
        return self._now_us / 1_000_000

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass: fill the sample buffers and integrate energy."""
        step_us = int(self.sample_period_s * 1_000_000)
        end = self._now_us + int(seconds * 1_000_000)
        for gpu in self.gpus:
            if not gpu.lost:
                gpu.energy_mj += int(round(gpu.power_w * seconds * 1000))
        t = self._now_us + step_us
        while t <= end:
            for i, gpu in enumerate(self.gpus):
                if not gpu.lost:
                    self._record_samples(i, gpu, t)
            t += step_us
        self._now_us = end

    def inject_xid(self, gpu_index: int, xid: int, gpu_instance_id: int | None = None) -> None:
        """Queue an XID critical-error event on every event set that registered the GPU."""
        handle = self._handle(gpu_index)
        gi = _NO_INSTANCE if gpu_instance_id is None else gpu_instance_id
        for es in self._event_sets:
            if es.devices.get(gpu_index, 0) & pynvml.nvmlEventTypeXidCriticalError:
                es.queue.append(_EventData(handle, pynvml.nvmlEventTypeXidCriticalError,
                                           xid, gi, 0 if gpu_instance_id is not None else gi))

    def _record_samples(self, i: int, gpu: FakeGpu, t: int) -> None:
        for kind, value in ((pynvml.NVML_GPU_UTILIZATION_SAMPLES, gpu.util_gpu),
                            (pynvml.NVML_MEMORY_UTILIZATION_SAMPLES, gpu.util_mem)):
            s = pynvml.c_nvmlSample_t(timeStamp=t)
            s.sampleValue.uiVal = int(value)
            _push(self._samples.setdefault((i, kind), ([], [])), t, s)
        ring = self._proc_samples.setdefault(i, ([], []))
        for p in gpu.processes:
            if p.sm_util is not None:
                _push(ring, t, pynvml.c_nvmlProcessUtilizationSample_t(
                    pid=p.pid, timeStamp=t, smUtil=p.sm_util, memUtil=p.mem_util or 0))

    # ---- plumbing ---------------------------------------------------------------------
    def _handle(self, index: int, mig: FakeMig | None = None) -> _Handle:
        key = (index, None if mig is None else mig.gpu_instance_id)
        h = self._handles.get(key)
        if h is None or h.gpu is not self.gpus[index] or h.mig is not mig:
            h = self._handles[key] = _Handle(self.gpus[index], index, mig)
        return h

    def _check(self, fn: str, handle: _Handle | None = None) -> None:
        self.calls += 1
        if not self._initialized:
            raise NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
        if handle is None:
            return
        gpu = handle.gpu
        if gpu.lost:
            raise NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        if fn in gpu.fail:
            raise NVMLError(gpu.fail[fn])
        if handle.mig is not None and fn not in _MIG_HANDLE_CALLS:
            raise NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if handle.mig is None and gpu.mig is not None and fn in _NOT_IN_MIG_MODE:
            raise NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    # ---- library and system -----------------------------------------------------------
    def nvmlInit(self):
        self.calls += 1
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self._initialized = True

    def nvmlShutdown(self):
        self._check("nvmlShutdown")
        self._initialized = False

    def nvmlSystemGetDriverVersion(self):
        self._check("nvmlSystemGetDriverVersion")
        return self.driver_version

    def nvmlSystemGetCudaDriverVersion_v2(self):
        self._check("nvmlSystemGetCudaDriverVersion_v2")
        return self.cuda_version

    def nvmlSystemGetProcessName(self, pid):
        self._check("nvmlSystemGetProcessName")
        for gpu in self.gpus:
            for p in gpu.processes + [p for m in gpu.mig or [] for p in m.processes]:
                if p.pid == pid:
                    return p.name
        raise NVMLError(pynvml.NVML_ERROR_NOT_FOUND)

    # ---- devices ----------------------------------------------------------------------
    def nvmlDeviceGetCount(self):
        self._check("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        self._check("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.gpus):
            raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        if self.gpus[index].lost:
            raise NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        return self._handle(index)

    def nvmlDeviceGetName(self, handle):
        self._check("nvmlDeviceGetName", handle)
        if handle.mig is not None:
            return f"{handle.gpu.name} MIG {handle.mig.profile}"
        return handle.gpu.name

    def nvmlDeviceGetUUID(self, handle):
        self._check("nvmlDeviceGetUUID", handle)
        return handle.mig.uuid if handle.mig is not None else handle.gpu.uuid

    def nvmlDeviceGetPciInfo(self, handle):
        self._check("nvmlDeviceGetPciInfo", handle)
        bus_id = handle.gpu.pci_bus_id.encode()
        dom, bus, dev = bus_id.split(b":")[0], bus_id.split(b":")[1], bus_id.split(b":")[2]
        return pynvml.nvmlPciInfo_t(busIdLegacy=bus_id[-12:], domain=int(dom, 16),
                                    bus=int(bus, 16), device=int(dev.split(b".")[0], 16),
                                    busId=bus_id)

    def nvmlDeviceGetMemoryInfo(self, handle, version=None):
        """v1 (no ``version``): ``used`` = total - free, the reserved memory counted in, as a real
        driver answers; v2 (``version=pynvml.nvmlMemory_v2``): ``used`` and ``reserved`` apart."""
        self._check("nvmlDeviceGetMemoryInfo_v2" if version else "nvmlDeviceGetMemoryInfo", handle)
        src = handle.mig if handle.mig is not None else handle.gpu
        free = src.memory_total - src.memory_reserved - src.memory_used
        if version:
            return pynvml.c_nvmlMemory_v2_t(version=version, total=src.memory_total, reserved=src.memory_reserved,
                                            free=free, used=src.memory_used)
        return pynvml.c_nvmlMemory_t(total=src.memory_total, used=src.memory_total - free, free=free)

    def nvmlDeviceGetUtilizationRates(self, handle):
        self._check("nvmlDeviceGetUtilizationRates", handle)
        return pynvml.c_nvmlUtilization_t(gpu=handle.gpu.util_gpu, memory=handle.gpu.util_mem)

    def nvmlDeviceGetSamples(self, device, sampling_type, timeStamp):
        self._check("nvmlDeviceGetSamples", device)
        fresh = _newer(self._samples.get((device.index, sampling_type)), timeStamp)
        if not fresh:
            raise NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, fresh)

    def nvmlDeviceGetPowerUsage(self, handle):
        self._check("nvmlDeviceGetPowerUsage", handle)
        return int(round(handle.gpu.power_w * 1000))

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        self._check("nvmlDeviceGetTotalEnergyConsumption", handle)
        return handle.gpu.energy_mj

    def nvmlDeviceGetTemperature(self, handle, sensor):
        self._check("nvmlDeviceGetTemperature", handle)
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return handle.gpu.temperature_c

    def nvmlDeviceGetClockInfo(self, handle, type):  # noqa: A002 (pynvml's parameter name)
        self._check("nvmlDeviceGetClockInfo", handle)
        clocks = {pynvml.NVML_CLOCK_SM: handle.gpu.sm_clock_mhz,
                  pynvml.NVML_CLOCK_GRAPHICS: handle.gpu.sm_clock_mhz,
                  pynvml.NVML_CLOCK_MEM: handle.gpu.mem_clock_mhz}
        if type not in clocks:
            raise NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return clocks[type]

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        self._check("nvmlDeviceGetCurrentClocksEventReasons", handle)
        return handle.gpu.clocks_event_reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        self._check("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
        return handle.gpu.clocks_event_reasons

    def nvmlDeviceGetTotalEccErrors(self, handle, errorType, counterType):
        self._check("nvmlDeviceGetTotalEccErrors", handle)
        return handle.gpu.ecc.get((errorType, counterType), 0)

    # ---- MIG --------------------------------------------------------------------------
    def nvmlDeviceGetMigMode(self, device):
        self._check("nvmlDeviceGetMigMode", device)
        if device.gpu.mig is None and not device.gpu.mig_capable:
            raise NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        mode = pynvml.NVML_DEVICE_MIG_ENABLE if device.gpu.mig is not None else 0
        return [mode, mode]

    def nvmlDeviceGetMaxMigDeviceCount(self, device):
        self._check("nvmlDeviceGetMaxMigDeviceCount", device)
        return device.gpu.max_mig_devices if device.gpu.mig_capable or device.gpu.mig else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device, index):
        self._check("nvmlDeviceGetMigDeviceHandleByIndex", device)
        migs = device.gpu.mig or []
        if index >= len(migs):
            raise NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return self._handle(device.index, migs[index])

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, migDevice):
        self._check("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice)
        return self._handle(migDevice.index)

    def nvmlDeviceGetGpuInstanceId(self, device):
        self._check("nvmlDeviceGetGpuInstanceId", device)
        if device.mig is None:
            raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return device.mig.gpu_instance_id

    def nvmlDeviceGetAttributes(self, device):
        self._check("nvmlDeviceGetAttributes", device)
        attrs = pynvml.c_nvmlDeviceAttributes()
        if device.mig is not None:
            attrs.gpuInstanceSliceCount = device.mig.slices
            attrs.computeInstanceSliceCount = device.mig.slices
            attrs.memorySizeMB = device.mig.memory_total // MIB
        return attrs

    # ---- processes --------------------------------------------------------------------
    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        self._check("nvmlDeviceGetComputeRunningProcesses", handle)
        if handle.mig is not None:
            gi, ci, procs = (handle.mig.gpu_instance_id, handle.mig.compute_instance_id,
                             handle.mig.processes)
        else:
            gi, ci, procs = _NO_INSTANCE, _NO_INSTANCE, handle.gpu.processes
        return [pynvml.nvmlFriendlyObject({"pid": p.pid, "usedGpuMemory": p.used_memory,
                                           "gpuInstanceId": gi, "computeInstanceId": ci})
                for p in procs]

    def nvmlDeviceGetProcessUtilization(self, handle, timeStamp):
        self._check("nvmlDeviceGetProcessUtilization", handle)
        fresh = _newer(self._proc_samples.get(handle.index), timeStamp)
        if not fresh:
            raise NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return fresh

    # ---- events -----------------------------------------------------------------------
    def nvmlEventSetCreate(self):
        self._check("nvmlEventSetCreate")
        es = _EventSet()
        self._event_sets.append(es)
        return es

    def nvmlDeviceRegisterEvents(self, handle, eventTypes, eventSet):
        self._check("nvmlDeviceRegisterEvents", handle)
        eventSet.devices[handle.index] = eventSet.devices.get(handle.index, 0) | eventTypes

    def nvmlEventSetWait(self, eventSet, timeoutms):
        self._check("nvmlEventSetWait")
        if not eventSet.queue:
            raise NVMLError(pynvml.NVML_ERROR_TIMEOUT)
        return eventSet.queue.pop(0)

    def nvmlEventSetFree(self, eventSet):
        self._check("nvmlEventSetFree")
        if eventSet in self._event_sets:
            self._event_sets.remove(eventSet)


def _copy_module_constants() -> None:
    """Give FakeNvml pynvml's constants and NVMLError classes, so code written against the
    module (``nvml.NVML_CLOCK_SM``, ``except nvml.NVMLError_NotSupported``) runs unchanged."""
    for name in dir(pynvml):
        if name.startswith(("NVML_", "NVMLError", "nvmlEventType", "nvmlClocksEventReason",
                            "nvmlClocksThrottleReason", "nvmlMemory_v")) and not hasattr(FakeNvml, name):
            setattr(FakeNvml, name, getattr(pynvml, name))


_copy_module_constants()


def _push(ring: tuple[list, list], t: int, item) -> None:
    """Append to a (timestamps, samples) ring, keeping the newest _BUFFER entries."""
    times, items = ring
    times.append(t)
    items.append(item)
    if len(items) > 2 * _BUFFER:
        del times[:-_BUFFER], items[:-_BUFFER]


def _newer(ring: tuple[list, list] | None, t: int) -> list:
    """The last _BUFFER samples of a ring that are newer than ``t``."""
    if ring is None:
        return []
    times, items = ring
    start = max(bisect.bisect_right(times, t), len(items) - _BUFFER)
    return items[start:]
