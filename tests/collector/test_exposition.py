"""Records -> our /metrics text -> our parser -> the same records."""
from __future__ import annotations

from datetime import datetime, timezone

import pynvml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily

from collector import fake_gpu_models as models
from collector.dcgm import records_from_text
from collector.exposition import GpuMetricsCollector
from collector.fake_nvml import MIB, FakeNvml, FakeProcess
from collector.nvml import NvmlSampler
from collector.owners import Owner
from collector.promtext import parse

LATER = datetime(2030, 1, 1, tzinfo=timezone.utc)   # scrape time; must not leak into ts


def sampled_round():
    busy = models.l40s(0, util_gpu=87, util_mem=31, power_w=301.07, energy_mj=123_456_789,
                       processes=[FakeProcess(4101, 30_123_456_789, "python3", 80, 20)],
                       ecc={(0, 0): 3, (0, 1): 12})
    no_power = models.l40s(1, fail={"nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_NOT_SUPPORTED,
                                    "nvmlDeviceGetComputeRunningProcesses":
                                        pynvml.NVML_ERROR_NO_PERMISSION})
    mig = models.a100_80gb_mig(2)
    mig.mig[1].processes = [FakeProcess(4103, 19_000 * MIB, "python")]
    mig.mig[1].memory_used = 19_000 * MIB
    fake = FakeNvml([busy, no_power, mig], start_s=1_784_000_000.4567)
    owners = {4101: Owner(4101, user="alice", k8s_namespace="ml-research", k8s_pod='we"ird\\pod',
                          team="nlp", image="nvcr.io/nvidia/pytorch:24.05-py3"),
              4103: Owner(4103, user="bob", job_id="4242", slurm_account="ml-research")}
    sampler = NvmlSampler(nvml=fake, clock=fake.clock, host="gpu-node-7", owner_of=owners.get,
                          labels={"environment": "aws", "region": "eu-central-1",
                                  "cluster": "training", "pool": "l40s",
                                  "instance_id": "i-0abc", "instance_type": "g6e.12xlarge"})
    fake.inject_xid(0, 48)
    fake.advance(15)
    return sampler, sampler.sample()


def exposition(collector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_round_trip_gives_back_the_same_records():
    sampler, result = sampled_round()
    collector = GpuMetricsCollector(stats=sampler.stats)
    collector.update(result.samples, result.reserved_bytes)
    back = records_from_text(exposition(collector), LATER)
    assert back == result.samples
    assert len(back) == 3 + 4
    assert {r.source for r in back} == {"nvml"}


def test_dcgm_names_units_and_labels():
    sampler, result = sampled_round()
    collector = GpuMetricsCollector(stats=sampler.stats)
    collector.update(result.samples, result.reserved_bytes)
    parsed = parse(exposition(collector))
    by = {}
    for s in parsed.samples:
        by.setdefault(s.name, []).append(s)
    busy = next(s for s in by["DCGM_FI_DEV_POWER_USAGE"] if s.labels["gpu"] == "0")
    assert busy.value == 301.07
    assert busy.labels == {"gpu": "0", "UUID": result.samples[0].gpu_uuid,
                           "pci_bus_id": "00000000:53:00.0", "device": "nvidia0",
                           "Hostname": "gpu-node-7",
                           "DCGM_FI_DRIVER_VERSION": "590.48.01", "namespace": "ml-research",
                           "pod": 'we"ird\\pod', "container": ""}
    energy = next(s for s in by["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] if s.labels["gpu"] == "0")
    assert energy.value == 123_456_789 + 301.07 * 15 * 1000          # mJ, like DCGM
    fb = next(s for s in by["DCGM_FI_DEV_FB_FREE"] if s.labels.get("GPU_I_ID") == "4")
    assert fb.value == 19968 - 19_000                                   # MiB, like DCGM
    # the A100's own memory as its capture's "FB Memory Usage" (MiB): used, reserved apart, free the rest
    assert [(s.name, s.value) for name in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_FB_FREE")
            for s in by[name] if s.labels["gpu"] == "2" and "GPU_I_ID" not in s.labels] == [
        ("DCGM_FI_DEV_FB_USED", 50), ("DCGM_FI_DEV_FB_RESERVED", 869), ("DCGM_FI_DEV_FB_FREE", 81920 - 869 - 50)]
    assert {s.labels["GPU_I_PROFILE"] for s in by["DCGM_FI_DEV_FB_USED"]
            if "GPU_I_ID" in s.labels} == {"1g.20gb"}
    assert [s.value for s in by["DCGM_FI_DEV_XID_ERRORS"] if s.labels["gpu"] == "0"] == [48]
    # None is no series: GPU 1 has no power reading
    assert [s.labels["gpu"] for s in by["DCGM_FI_DEV_POWER_USAGE"]] == ["0", "2"]
    info = next(s for s in by["gpuledger_gpu_info"] if s.labels.get("GPU_I_ID") == "4")
    assert (info.labels["model"], info.labels["job_id"], info.labels["slurm_account"], info.labels["user"],
            info.labels["cuda_version"], info.labels["instance_type"]) == (
        "NVIDIA A100-SXM4-80GB", "4242", "ml-research", "bob", "13.1", "g6e.12xlarge")
    assert by["gpuledger_agent_samples_total"][0].value == 7
    assert by["gpuledger_agent_sample_errors_total"] == [
        type(busy)("gpuledger_agent_sample_errors_total", {"field": "processes"}, 1.0, None)]


def test_extra_sources_and_an_empty_round():
    collector = GpuMetricsCollector()

    def spool():
        yield CounterMetricFamily("gpuledger_spool_dropped", "Records dropped.", value=4)

    collector.add_source(spool)
    text = exposition(collector)
    assert [(s.name, s.value) for s in parse(text).samples] == [
        ("gpuledger_spool_dropped_total", 4.0)]
