"""The NVML sampler driven through the fake NVML: exact rows, error injection, MIG, XID."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pynvml
import pytest

from collector import fake_gpu_models as models
from collector.fake_nvml import MIB, FakeGpu, FakeNvml, FakeProcess
from collector.nvml import NvmlSampler, NvmlUnavailable, UnknownLabel
from collector.owners import Owner
from collector.records import GpuHealthEvent, GpuProcess, GpuSample

START = 1_784_000_000.0
TS0 = datetime(2026, 7, 14, 3, 33, 20, tzinfo=timezone.utc)   # == START


def at(seconds_after_start: float) -> datetime:
    return datetime.fromtimestamp(START + seconds_after_start, tz=timezone.utc)


def l40s(**values) -> FakeGpu:
    gpu = FakeGpu(name="NVIDIA L40S", uuid="GPU-0b7e5a1c-2f4d-4c3e-9a8b-1d2c3e4f5a6b",
                  pci_bus_id="00000000:01:00.0", memory_total=46068 * MIB,
                  memory_used=1235 * MIB, power_w=183.28, energy_mj=1_000_000,
                  temperature_c=64, sm_clock_mhz=2520, mem_clock_mhz=9001,
                  clocks_event_reasons=0x0, ecc={(1, 0): 0, (0, 0): 2, (0, 1): 7, (1, 1): 1})
    for k, v in values.items():
        setattr(gpu, k, v)
    return gpu


L40S_ROW = GpuSample(
    ts=at(15), host="gpu-node-12", gpu_uuid="GPU-0b7e5a1c-2f4d-4c3e-9a8b-1d2c3e4f5a6b",
    environment="onprem", cluster="berlin", pool="l40s", gpu_index=0, model="NVIDIA L40S",
    pci_bus_id="00000000:01:00.0", driver_version="595.80", cuda_version="13.2",
    util_gpu=50.0, util_mem=9.0, mem_used_bytes=1235 * MIB, mem_total_bytes=46068 * MIB,
    power_w=183.28, energy_j=3749.2, temperature_c=64.0, sm_clock_mhz=2520, mem_clock_mhz=9001,
    throttle_reasons=0, ecc_corrected_volatile=2, ecc_uncorrected_volatile=0,
    ecc_corrected_aggregate=7, ecc_uncorrected_aggregate=1, xid_count=0, xid_last=None,
    process_count=0, source="nvml")


def sampler_for(fake: FakeNvml, **kw) -> NvmlSampler:
    kw.setdefault("host", "gpu-node-12")
    kw.setdefault("labels", {"environment": "onprem", "cluster": "berlin", "pool": "l40s"})
    return NvmlSampler(nvml=fake, clock=fake.clock, **kw)


def run_interval(fake: FakeNvml, gpu: FakeGpu) -> None:
    """5 s at 10 % then 10 s at 70 %: the interval's mean is 50 %."""
    gpu.util_gpu, gpu.util_mem = 10, 9
    fake.advance(5)
    gpu.util_gpu = 70
    fake.advance(10)


def test_whole_gpu_row_is_exact_with_utilization_averaged_over_the_interval():
    gpu = l40s()
    fake = FakeNvml([gpu], driver_version="595.80", cuda_version=13020, start_s=START)
    sampler = sampler_for(fake)
    run_interval(fake, gpu)
    result = sampler.sample()
    assert result.samples == [L40S_ROW]
    assert result.processes == [] and result.events == []
    assert sampler.stats.samples_total == 1 and sampler.stats.field_errors == {}


def test_second_round_averages_only_the_new_samples():
    gpu = l40s()
    fake = FakeNvml([gpu], driver_version="595.80", cuda_version=13020, start_s=START)
    sampler = sampler_for(fake)
    run_interval(fake, gpu)
    sampler.sample()
    gpu.util_gpu, gpu.util_mem = 100, 40
    fake.advance(15)
    row = sampler.sample().samples[0]
    assert (row.ts, row.util_gpu, row.util_mem) == (at(30), 100.0, 40.0)


def test_utilization_falls_back_to_rates_only_when_samples_are_not_supported():
    gpu = l40s(fail={"nvmlDeviceGetSamples": pynvml.NVML_ERROR_NOT_SUPPORTED})
    fake = FakeNvml([gpu], driver_version="595.80", cuda_version=13020, start_s=START)
    sampler = sampler_for(fake)
    run_interval(fake, gpu)
    row = sampler.sample().samples[0]
    # nvmlDeviceGetUtilizationRates gives NVML's latest one-period value, not the mean
    assert (row.util_gpu, row.util_mem) == (70.0, 9.0)
    assert sampler.stats.field_errors == {}


