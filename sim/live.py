"""A fake NVML for one simulated host that follows the fleet's state as a clock advances.

``live_nvml(fleet, host, clock)`` returns a :class:`collector.fake_nvml.FakeNvml` whose GPUs
(and MIG devices) are those of ``host`` in the fleet. Before answering any ``nvml*`` call it
reads ``clock()`` and, when time has moved, sets every value (utilization, memory, power,
temperature, clocks, clock-event reasons, ECC counters, processes) to what the simulator's
samples hold at that instant, then lets the fake's time pass so its utilization buffer and
energy counter advance. Pass it where the real module goes::

    nvml = live_nvml(fleet, "dgx-h100-01", clock=time.time)
    sampler = NvmlSampler(nvml=nvml, clock=time.time, host="dgx-h100-01")

Values are those of ``sample_frames`` rows on the same ``interval_s`` grid (the round's
instant floored to it); the energy counter is integrated by the fake itself. Without ``end``
the host follows the normal workload only; with ``days``/``end`` it carries the planted problems
of that history too and matches its samples exactly. XIDs are injected as NVML events at
their instant. A cloud host whose instance is stopped answers ``GPU_IS_LOST`` on every GPU.
"""
from __future__ import annotations

import zlib
from collections.abc import Callable
from datetime import datetime

import pynvml

from collector.fake_gpu_models import fake_uuid
from collector.fake_nvml import MIB, FakeGpu, FakeMig, FakeNvml, FakeProcess

from .catalog import MODELS
from .fleet import Fleet
from .frames import day_frame, entity_table
from .planted import health_event, overlays, planted_windows
from .timeline import Timeline, resolve_window

ECC_KEYS = ((pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_VOLATILE_ECC, "ecc_corrected_volatile"),
            (pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC, "ecc_uncorrected_volatile"),
            (pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_AGGREGATE_ECC, "ecc_corrected_aggregate"),
            (pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_AGGREGATE_ECC, "ecc_uncorrected_aggregate"))


class LiveNvml(FakeNvml):
    """A FakeNvml that re-reads the fleet state whenever its clock has moved."""

    def __init__(self, fleet: Fleet, host: str, clock: Callable[[], float],
                 days: int = 30, end: datetime | None = None, interval_s: int = 60):
        h = fleet.host(host)
        self.fleet, self.host_name, self.wall = fleet, host, clock
        self.entities = [k for k, e in enumerate(fleet.entities) if e.host == host]
        self.window = resolve_window(days, interval_s, end) if end is not None else None
        self.interval_s = interval_s
        self.table = entity_table(fleet)
        self.timeline: Timeline | None = None
        self._day = None
        super().__init__(_fake_gpus(fleet, self.entities), driver_version=h.driver,
                         cuda_version=_cuda_int(h.cuda), start_s=float(int(clock())))
        self._apply(self._rows_at(int(self.clock())))
        for name in dir(FakeNvml):
            if name.startswith("nvml") and callable(getattr(FakeNvml, name)):
                setattr(self, name, self._synced(getattr(super(), name)))

    def _synced(self, method):
        def call(*args, **kwargs):
            self.sync()
            return method(*args, **kwargs)
        call.__name__ = method.__name__
        return call

    def sync(self) -> None:
        """Bring the GPUs to the fleet state at ``clock()`` and advance the fake's time."""
        now = int(self.wall())
        if now <= self.clock():
            return
        rows = self._rows_at(now)
        self._apply(rows)
        self.advance(now - self.clock())

    def _rows_at(self, now: int):
        """The host's sample rows at ``now`` on the history's grid (one day computed at once)."""
        d0, d1 = self._day_bounds(now)
        if self._day is None or self._day[0] != d0:
            self._day = (d0, self._host_day(d0, d1))
        frame = self._day[1]
        at = now // self.interval_s * self.interval_s * 1000
        return frame[frame["ts_ms"] == at]

    def _day_bounds(self, now: int) -> tuple[int, int]:
        """The calendar day holding ``now``, cut as ``sample_frames`` cuts it inside the window."""
        d0 = now // 86400 * 86400
        w = self.window
        if w is None or not w.start <= now < w.end:
            return d0, d0 + 86400
        return max(d0, w.start), min(d0 + 86400, w.end)

    def _host_day(self, d0: int, d1: int):
        if self.timeline is None or not self.timeline.origin <= d0 < d1 <= self.timeline.stop:
            if self.window is not None:
                w = self.window
                self.timeline = Timeline(self.fleet, min(w.start, d0), max(w.end, d1),
                                         overlays(planted_windows(self.fleet, w)))
            else:
                self.timeline = Timeline(self.fleet, d0, d1)
        health = health_event(self.fleet, self.window) if self.window is not None else (-1, 0)
        frame = day_frame(self.fleet, self.timeline, self.table, self.table.energy_start.copy(),
                          health, d0, d1, self.interval_s)
        frame = frame[frame["host"] == self.host_name]
        return frame.assign(ts_ms=frame["ts"].astype("int64"))

    def _apply(self, rows) -> None:
        by_gpu: dict[int, list[dict]] = {}
        for row in rows.to_dict("records"):
            by_gpu.setdefault(int(row["gpu_index"]), []).append(row)
        for index, gpu in enumerate(self.gpus):
            slices = by_gpu.get(index, [])
            gpu.lost = not slices
            if slices:
                _set_gpu(gpu, slices)
                for row in slices:
                    if row["xid_count"]:
                        self.inject_xid(index, int(row["xid_last"]))


