"""Realistic FakeGpu builders, with figures taken from real captures.

Sources (``/work/shared/data/nvidia_smi``, see its SOURCES.md): ``h100_mig_capture.txt``
(``nvidia-smi -q`` of an H100 80GB HBM3, driver 590.48.01, CUDA 13.1, MIG 3g.40gb + 2g.20gb +
2x 1g.10gb on GPU instances 2, 3, 9, 10), ``l40s_capture.txt`` (L40S, driver 595.80, CUDA 13.2)
and ``a100_mig_q_x.xml`` (A100-SXM4-80GB, driver 535.54.03, CUDA 12.2, 4x 1g.20gb on GPU
instances 3-6). Memory totals are what NVML reports (a little below the marketing size); idle
memory used and reserved are the captures' "FB Memory Usage".

Each builder takes ``index`` and an optional ``seed`` so a simulator can make thousands of
distinct GPUs: UUIDs and PCI bus ids are derived deterministically from them.
"""
from __future__ import annotations

import hashlib

from collector.fake_nvml import MIB, FakeGpu, FakeMig

DRIVER_H100_CAPTURE = ("590.48.01", 13010)
DRIVER_L40S_CAPTURE = ("595.80", 13020)
DRIVER_A100_CAPTURE = ("535.54.03", 12020)

# Bus numbers of an 8-GPU HGX board (from a real dcgm-exporter scrape of an 8x H100 node).
_HGX_BUSES = ("53", "64", "75", "86", "97", "A8", "B9", "CA")


def fake_uuid(prefix: str, *parts) -> str:
    """A stable NVML-style UUID (``GPU-8-4-4-4-12`` hex) derived from ``parts``."""
    h = hashlib.sha1(repr(parts).encode()).hexdigest()
    return f"{prefix}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _bus_id(index: int, seed) -> str:
    """``domain:bus:device.function`` as NVML prints it; the seed picks the PCI domain."""
    domain = 0 if seed is None else int(hashlib.sha1(repr(seed).encode()).hexdigest()[:4], 16)
    return f"{domain:08X}:{_HGX_BUSES[index % 8]}:00.0"


def h100_80gb(index: int = 0, seed=None, **values) -> FakeGpu:
    """NVIDIA H100 80GB HBM3, not in MIG mode: 700 W limit, SM 1980 MHz, HBM3 2619 MHz."""
    return FakeGpu(**{**dict(name="NVIDIA H100 80GB HBM3",
                             uuid=fake_uuid("GPU", "h100", index, seed),
                             pci_bus_id=_bus_id(index, seed), memory_total=81559 * MIB,
                             memory_used=59 * MIB, memory_reserved=479 * MIB, power_w=69.5, temperature_c=29,
                             sm_clock_mhz=1980, mem_clock_mhz=2619, mig_capable=True),
                      **values})


def h100_80gb_mig(index: int = 0, seed=None, **values) -> FakeGpu:
    """H100 80GB in MIG mode with the capture's layout: 3g.40gb, 2g.20gb, 1g.10gb x2."""
    layout = ((2, "3g.40gb", 3, 40448), (3, "2g.20gb", 2, 20096),
              (9, "1g.10gb", 1, 9984), (10, "1g.10gb", 1, 9984))
    gpu = h100_80gb(index, seed, **values)
    gpu.mig = [FakeMig(gpu_instance_id=gi, profile=prof, slices=sl, memory_total=mib * MIB,
                       memory_used=9 * MIB, uuid=fake_uuid("MIG", gpu.uuid, gi))
               for gi, prof, sl, mib in layout]
    return gpu


def l40s(index: int = 0, seed=None, **values) -> FakeGpu:
    """NVIDIA L40S (Ada, no MIG): 350 W limit, graphics 2520 MHz, GDDR6 9001 MHz, 46068 MiB."""
    return FakeGpu(**{**dict(name="NVIDIA L40S", uuid=fake_uuid("GPU", "l40s", index, seed),
                             pci_bus_id=_bus_id(index, seed), memory_total=46068 * MIB,
                             memory_reserved=609 * MIB, power_w=34.0, temperature_c=38, sm_clock_mhz=2520,
                             mem_clock_mhz=9001),
                      **values})


def a100_80gb_mig(index: int = 0, seed=None, **values) -> FakeGpu:
    """NVIDIA A100-SXM4-80GB in MIG mode, 4x 1g.20gb (GPU instances 3-6): 500 W, 1275/1593 MHz."""
    gpu = FakeGpu(**{**dict(name="NVIDIA A100-SXM4-80GB",
                            uuid=fake_uuid("GPU", "a100", index, seed),
                            pci_bus_id=_bus_id(index, seed), memory_total=81920 * MIB,
                            memory_used=50 * MIB, memory_reserved=869 * MIB, power_w=67.03, temperature_c=27,
                            sm_clock_mhz=1275, mem_clock_mhz=1593, mig_capable=True),
                     **values})
    gpu.mig = [FakeMig(gpu_instance_id=gi, profile="1g.20gb", slices=1,
                       memory_total=19968 * MIB, memory_used=12 * MIB,
                       uuid=fake_uuid("MIG", gpu.uuid, gi)) for gi in (3, 4, 5, 6)]
    return gpu