def test_each_field_degrades_on_its_own():
    gpu = l40s(fail={"nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_NOT_SUPPORTED,
                     "nvmlDeviceGetTotalEccErrors": pynvml.NVML_ERROR_NOT_SUPPORTED,
                     "nvmlDeviceGetTemperature": pynvml.NVML_ERROR_NO_PERMISSION,
                     "nvmlDeviceGetComputeRunningProcesses": pynvml.NVML_ERROR_NOT_SUPPORTED})
    fake = FakeNvml([gpu], driver_version="595.80", cuda_version=13020, start_s=START)
    sampler = sampler_for(fake)
    run_interval(fake, gpu)
    row = sampler.sample().samples[0]
    assert row == dataclasses.replace(
        L40S_ROW, power_w=None, temperature_c=None, ecc_corrected_volatile=None,
        ecc_uncorrected_volatile=None, ecc_corrected_aggregate=None,
        ecc_uncorrected_aggregate=None, process_count=None)
    # NOT_SUPPORTED is a capability, not an error; NO_PERMISSION is counted
    assert sampler.stats.field_errors == {"temperature_c": 1}


def test_clock_event_reasons_fall_back_to_the_pre_r535_call():
    gpu = l40s(clocks_event_reasons=0x4,
               fail={"nvmlDeviceGetCurrentClocksEventReasons": pynvml.NVML_ERROR_FUNCTION_NOT_FOUND})
    fake = FakeNvml([gpu], start_s=START)
    assert sampler_for(fake).sample().samples[0].throttle_reasons == 0x4


def test_versions_come_from_the_system_calls():
    fake = FakeNvml([l40s()], driver_version="535.54.03", cuda_version=12020, start_s=START)
    row = sampler_for(fake).sample().samples[0]
    assert (row.driver_version, row.cuda_version) == ("535.54.03", "12.2")


def test_a_gpu_lost_mid_run_is_reported_once_retried_and_recovered():
    lost, healthy = models.h100_80gb(0), models.h100_80gb(1)
    fake = FakeNvml([lost, healthy], start_s=START)
    sampler = sampler_for(fake)
    fake.advance(15)
    assert [r.gpu_index for r in sampler.sample().samples] == [0, 1]

    lost.fail["nvmlDeviceGetTotalEccErrors"] = pynvml.NVML_ERROR_GPU_IS_LOST  # mid-reading
    fake.advance(15)
    second = sampler.sample()
    assert [r.gpu_index for r in second.samples] == [1]
    assert [(e.kind, e.gpu_uuid, e.gpu_index, e.code, e.ts) for e in second.events] == [
        ("gpu_lost", lost.uuid, 0, pynvml.NVML_ERROR_GPU_IS_LOST, at(30))]

    del lost.fail["nvmlDeviceGetTotalEccErrors"]
    lost.lost = True          # now every call, handle included, fails
    fake.advance(15)
    third = sampler.sample()
    assert [r.gpu_index for r in third.samples] == [1] and third.events == []
    assert sampler.stats.gpus_lost == 1

    lost.lost = False
    fake.advance(15)
    fourth = sampler.sample()
    assert [r.gpu_index for r in fourth.samples] == [0, 1]
    assert [(e.kind, e.gpu_index) for e in fourth.events] == [("gpu_recovered", 0)]
    assert sampler.stats.gpus_lost == 0


