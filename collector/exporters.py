"""Other GPU exporters' Prometheus text, mapped onto ``GpuSample`` (dcgm-exporter's and ours are
``collector.dcgm``).

``nvidia_gpu_exporter`` (https://github.com/utkuozdemir/nvidia_gpu_exporter, which runs
``nvidia-smi``) labels every series with ``uuid`` only: the GPU's UUID in lower case without
its ``GPU-`` prefix. ``nvidia_smi_gpu_info`` carries the rest as labels (``name``, ``index``,
``pci_bus_id``, ``driver_version``, ``cuda_version``). Units are converted to our columns:
utilization ratios 0..1 → %, clocks Hz → MHz; memory is already in bytes, power in W,
temperature in °C. Its series name no host, so a saved ``/metrics`` is loaded with ``--host``; a
``[[scrape]]`` with ``format = "nvidia_gpu_exporter"`` takes the target URL's host.

Mapping decisions:

* ``gpu_uuid`` = ``GPU-`` + ``uuid`` (NVML's and dcgm-exporter's spelling, ``uuid_prefix``), so
  one GPU read by this exporter and by our agent or dcgm-exporter is one GPU;
* ``throttle_reasons`` = ``nvidia_smi_clocks_event_reasons_active`` (nvidia-smi's bitmask);
* ``process_count`` = ``nvidia_smi_compute_apps``;
* ECC counters are the ``*_total`` series; per-location ones (dram, sram, …) are not kept;
* nothing fills ``energy_j`` (nvidia-smi's query has no energy counter) or MIG instances (the
  exporter's series are per physical GPU).
"""
from __future__ import annotations

from collector.sample_mapping import MetricMapping

NVIDIA_GPU_EXPORTER = MetricMapping(
    metrics={
        "nvidia_smi_utilization_gpu_ratio": ("util_gpu", 100.0),
        "nvidia_smi_utilization_memory_ratio": ("util_mem", 100.0),
        "nvidia_smi_memory_used_bytes": ("mem_used_bytes", 1.0),
        "nvidia_smi_memory_total_bytes": ("mem_total_bytes", 1.0),
        "nvidia_smi_power_draw_watts": ("power_w", 1.0),
        "nvidia_smi_temperature_gpu": ("temperature_c", 1.0),
        "nvidia_smi_clocks_current_sm_clock_hz": ("sm_clock_mhz", 1e-6),
        "nvidia_smi_clocks_current_memory_clock_hz": ("mem_clock_mhz", 1e-6),
        "nvidia_smi_clocks_event_reasons_active": ("throttle_reasons", 1.0),
        "nvidia_smi_ecc_errors_corrected_volatile_total": ("ecc_corrected_volatile", 1.0),
        "nvidia_smi_ecc_errors_uncorrected_volatile_total": ("ecc_uncorrected_volatile", 1.0),
        "nvidia_smi_ecc_errors_corrected_aggregate_total": ("ecc_corrected_aggregate", 1.0),
        "nvidia_smi_ecc_errors_uncorrected_aggregate_total": ("ecc_uncorrected_aggregate", 1.0),
        "nvidia_smi_compute_apps": ("process_count", 1.0),
    },
    labels={"uuid": "gpu_uuid", "name": "model", "index": "gpu_index", "pci_bus_id": "pci_bus_id",
            "driver_version": "driver_version", "cuda_version": "cuda_version"},
    source="nvidia_gpu_exporter",
    info=frozenset({"nvidia_smi_gpu_info"}),
    uuid_prefix="GPU-",
)

# name -> mapping of the exporters recognised in sample files by their metric names
EXPORTERS: dict[str, MetricMapping] = {"nvidia_gpu_exporter": NVIDIA_GPU_EXPORTER}


def recognise(samples) -> str | None:
    """The name of the exporter in ``EXPORTERS`` whose metrics ``samples`` (promtext) carry, or None."""
    for name, mapping in EXPORTERS.items():
        if any(s.name in mapping.metrics or s.name in mapping.info for s in samples):
            return name
    return None