def live_nvml(fleet: Fleet, host: str, clock: Callable[[], float], days: int = 30,
              end: datetime | None = None, interval_s: int = 60) -> LiveNvml:
    """A fake NVML for ``host`` whose values follow the fleet state at ``clock()``."""
    return LiveNvml(fleet, host, clock, days=days, end=end, interval_s=interval_s)


def _fake_gpus(fleet: Fleet, entities: list[int]) -> list[FakeGpu]:
    gpus: dict[int, FakeGpu] = {}
    for k in entities:
        e = fleet.entities[k]
        model = MODELS[e.model]
        gpu = gpus.get(e.gpu_index)
        if gpu is None:
            gpu = gpus[e.gpu_index] = FakeGpu(
                name=model.name, uuid=e.gpu_uuid, pci_bus_id=e.pci_bus_id,
                memory_total=model.mem_mib * MIB, sm_clock_mhz=model.sm_idle_mhz,
                mem_clock_mhz=model.mem_mhz, power_w=model.idle_w,
                mig_capable=e.model in ("H100", "A100-80", "A100-40", "A100-PCIE-80"),
                mig=[] if e.mig_instance else None)
        if e.mig_instance:
            gpu.mig.append(FakeMig(gpu_instance_id=int(e.mig_instance), profile=e.mig_profile,
                                   uuid=fake_uuid("MIG", e.gpu_uuid, e.mig_instance),
                                   memory_total=e.mem_mib * MIB, slices=int(e.mig_profile[0])))
    return [gpus[i] for i in sorted(gpus)]


def _set_gpu(gpu: FakeGpu, rows: list[dict]) -> None:
    """Set a physical GPU from its sample row(s): one row, or one per MIG instance."""
    first = rows[0]
    gpu.util_gpu = int(round(max(r["util_gpu"] for r in rows)))
    gpu.util_mem = int(round(max(r["util_mem"] for r in rows)))
    gpu.power_w = float(sum(r["power_w"] for r in rows))
    gpu.temperature_c = int(max(r["temperature_c"] for r in rows))
    gpu.sm_clock_mhz, gpu.mem_clock_mhz = int(first["sm_clock_mhz"]), int(first["mem_clock_mhz"])
    gpu.clocks_event_reasons = int(min(r["throttle_reasons"] for r in rows))
    gpu.memory_used = int(sum(r["mem_used_bytes"] for r in rows))
    gpu.ecc = {(t, c): int(first[col]) for t, c, col in ECC_KEYS}
    if gpu.mig is None:
        gpu.processes = _processes(first)
        return
    for mig, row in zip(gpu.mig, rows):
        mig.memory_used = int(row["mem_used_bytes"])
        mig.processes = _processes(row)


def _processes(row: dict) -> list[FakeProcess]:
    if not row["process_count"]:
        return []
    pid = 1000 + zlib.crc32(row["job_id"].encode()) % 60000
    return [FakeProcess(pid=pid, used_memory=int(row["mem_used_bytes"]),
                        sm_util=int(round(row["util_gpu"])), mem_util=int(round(row["util_mem"])))]


def _cuda_int(version: str) -> int:
    """``"12.4"`` -> 12040, as nvmlSystemGetCudaDriverVersion_v2 returns it."""
    major, minor = version.split(".")[:2]
    return int(major) * 1000 + int(minor) * 10
