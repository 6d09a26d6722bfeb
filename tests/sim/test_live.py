"""live_nvml: a fake NVML for one host that follows the simulated fleet as the clock moves."""
from __future__ import annotations

import pandas as pd
import pynvml
import pytest

from sim import live_nvml

from .conftest import DAYS, END


class Clock:
    def __init__(self, t: float):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock():
    return Clock(END.timestamp() - 5 * 3600 + 30)


def expected(samples, host, t) -> pd.DataFrame:
    at = pd.Timestamp(int(t) // 60 * 60, unit="s", tz="UTC")
    rows = samples[(samples["host"] == host) & (samples["ts"] == at)]
    return rows.sort_values(["gpu_uuid", "mig_instance"])


def test_values_follow_the_history_round_by_round(fleet, samples, clock):
    host = "dgx-h100-01"
    nvml = live_nvml(fleet, host, clock, days=DAYS, end=END)
    nvml.nvmlInit()
    assert nvml.nvmlDeviceGetCount() == 8
    assert nvml.nvmlSystemGetDriverVersion() == fleet.host(host).driver
    for _ in range(3):
        rows = expected(samples, host, clock())
        for row in rows.itertuples():
            handle = nvml.nvmlDeviceGetHandleByIndex(
                [e.gpu_uuid for e in fleet.entities if e.host == host].index(row.gpu_uuid))
            assert nvml.nvmlDeviceGetUUID(handle) == row.gpu_uuid
            assert nvml.nvmlDeviceGetUtilizationRates(handle).gpu == round(row.util_gpu)
            procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            assert len(procs) == row.process_count
        clock.t += 60
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(handle) > 0


def test_mig_host_exposes_mig_devices(fleet, clock):
    nvml = live_nvml(fleet, "a100-mig-01", clock)
    nvml.nvmlInit()
    gpu = nvml.nvmlDeviceGetHandleByIndex(0)
    assert nvml.nvmlDeviceGetMigMode(gpu)[0] == pynvml.NVML_DEVICE_MIG_ENABLE
    mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 0)
    assert nvml.nvmlDeviceGetGpuInstanceId(mig) == 2
    assert nvml.nvmlDeviceGetMemoryInfo(mig).used > 0


def test_stopped_cloud_instance_answers_gpu_is_lost(fleet, clock):
    host = fleet.instances[fleet.plant.residency_instance].host  # runs only when planted
    nvml = live_nvml(fleet, host, clock)
    nvml.nvmlInit()
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        nvml.nvmlDeviceGetPowerUsage(nvml.nvmlDeviceGetHandleByIndex(0))
