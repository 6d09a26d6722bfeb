"""Real dcgm-exporter scrapes -> GpuSample records.

The expected records below were written by hand from reading each file in
/work/shared/data/dcgm (not by running the parser).
"""
from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest

from collector.dcgm import DCGM, records_from_text
from collector.records import GpuSample
from collector.sample_mapping import MappingError, mapping_from_config

MIB = 1024 * 1024
SCRAPED = datetime(2026, 7, 14, 9, 0, 30, tzinfo=timezone.utc)


def read(shared_data, name: str) -> str:
    return (shared_data / "dcgm" / name).read_text()


def test_plain_l4(shared_data):
    records = records_from_text(read(shared_data, "plain_l4.prom"), SCRAPED,
                                defaults={"environment": "aws", "region": "us-east-1"})
    assert records == [GpuSample(
        ts=SCRAPED, host="i-030791dc5a37cd257", gpu_uuid="GPU-c2f76b33-7953-256e-8f33-1343419b1a1c",
        environment="aws", region="us-east-1", gpu_index=0, model="NVIDIA L4",
        pci_bus_id="00000000:31:00.0", driver_version="580.105.08", util_gpu=0.0, util_mem=0.0,
        mem_used_bytes=0, mem_total_bytes=(0 + 22563 + 470) * MIB, power_w=16.365,
        energy_j=4742.776, temperature_c=31.0, sm_clock_mhz=210, mem_clock_mhz=405,
        xid_count=0, xid_last=None, source="dcgm")]


def test_two_t4_one_mapped_to_a_pod(shared_data):
    common = dict(ts=SCRAPED, host="nvidia-dcgm-exporter-s228n", model="Tesla T4",
                  driver_version="525.60.13", util_gpu=0.0, util_mem=0.0, source="dcgm")
    assert records_from_text(read(shared_data, "k8s_pod_labels_2x_t4.prom"), SCRAPED) == [
        GpuSample(gpu_uuid="GPU-7a2e92f2-be71-d37e-a744-541600ffc722", gpu_index=0,
                  k8s_namespace="runai-reservation",
                  k8s_pod="runai-reservation-gpu-qa-mig-worker-gpu-1-kvltw", k8s_container="runai-reservation",
                  sm_clock_mhz=585, mem_clock_mhz=5000, temperature_c=55.0, power_w=28.722,
                  energy_j=9022.652, mem_used_bytes=128 * MIB,
                  mem_total_bytes=(128 + 14831) * MIB, **common),
        GpuSample(gpu_uuid="GPU-5f587dd4-6505-0873-c6db-8324dbfe5ba9", gpu_index=1,
                  sm_clock_mhz=300, mem_clock_mhz=405, temperature_c=52.0, power_w=17.035,
                  energy_j=8855.497, mem_used_bytes=5 * MIB, mem_total_bytes=(5 + 14955) * MIB,
                  **common),
    ]


def test_a100_with_four_mig_instances(shared_data):
    records = records_from_text(read(shared_data, "mig_a100_4_instances.prom"), SCRAPED)
    common = dict(ts=SCRAPED, host="nvidia-dcgm-exporter-tl46n",
                  gpu_uuid="GPU-473571f2-fb37-ef7e-50fe-9885b74a23cd", gpu_index=0,
                  model="NVIDIA A100-SXM4-40GB", driver_version="520.56.06", sm_clock_mhz=1410,
                  mem_clock_mhz=1215, temperature_c=35.0, energy_j=6890.956, source="dcgm")
    # no DCGM_FI_DEV_GPU_UTIL on MIG: utilization is 100 x DCGM_FI_PROF_GR_ENGINE_ACTIVE /
    # DCGM_FI_PROF_DRAM_ACTIVE
    gi8 = records[1]
    assert (gi8.util_gpu, gi8.util_mem) == (pytest.approx(40.8493), pytest.approx(25.0816))
    records[1] = dataclasses.replace(gi8, util_gpu=None, util_mem=None)
    assert records == [
        GpuSample(mig_instance="7", mig_profile="1g.5gb", power_w=112.252, util_gpu=0.0,
                  util_mem=0.0, mem_used_bytes=6 * MIB, mem_total_bytes=(6 + 4857) * MIB,
                  **common),
        GpuSample(mig_instance="8", mig_profile="1g.5gb", power_w=106.463,
                  mem_used_bytes=4384 * MIB, mem_total_bytes=(4384 + 480) * MIB, **common),
        GpuSample(mig_instance="9", mig_profile="1g.5gb", power_w=106.463, util_gpu=0.0,
                  util_mem=0.0, mem_used_bytes=6 * MIB, mem_total_bytes=(6 + 4857) * MIB,
                  **common),
        GpuSample(mig_instance="5", mig_profile="2g.10gb", power_w=112.252, util_gpu=0.0,
                  util_mem=0.0, mem_used_bytes=13 * MIB, mem_total_bytes=(13 + 9843) * MIB,
                  **common),
    ]


H100 = [  # gpu, UUID, bus, temperature, power, MEM_COPY_UTIL (the excerpt stops at GPU 5)
    (0, "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005", "53", 30.0, 113.611, 0.0),
    (1, "GPU-bc5610b9-79c8-fedd-8899-07539c7f868a", "64", 29.0, 68.347, 0.0),
    (2, "GPU-fbc2c554-4d37-8938-0032-f923bad0f716", "75", 26.0, 65.709, 0.0),
    (3, "GPU-a65a773d-52bb-bcc1-a8ee-f78c3faa2e2d", "86", 29.0, 67.316, 0.0),
    (4, "GPU-82e45d1b-1618-559f-144c-eab51545030b", "97", 28.0, 68.717, 0.0),
    (5, "GPU-39e28159-8c62-ee71-64db-b748edd61e15", "A8", 26.0, 65.742, 0.0),
    (6, "GPU-e64d69ca-b4b3-59b2-e78c-94f26c4db365", "B9", 28.0, 67.328, None),
    (7, "GPU-04d228d3-3b5a-3534-f5cf-969706647d56", "CA", 26.0, 66.997, None),
]


