"""The NVML sampler: one ``GpuSample`` per GPU and per MIG device, every round.

Built once by the agent's composition root::

    import pynvml
    sampler = NvmlSampler(nvml=pynvml, host="gpu-node-1",
                          labels={"environment": "onprem", "cluster": "berlin", "pool": "h100"},
                          owner_of=owner_lookup)          # pid -> collector.owners.Owner
    round_ = sampler.sample()      # round_.samples, round_.processes, round_.events

The same code runs on a real GPU (``import pynvml``) and in tests (``collector.fake_nvml``).

What a round holds:

* a row per physical GPU (``mig_instance`` = '') and per MIG device (``mig_instance`` = its
  GPU-instance id, ``mig_profile`` such as ``1g.10gb``, same ``gpu_uuid`` as its GPU). Power,
  energy, temperature, clocks and ECC belong to the physical GPU and appear on its row only;
  NVML has no utilization for MIG devices or for a GPU in MIG mode (None there);
* utilization averaged over the interval from NVML's sample buffer;
* ``process_count`` and a ``GpuProcess`` per compute process, with its owner; the sample's
  owner fields are those of the process using the most GPU memory;
* XID critical errors seen since the last round: ``xid_count`` / ``xid_last`` on the MIG row
  the XID names, else on the GPU's row, and one ``GpuHealthEvent(kind="xid")`` each;
* a ``GpuHealthEvent(kind="gpu_lost")`` when a GPU stops answering (it is then retried every
  round, and ``gpu_recovered`` is emitted when it answers again). The other GPUs are sampled
  as usual. A lost GPU has no row: missing data, not zeros.
"""
from __future__ import annotations

import socket
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from base.errors import GpuLost, NvmlUnavailable, UnknownLabel
from collector.nvml_events import XidEvent, XidWatcher, handle_key
from collector.nvml_fields import Entity, FieldReader, decode, mig_profile_of, read_memory, read_physical, read_utilization
from collector.nvml_processes import read_processes
from collector.records import GpuHealthEvent, GpuProcess, GpuSample

LABEL_COLUMNS = ("environment", "region", "cluster", "pool", "instance_id", "instance_type")
OWNER_COLUMNS = ("team", "user", "job_id", "k8s_namespace", "k8s_pod", "k8s_container", "slurm_account")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def load_pynvml():
    """The real NVML binding (nvidia-ml-py); tests pass a ``FakeNvml`` loader instead."""
    import pynvml

    return pynvml


@dataclass
class SampleRound:
    """What one call to :meth:`NvmlSampler.sample` produced."""
    ts: datetime
    samples: list[GpuSample]
    processes: list[GpuProcess]
    events: list[GpuHealthEvent]
    # memory the driver and firmware reserve, by (gpu_uuid, mig_instance), where NVML tells it:
    # not stored, exposed on /metrics as dcgm-exporter's DCGM_FI_DEV_FB_RESERVED
    reserved_bytes: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass
class SamplerStats:
    """The agent's own health, exposed as ``gpuledger_agent_*`` metrics."""
    rounds: int = 0
    samples_total: int = 0
    field_errors: Counter = field(default_factory=Counter)
    gpus: int = 0
    gpus_lost: int = 0
    last_round_seconds: float = 0.0


@dataclass(eq=False)
class _Gpu(Entity):
    index: int = 0
    uuid: str = ""
    model: str = ""
    pci_bus_id: str = ""
    mig_enabled: bool = False
    migs: dict[int, Entity] = field(default_factory=dict)
    lost: bool = False
    lost_reported: bool = False
    lost_code: int | None = None


def ms_datetime(seconds: float) -> datetime:
    """UTC datetime truncated to the millisecond (the store keeps DateTime64(3))."""
    return _EPOCH + timedelta(milliseconds=round(seconds * 1000))


