"""The fake must look like nvidia-ml-py to the code that uses it."""
from __future__ import annotations

import inspect

import pynvml
import pytest

from collector import fake_gpu_models as models
from collector.fake_nvml import MIB, FakeNvml

NVML_METHODS = sorted(n for n, v in vars(FakeNvml).items()
                      if n.startswith("nvml") and inspect.isfunction(v))


def test_the_fake_implements_the_calls_the_sampler_makes():
    import re

    import collector.nvml
    import collector.nvml_events
    import collector.nvml_fields
    import collector.nvml_processes
    used = set()
    for mod in (collector.nvml, collector.nvml_events, collector.nvml_fields,
                collector.nvml_processes):
        used |= set(re.findall(r"\.(nvml[A-Z]\w+)", inspect.getsource(mod)))
    used = {u for u in used if not u.startswith("nvmlEventType")}
    assert used <= set(NVML_METHODS), used - set(NVML_METHODS)


@pytest.mark.parametrize("name", NVML_METHODS)
def test_same_signature_as_pynvml(name):
    real = inspect.signature(inspect.unwrap(getattr(pynvml, name)))
    fake = inspect.signature(getattr(FakeNvml, name))
    assert list(fake.parameters)[1:] == list(real.parameters), name


def test_errors_are_pynvml_exception_classes():
    fake = FakeNvml([models.l40s(0, fail={"nvmlDeviceGetPowerUsage":
                                          pynvml.NVML_ERROR_NOT_SUPPORTED})])
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()
    fake.nvmlInit()
    h = fake.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        fake.nvmlDeviceGetPowerUsage(h)
    with pytest.raises(pynvml.NVMLError_Timeout):
        fake.nvmlEventSetWait(fake.nvmlEventSetCreate(), 0)
    assert fake.NVMLError_GpuIsLost is pynvml.NVMLError_GpuIsLost
    assert fake.NVML_CLOCK_SM == pynvml.NVML_CLOCK_SM


def test_return_structs_have_pynvml_shapes():
    gpu = models.h100_80gb_mig(0)
    fake = FakeNvml([gpu, models.l40s(1, util_gpu=42)])
    fake.nvmlInit()
    fake.advance(3)
    h100, l40s = fake.nvmlDeviceGetHandleByIndex(0), fake.nvmlDeviceGetHandleByIndex(1)
    # the capture's "FB Memory Usage": Total 81559, Reserved 479, Used 59 MiB; NVML's v1 call
    # counts the reserved memory as used (an idle H100 80GB on driver 580 answered 480 MiB)
    mem = fake.nvmlDeviceGetMemoryInfo(h100)
    assert isinstance(mem, pynvml.c_nvmlMemory_t)
    assert (mem.total, mem.used, mem.free) == (81559 * MIB, (479 + 59) * MIB, 81021 * MIB)
    mem = fake.nvmlDeviceGetMemoryInfo(h100, pynvml.nvmlMemory_v2)
    assert isinstance(mem, pynvml.c_nvmlMemory_v2_t) and mem.version == pynvml.nvmlMemory_v2
    assert (mem.total, mem.reserved, mem.used, mem.free) == (81559 * MIB, 479 * MIB, 59 * MIB, 81021 * MIB)
    pci = fake.nvmlDeviceGetPciInfo(h100)
    assert pci.busId == "00000000:53:00.0" and (pci.domain, pci.bus, pci.device) == (0, 0x53, 0)
    vtype, samples = fake.nvmlDeviceGetSamples(l40s, pynvml.NVML_GPU_UTILIZATION_SAMPLES, 0)
    assert vtype == pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
    assert [s.sampleValue.uiVal for s in samples] == [42, 42, 42]
    assert [s.timeStamp for s in samples] == [1_784_000_001_000_000 + i * 1_000_000
                                              for i in range(3)]
    assert fake.nvmlDeviceGetMigMode(h100) == [pynvml.NVML_DEVICE_MIG_ENABLE] * 2
    mig = fake.nvmlDeviceGetMigDeviceHandleByIndex(h100, 2)
    assert fake.nvmlDeviceGetName(mig) == "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    assert fake.nvmlDeviceGetGpuInstanceId(mig) == 9
    assert fake.nvmlDeviceGetAttributes(mig).memorySizeMB == 9984
    with pytest.raises(pynvml.NVMLError_NotFound):
        fake.nvmlDeviceGetMigDeviceHandleByIndex(h100, 4)
    with pytest.raises(pynvml.NVMLError_NotSupported):      # MIG mode: no utilization
        fake.nvmlDeviceGetUtilizationRates(h100)
    with pytest.raises(pynvml.NVMLError_NotSupported):      # MIG handle: no power
        fake.nvmlDeviceGetPowerUsage(mig)
    with pytest.raises(pynvml.NVMLError_NotSupported):      # L40S is not MIG-capable
        fake.nvmlDeviceGetMigMode(l40s)


def test_library_missing_and_lost_gpu():
    fake = FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        fake.nvmlInit()
    gpu = models.l40s(0)
    fake = FakeNvml([gpu])
    fake.nvmlInit()
    h = fake.nvmlDeviceGetHandleByIndex(0)
    gpu.lost = True
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake.nvmlDeviceGetHandleByIndex(0)


def test_energy_integrates_power():
    gpu = models.l40s(0, power_w=200.0)
    fake = FakeNvml([gpu])
    fake.nvmlInit()
    fake.advance(2.5)
    gpu.power_w = 100.0
    fake.advance(1)
    assert fake.nvmlDeviceGetTotalEnergyConsumption(fake.nvmlDeviceGetHandleByIndex(0)) == 600_000