def test_unknown_error_counts_as_lost():
    gpu = models.l40s(0, fail={"nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_UNKNOWN})
    fake = FakeNvml([gpu, models.l40s(1)], start_s=START)
    result = sampler_for(fake).sample()
    assert [r.gpu_index for r in result.samples] == [1]
    assert [(e.kind, e.code) for e in result.events] == [("gpu_lost", pynvml.NVML_ERROR_UNKNOWN)]


def test_a_gpu_lost_before_start_is_reported_in_the_first_round():
    gpu = models.l40s(0, lost=True)
    fake = FakeNvml([gpu, models.l40s(1)], start_s=START)
    result = sampler_for(fake).sample()
    assert [r.gpu_index for r in result.samples] == [1]
    assert [(e.kind, e.gpu_index, e.gpu_uuid) for e in result.events] == [("gpu_lost", 0, "")]


@pytest.mark.parametrize("code, hint", [
    (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "Install the NVIDIA driver"),
    (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "Install the NVIDIA driver"),
    (pynvml.NVML_ERROR_NO_PERMISSION, "/dev/nvidia"),
    (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "reboot the node"),
])
def test_missing_library_is_one_clear_error(code, hint):
    with pytest.raises(NvmlUnavailable, match=hint) as info:
        sampler_for(FakeNvml([], init_error=code))
    assert "gpu-node-12" in str(info.value)


def test_real_pynvml_runs_unmodified():
    """On this machine either no driver (clear error) or a real GPU (rows from NVML)."""
    try:
        with NvmlSampler(nvml=pynvml, host="here") as sampler:
            result = sampler.sample()
    except NvmlUnavailable as e:
        assert "NVIDIA driver" in str(e) or "nvidia" in str(e)
    else:
        assert result.samples and all(r.source == "nvml" and r.gpu_uuid for r in result.samples)


def test_memory_used_is_what_processes_hold_not_the_drivers_reserve():
    """NVML's v1 call counts the reserved memory as used: on a real idle H100 80GB (driver 580) it
    answered 480 MiB where nvidia-smi and dcgm-exporter say 0. The sampler reads v2 as they do, and
    v1 only where the driver has no v2 call."""
    idle, old_driver, flaky = (models.h100_80gb(i) for i in range(3))
    old_driver.fail["nvmlDeviceGetMemoryInfo_v2"] = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
    flaky.fail["nvmlDeviceGetMemoryInfo_v2"] = pynvml.NVML_ERROR_TIMEOUT
    fake = FakeNvml([idle, old_driver, flaky], start_s=START)
    sampler = sampler_for(fake)
    fake.advance(15)
    first = sampler.sample()
    assert [(r.mem_used_bytes, r.mem_total_bytes) for r in first.samples] == [
        (59 * MIB, 81559 * MIB), ((59 + 479) * MIB, 81559 * MIB), (None, None)]
    assert first.reserved_bytes == {(idle.uuid, ""): 479 * MIB}
    assert sampler.stats.field_errors["memory"] == 1
    del flaky.fail["nvmlDeviceGetMemoryInfo_v2"]       # a failed read is retried with v2, never v1
    old_driver.memory_used = 1000 * MIB
    fake.advance(15)
    assert [r.mem_used_bytes for r in sampler.sample().samples] == [59 * MIB, (1000 + 479) * MIB, 59 * MIB]


def test_unknown_labels_are_refused():
    with pytest.raises(UnknownLabel, match="team"):
        sampler_for(FakeNvml([l40s()]), labels={"team": "nlp"})


def capture_h100_mig() -> FakeGpu:
    """The H100 of h100_mig_capture.txt under load: gpu_burn + 2 memhogs on GPU instance 2."""
    gpu = models.h100_80gb_mig(0, power_w=432.21, temperature_c=53)
    gpu.memory_used = 11125 * MIB
    gi2 = gpu.mig[0]
    gi2.memory_used = 11091 * MIB
    gi2.processes = [FakeProcess(21180, 2296 * MIB, "/root/tools/memhog"),
                     FakeProcess(21181, 1272 * MIB, "/root/tools/memhog"),
                     FakeProcess(21198, 7484 * MIB, "./gpu_burn")]
    gpu.mig[1].memory_used = 17 * MIB
    return gpu


def test_mig_devices_are_entities_of_their_own():
    gpu = capture_h100_mig()
    fake = FakeNvml([gpu], start_s=START)
    sampler = sampler_for(fake, host="h100-node", labels={"environment": "gcp"})
    fake.advance(15)
    result = sampler.sample()
    common = dict(ts=at(15), host="h100-node", gpu_uuid=gpu.uuid, environment="gcp",
                  gpu_index=0, model="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:53:00.0",
                  driver_version="590.48.01", cuda_version="13.1", source="nvml")

    def mig(gi, profile, used_mib, total_mib, procs):
        return GpuSample(mig_instance=gi, mig_profile=profile, mem_used_bytes=used_mib * MIB,
                         mem_total_bytes=total_mib * MIB, process_count=procs, **common)

    assert result.samples == [
        GpuSample(mem_used_bytes=11125 * MIB, mem_total_bytes=81559 * MIB, power_w=432.21,
                  energy_j=6483.15, temperature_c=53.0, sm_clock_mhz=1980, mem_clock_mhz=2619,
                  throttle_reasons=1, ecc_corrected_volatile=0, ecc_uncorrected_volatile=0,
                  ecc_corrected_aggregate=0, ecc_uncorrected_aggregate=0, process_count=3,
                  **common),
        mig("2", "3g.40gb", 11091, 40448, 3),
        mig("3", "2g.20gb", 17, 20096, 0),
        mig("9", "1g.10gb", 9, 9984, 0),
        mig("10", "1g.10gb", 9, 9984, 0),
    ]
    assert [(p.pid, p.mig_instance, p.process_name, p.used_memory_bytes, p.sm_util)
            for p in result.processes] == [
        (21180, "2", "/root/tools/memhog", 2296 * MIB, None),
        (21181, "2", "/root/tools/memhog", 1272 * MIB, None),
        (21198, "2", "./gpu_burn", 7484 * MIB, None)]


def test_xid_events_land_on_the_row_they_name_and_only_in_their_round():
    whole, mig = models.l40s(0), models.h100_80gb_mig(1)
    fake = FakeNvml([whole, mig], start_s=START)
    sampler = sampler_for(fake)
    fake.inject_xid(0, 13)
    fake.inject_xid(0, 31)
    fake.inject_xid(1, 43, gpu_instance_id=9)
    fake.inject_xid(1, 79)
    fake.advance(15)
    result = sampler.sample()
    got = {(r.gpu_index, r.mig_instance): (r.xid_count, r.xid_last) for r in result.samples}
    assert got == {(0, ""): (2, 31), (1, ""): (1, 79), (1, "2"): (0, None),
                   (1, "3"): (0, None), (1, "9"): (1, 43), (1, "10"): (0, None)}
    assert result.events == [
        GpuHealthEvent(ts=at(15), host="gpu-node-12", gpu_uuid=whole.uuid, kind="xid",
                       gpu_index=0, code=13, detail="XID 13"),
        GpuHealthEvent(ts=at(15), host="gpu-node-12", gpu_uuid=whole.uuid, kind="xid",
                       gpu_index=0, code=31, detail="XID 31"),
        GpuHealthEvent(ts=at(15), host="gpu-node-12", gpu_uuid=mig.uuid, kind="xid",
                       gpu_index=1, mig_instance="9", code=43, detail="XID 43"),
        GpuHealthEvent(ts=at(15), host="gpu-node-12", gpu_uuid=mig.uuid, kind="xid",
                       gpu_index=1, code=79, detail="XID 79"),
    ]
    fake.advance(15)
    assert {(r.xid_count, r.xid_last) for r in sampler.sample().samples} == {(0, None)}


def test_processes_carry_their_owner_and_the_sample_the_biggest_one():
    gpu = l40s(processes=[FakeProcess(4101, 30_000 * MIB, "python3", sm_util=80, mem_util=30),
                          FakeProcess(4107, 2_000 * MIB, "python3", sm_util=5, mem_util=1)])
    fake = FakeNvml([gpu], start_s=START)
    owners = {
        4101: Owner(pid=4101, uid=1000, user="alice", container_id="3f9e", k8s_namespace="ml",
                    k8s_pod="finetune-0", image="nvcr.io/nvidia/pytorch:24.05-py3", team="nlp"),
        4107: Owner(pid=4107, uid=1001, user="bob"),
    }
    sampler = sampler_for(fake, owner_of=owners.get)
    fake.advance(10)
    gpu.processes[0].sm_util = 60
    fake.advance(10)
    result = sampler.sample()
    row = result.samples[0]
    assert (row.process_count, row.team, row.user, row.k8s_namespace, row.k8s_pod, row.image,
            row.job_id, row.slurm_account) == (2, "nlp", "alice", "ml", "finetune-0",
                                               "nvcr.io/nvidia/pytorch:24.05-py3", "", "")
    assert result.processes == [
        GpuProcess(ts=at(20), host="gpu-node-12", gpu_uuid=gpu.uuid, pid=4101,
                   process_name="python3", used_memory_bytes=30_000 * MIB, sm_util=70.0,
                   mem_util=30.0, container_id="3f9e", team="nlp", user="alice",
                   k8s_namespace="ml", k8s_pod="finetune-0"),
        GpuProcess(ts=at(20), host="gpu-node-12", gpu_uuid=gpu.uuid, pid=4107,
                   process_name="python3", used_memory_bytes=2_000 * MIB, sm_util=5.0,
                   mem_util=1.0, user="bob"),
    ]


def test_an_owner_whose_lookup_failed_is_asked_again():
    gpu = l40s(processes=[FakeProcess(4101, 1 * MIB)])
    fake = FakeNvml([gpu], start_s=START)
    answers = [Owner(pid=4101, user="alice", resolved=False),
               Owner(pid=4101, user="alice", k8s_pod="finetune-0")]
    sampler = sampler_for(fake, owner_of=lambda pid: answers.pop(0))
    assert sampler.sample().samples[0].k8s_pod == ""
    assert sampler.sample().samples[0].k8s_pod == "finetune-0"
    assert answers == []