class NvmlSampler:
    """Samples every GPU NVML sees; see the module docstring."""

    def __init__(self, nvml, clock=time.time, host: str | None = None,
                 labels: dict[str, str] | None = None, owner_of=None,
                 timer=time.perf_counter):
        unknown = set(labels or {}) - set(LABEL_COLUMNS)
        if unknown:
            raise UnknownLabel(f"sampler label(s) {sorted(unknown)} are not gpu_samples "
                               f"columns; use only {', '.join(LABEL_COLUMNS)}")
        self._nvml, self._clock, self._timer = nvml, clock, timer
        self.host = host or socket.gethostname()
        self._labels = dict(labels or {})
        self._owner_of = owner_of
        self.stats = SamplerStats()
        self._init_library()
        self._reader = FieldReader(nvml, self.stats.field_errors)
        self._xid = XidWatcher(nvml, self.stats.field_errors)
        self._driver, self._cuda = self._versions()
        self._gpus = [self._new_gpu(i) for i in range(nvml.nvmlDeviceGetCount())]
        self._by_handle: dict[int, _Gpu] = {}
        self._names: dict[int, str] = {}
        self._owners: dict[int, object] = {}
        self._reserved: dict[tuple[str, str], int] = {}      # this round's, by (gpu_uuid, mig_instance)
        self.stats.gpus = len(self._gpus)

    # ---- start and stop ---------------------------------------------------------------
    def _init_library(self) -> None:
        n = self._nvml
        try:
            n.nvmlInit()
        except (n.NVMLError_LibraryNotFound, n.NVMLError_DriverNotLoaded) as e:
            raise NvmlUnavailable(
                f"NVML is not available on {self.host} ({e}): no NVIDIA driver is loaded here. "
                "Install the NVIDIA driver (libnvidia-ml.so.1), or in a container run with the "
                "NVIDIA container toolkit (--gpus all / runtimeClassName: nvidia). The agent "
                "keeps serving its endpoint without GPU samples.") from e
        except n.NVMLError_NoPermission as e:
            raise NvmlUnavailable(
                f"NVML refused access on {self.host} ({e}): run the agent as a user that can "
                "open /dev/nvidia*.") from e
        except n.NVMLError_LibRmVersionMismatch as e:
            raise NvmlUnavailable(
                f"NVML library and kernel driver versions differ on {self.host} ({e}): the "
                "driver was upgraded without reloading it; reboot the node or reload the "
                "nvidia kernel modules.") from e

    def _versions(self) -> tuple[str, str]:
        n = self._nvml
        try:
            driver = decode(n.nvmlSystemGetDriverVersion())
        except n.NVMLError:
            driver = ""
        try:
            v = int(n.nvmlSystemGetCudaDriverVersion_v2())
            cuda = f"{v // 1000}.{v % 1000 // 10}"
        except n.NVMLError:
            cuda = ""
        return driver, cuda

    def close(self) -> None:
        """Free the event set and shut NVML down."""
        self._xid.close()
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- discovery --------------------------------------------------------------------
    def _new_gpu(self, index: int) -> _Gpu:
        gpu = _Gpu(handle=None, index=index, lost=True)
        try:
            self._discover(gpu)
        except GpuLost as e:
            gpu.lost_code = e.code
        return gpu

    def _discover(self, gpu: _Gpu) -> None:
        """(Re)acquire a GPU's handle and static facts; raises GpuLost if it does not answer."""
        n, r = self._nvml, self._reader
        try:
            gpu.handle = n.nvmlDeviceGetHandleByIndex(gpu.index)
        except n.NVMLError as e:   # lost, or the device node vanished: retried next round
            raise GpuLost(e.value) from e
        gpu.unsupported.clear()
        gpu.uuid = decode(r.get(gpu, "uuid", n.nvmlDeviceGetUUID, gpu.handle) or "")
        gpu.model = decode(r.get(gpu, "model", n.nvmlDeviceGetName, gpu.handle) or "")
        pci = r.get(gpu, "pci_bus_id", n.nvmlDeviceGetPciInfo, gpu.handle)
        gpu.pci_bus_id = decode(pci.busId) if pci is not None else ""
        gpu.migs.clear()
        gpu.lost = False
        self._xid.register(gpu.handle)

    def _refresh_migs(self, gpu: _Gpu) -> list[Entity]:
        """The GPU's MIG devices now, keeping per-device state across rounds."""
        n, r = self._nvml, self._reader
        mode = r.get(gpu, "mig_mode", n.nvmlDeviceGetMigMode, gpu.handle)
        gpu.mig_enabled = bool(mode) and mode[0] == n.NVML_DEVICE_MIG_ENABLE
        if not gpu.mig_enabled:
            gpu.migs.clear()
            return []
        found: dict[int, Entity] = {}
        for i in range(r.get(gpu, "mig_count", n.nvmlDeviceGetMaxMigDeviceCount, gpu.handle) or 0):
            try:
                h = n.nvmlDeviceGetMigDeviceHandleByIndex(gpu.handle, i)
            except n.NVMLError_NotFound:
                continue
            except (n.NVMLError_GpuIsLost, n.NVMLError_Unknown) as e:
                raise GpuLost(e.value) from e
            gi = r.get(gpu, "mig_instance", n.nvmlDeviceGetGpuInstanceId, h)
            if gi is None:
                continue
            gi = int(gi)
            ent = gpu.migs.get(gi) or self._new_mig(h, gi)
            ent.handle = h
            found[gi] = ent
        gpu.migs = found
        return list(found.values())

    def _new_mig(self, handle, gi: int) -> Entity:
        ent = Entity(handle=handle, mig_instance=str(gi))
        name = decode(self._reader.get(ent, "model", self._nvml.nvmlDeviceGetName, handle) or "")
        attrs = None
        if " MIG " not in name:
            attrs = self._reader.get(ent, "mig_attributes", self._nvml.nvmlDeviceGetAttributes,
                                     handle)
        ent.mig_profile = mig_profile_of(name, attrs)
        return ent

    # ---- a round ----------------------------------------------------------------------
    def sample(self) -> SampleRound:
        """Sample every GPU once. Never raises for one GPU's trouble."""
        started = self._timer()
        ts = ms_datetime(self._clock())
        samples: list[GpuSample] = []
        processes: list[GpuProcess] = []
        events: list[GpuHealthEvent] = []
        xids = self._xids_by_gpu(ts, events)
        seen_pids: set[int] = set()
        self._reserved = {}
        for gpu in self._gpus:
            rows, procs = self._sample_one(gpu, ts, xids.get(gpu.index, []), events)
            samples.extend(rows)
            processes.extend(procs)
            seen_pids.update(p.pid for p in procs)
        self._forget_processes(seen_pids)
        st = self.stats
        st.rounds += 1
        st.samples_total += len(samples)
        st.gpus_lost = sum(g.lost for g in self._gpus)
        st.last_round_seconds = self._timer() - started
        return SampleRound(ts, samples, processes, events, self._reserved)

    def _sample_one(self, gpu: _Gpu, ts, xids: list[XidEvent], events) -> tuple[list, list]:
        try:
            if gpu.lost:
                self._discover(gpu)
            if gpu.lost_reported:
                gpu.lost_reported = False
                events.append(self._event(ts, gpu, "gpu_recovered", None, "GPU answers again"))
            return self._sample_gpu(gpu, ts, xids)
        except GpuLost as e:
            gpu.lost = True
            if not gpu.lost_reported:
                gpu.lost_reported = True
                events.append(self._event(ts, gpu, "gpu_lost", e.code,
                                          "NVML reports the GPU lost or in an unknown state; "
                                          "check `nvidia-smi` and the kernel log (XID 79: "
                                          "fallen off the bus) and drain the node if it persists"))
            return [], []

    def _sample_gpu(self, gpu: _Gpu, ts, xids: list[XidEvent]) -> tuple[list, list]:
        migs = self._refresh_migs(gpu)
        rows, procs = [], []
        for ent in migs:
            procs_ent = read_processes(self._reader, ent)
            rows.append(self._row(gpu, ent, ts, procs_ent, {}, procs))
        row_values = read_physical(self._reader, gpu)
        gpu_procs = None if migs else read_processes(self._reader, gpu)
        parent = self._row(gpu, gpu, ts, gpu_procs, row_values, procs)
        if migs:
            counts = [r.process_count for r in rows]
            parent.process_count = None if None in counts else sum(counts)
        self._apply_xids(gpu, parent, rows, xids)
        return [parent, *rows], procs

    def _row(self, gpu: _Gpu, ent: Entity, ts, seen, physical: dict, procs_out: list):
        util_gpu, util_mem = read_utilization(self._reader, ent) if not gpu.mig_enabled \
            else (None, None)
        used, total, reserved = read_memory(self._reader, ent)
        if reserved is not None:
            self._reserved[(gpu.uuid, ent.mig_instance)] = reserved
        row = GpuSample(
            ts=ts, host=self.host, gpu_uuid=gpu.uuid, gpu_index=gpu.index,
            mig_instance=ent.mig_instance, mig_profile=ent.mig_profile, model=gpu.model,
            pci_bus_id=gpu.pci_bus_id, driver_version=self._driver, cuda_version=self._cuda,
            util_gpu=util_gpu, util_mem=util_mem, mem_used_bytes=used, mem_total_bytes=total,
            process_count=None if seen is None else len(seen), source="nvml",
            **self._labels, **physical)
        if seen:
            self._attach_processes(row, seen, procs_out)
        return row

    def _attach_processes(self, row: GpuSample, seen, procs_out: list) -> None:
        top = None
        for p in seen:
            owner = self._owner(p.pid)
            rec = GpuProcess(ts=row.ts, host=row.host, gpu_uuid=row.gpu_uuid, pid=p.pid,
                             mig_instance=row.mig_instance, process_name=self._name(p.pid),
                             used_memory_bytes=p.used_memory_bytes, sm_util=p.sm_util,
                             mem_util=p.mem_util)
            if owner is not None:
                rec.container_id = getattr(owner, "container_id", "")
                for col in OWNER_COLUMNS:
                    setattr(rec, col, getattr(owner, col, ""))
                if top is None or (p.used_memory_bytes or 0) > (top[0].used_memory_bytes or 0):
                    top = (p, owner)
            procs_out.append(rec)
        if top is not None:
            for col in OWNER_COLUMNS:
                setattr(row, col, getattr(top[1], col, ""))
            row.image = getattr(top[1], "image", "") or ""

    # ---- XID --------------------------------------------------------------------------
    def _xids_by_gpu(self, ts, events: list) -> dict[int, list[XidEvent]]:
        out: dict[int, list[XidEvent]] = {}
        drained = self._xid.drain()
        if drained:
            self._by_handle = {handle_key(g.handle): g for g in self._gpus if g.handle}
        for ev in drained:
            gpu = self._by_handle.get(handle_key(ev.device)) or self._gpu_by_uuid(ev.device)
            if gpu is None:
                self.stats.field_errors["xid"] += 1
                continue
            out.setdefault(gpu.index, []).append(ev)
            mig = str(ev.gpu_instance_id) if ev.gpu_instance_id is not None else ""
            events.append(GpuHealthEvent(ts=ts, host=self.host, gpu_uuid=gpu.uuid,
                                         gpu_index=gpu.index, mig_instance=mig, kind="xid",
                                         code=ev.xid, detail=f"XID {ev.xid}"))
        return out

    def _gpu_by_uuid(self, handle) -> _Gpu | None:
        try:
            uuid = decode(self._nvml.nvmlDeviceGetUUID(handle))
        except self._nvml.NVMLError:
            return None
        return next((g for g in self._gpus if g.uuid == uuid), None)

    @staticmethod
    def _apply_xids(gpu: _Gpu, parent: GpuSample, rows: list, xids: list[XidEvent]) -> None:
        by_mig = {r.mig_instance: r for r in rows}
        for ev in xids:
            row = by_mig.get(str(ev.gpu_instance_id), parent) \
                if ev.gpu_instance_id is not None else parent
            row.xid_count += 1
            row.xid_last = ev.xid

    # ---- per-process caches -----------------------------------------------------------
    def _name(self, pid: int) -> str:
        if pid not in self._names:
            try:
                self._names[pid] = decode(self._nvml.nvmlSystemGetProcessName(pid))
            except self._nvml.NVMLError:
                self._names[pid] = ""
        return self._names[pid]

    def _owner(self, pid: int):
        if self._owner_of is None:
            return None
        owner = self._owners.get(pid)
        if owner is None:
            owner = self._owner_of(pid)
            if owner is not None and getattr(owner, "resolved", True):
                self._owners[pid] = owner   # partly unresolved owners are asked again
        return owner

    def _forget_processes(self, seen: set[int]) -> None:
        """Drop cached names/owners of processes that are gone (pids get reused)."""
        for cache in (self._names, self._owners):
            for pid in [p for p in cache if p not in seen]:
                del cache[pid]

    def _event(self, ts, gpu: _Gpu, kind: str, code, detail: str) -> GpuHealthEvent:
        return GpuHealthEvent(ts=ts, host=self.host, gpu_uuid=gpu.uuid, gpu_index=gpu.index,
                              kind=kind, code=code, detail=detail)