def test_eight_h100_excerpt_without_help_lines(shared_data):
    expected = [GpuSample(
        ts=SCRAPED, host="gpu-node-1", gpu_uuid=uuid, gpu_index=gpu,
        model="NVIDIA H100 80GB HBM3", pci_bus_id=f"00000000:{bus}:00.0",
        driver_version="580.105.08", temperature_c=temp, power_w=power, util_gpu=0.0,
        util_mem=mem_util, source="dcgm",
        k8s_namespace="dynamo-workload" if gpu == 0 else "",
        k8s_pod="vllm-agg-0-vllmdecodeworker-s65j5" if gpu == 0 else "",
        k8s_container="main" if gpu == 0 else "")
        for gpu, uuid, bus, temp, power, mem_util in H100]
    got = records_from_text(read(shared_data, "k8s_pod_labels_8x_h100_excerpt.prom"), SCRAPED)
    assert got == expected


def test_text_timestamps_and_xid():
    text = ('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",gpu="2",Hostname="n"} 55 1784000000123\n'
            'DCGM_FI_DEV_XID_ERRORS{UUID="GPU-1",gpu="2",Hostname="n"} 79 1784000000123\n'
            'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",gpu="2",Hostname="n"} 65 1784000015123\n'
            'DCGM_FI_DEV_GPU_UTIL{UUID="",gpu="3"} 1\n')
    got = records_from_text(text, SCRAPED)
    assert [(r.ts, r.util_gpu, r.xid_last, r.gpu_index) for r in got] == [
        (datetime(2026, 7, 14, 3, 33, 20, 123000, tzinfo=timezone.utc), 55.0, 79, 2),
        (datetime(2026, 7, 14, 3, 33, 35, 123000, tzinfo=timezone.utc), 65.0, None, 2)]


def test_any_exporter_with_a_mapping_from_config():
    # the shape of utkuozdemir/nvidia_gpu_exporter's output
    text = ('nvidia_smi_utilization_gpu_ratio{uuid="7a2e92f2-be71",name="NVIDIA L40S"} 0.42\n'
            'nvidia_smi_memory_used_bytes{uuid="7a2e92f2-be71",name="NVIDIA L40S"} 1.29499136e+09\n'
            'nvidia_smi_power_draw_watts{uuid="7a2e92f2-be71",name="NVIDIA L40S"} 183.28\n')
    mapping = mapping_from_config(
        metrics={"nvidia_smi_utilization_gpu_ratio": ("util_gpu", 100),
                 "nvidia_smi_memory_used_bytes": "mem_used_bytes",
                 "nvidia_smi_power_draw_watts": ("power_w", 1)},
        labels={"uuid": "gpu_uuid", "name": "model"}, source="nvidia_gpu_exporter")
    assert records_from_text(text, SCRAPED, mapping, defaults={"host": "node-3"}) == [
        GpuSample(ts=SCRAPED, host="node-3", gpu_uuid="7a2e92f2-be71", model="NVIDIA L40S",
                  util_gpu=42.0, mem_used_bytes=1294991360, power_w=183.28,
                  source="nvidia_gpu_exporter")]


def test_mapping_errors_name_the_columns():
    with pytest.raises(MappingError, match="not a numeric gpu_samples column"):
        mapping_from_config({"x": ("gpu_util", 1)}, {"uuid": "gpu_uuid"})
    with pytest.raises(MappingError, match="not a text gpu_samples column"):
        mapping_from_config({}, {"uuid": "gpu_uuid", "n": "power_w"})
    with pytest.raises(MappingError, match="no label for gpu_uuid"):
        mapping_from_config({"x": ("util_gpu", 1)}, {"name": "model"})
    extended = mapping_from_config({"DCGM_FI_DEV_FAN_SPEED": ("temperature_c", 1)}, {},
                                   base=DCGM)
    assert extended.metrics["DCGM_FI_DEV_GPU_UTIL"] == ("util_gpu", 1.0)


def test_a_kubernetes_node_label_names_the_host_not_the_exporter_pod(shared_data):
    """Under the GPU Operator dcgm-exporter's Hostname is its own pod's name, which changes when
    the exporter restarts; the node label Prometheus adds keeps one GPU one GPU."""
    import dataclasses

    text = (shared_data / "dcgm" / "mig_a100_4_instances.prom").read_text()
    relabelled = text.replace('Hostname="nvidia-dcgm-exporter-tl46n"',
                              'Hostname="nvidia-dcgm-exporter-tl46n",kubernetes_node="gpu-node-7"')
    when = datetime(2026, 3, 2, tzinfo=timezone.utc)
    assert {r.host for r in records_from_text(text, when, DCGM)} == {"nvidia-dcgm-exporter-tl46n"}
    assert {r.host for r in records_from_text(relabelled, when, DCGM)} == {"gpu-node-7"}
    assert len(records_from_text(relabelled, when, DCGM)) == 4          # still one record per MIG instance
    only_hostname = dataclasses.replace(DCGM, host_labels=())
    assert {r.host for r in records_from_text(relabelled, when, only_hostname)} == {"nvidia-dcgm-exporter-tl46n"}
