"""dcgm-exporter's metrics and labels, and our own exposition's, mapped onto ``GpuSample``.

dcgm-exporter (https://github.com/NVIDIA/dcgm-exporter, default-counters.csv) labels every
series with ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname``,
``DCGM_FI_DRIVER_VERSION`` and, on Kubernetes, ``namespace``, ``pod``, ``container``; MIG
devices add ``GPU_I_ID`` and ``GPU_I_PROFILE``. Units follow DCGM: memory in MiB, energy in
mJ, power in W, clocks in MHz, utilization in %, ``DCGM_FI_DEV_XID_ERRORS`` = the last XID
(0 = none), ``DCGM_FI_PROF_*_ACTIVE`` ratios 0..1.

Mapping decisions (one record per GPU entity per scrape):

* ``mem_used_bytes`` = FB_USED MiB, ``mem_total_bytes`` = FB_USED + FB_FREE (+ FB_RESERVED);
* ``energy_j`` = TOTAL_ENERGY_CONSUMPTION / 1000;
* ``util_gpu`` / ``util_mem`` = GPU_UTIL / MEM_COPY_UTIL, else (MIG devices, where DCGM has
  no GPU_UTIL) 100 × PROF_GR_ENGINE_ACTIVE / PROF_DRAM_ACTIVE;
* ``xid_last`` = XID_ERRORS unless 0; ``xid_count`` stays 0 (DCGM gives no count);
* ``container`` is ``k8s_container``; the ``device`` label has no column and is dropped.

Our exposition (``collector.exposition``) uses the same names (but ``modelName``: the model is
the ``model`` label of ``gpuledger_gpu_info``; older agents' ``modelName`` is still read) plus
``gpuledger_*`` series carrying what DCGM lacks, exact bytes included, so :data:`GPULEDGER` maps it back to the very
records that were exposed. :data:`GPULEDGER` also reads plain dcgm-exporter output, so it is
the default for scrapes and remote_write.
"""
from __future__ import annotations

from datetime import datetime

from collector.promtext import parse
from collector.records import GpuSample
from collector.sample_mapping import MetricMapping, samples_to_records

# metric -> (column, scale)
DCGM_METRICS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("util_gpu", 1.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("util_mem", 1.0),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("_util_gpu_ratio", 1.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("_util_mem_ratio", 1.0),
    "DCGM_FI_DEV_FB_USED": ("_fb_used_mib", 1.0),
    "DCGM_FI_DEV_FB_FREE": ("_fb_free_mib", 1.0),
    "DCGM_FI_DEV_FB_RESERVED": ("_fb_reserved_mib", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1.0),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("_energy_mj", 1.0),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature_c", 1.0),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock_mhz", 1.0),
    "DCGM_FI_DEV_MEM_CLOCK": ("mem_clock_mhz", 1.0),
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": ("throttle_reasons", 1.0),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": ("throttle_reasons", 1.0),  # name before DCGM 3.3
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": ("ecc_corrected_volatile", 1.0),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("ecc_uncorrected_volatile", 1.0),
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": ("ecc_corrected_aggregate", 1.0),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": ("ecc_uncorrected_aggregate", 1.0),
    "DCGM_FI_DEV_XID_ERRORS": ("_xid_last_or_zero", 1.0),
}

# label -> column
DCGM_LABELS: dict[str, str] = {
    "Hostname": "host",
    "UUID": "gpu_uuid",
    "gpu": "gpu_index",
    "GPU_I_ID": "mig_instance",
    "GPU_I_PROFILE": "mig_profile",
    "modelName": "model",
    "pci_bus_id": "pci_bus_id",
    "DCGM_FI_DRIVER_VERSION": "driver_version",
    "namespace": "k8s_namespace",
    "pod": "k8s_pod",
    "container": "k8s_container",
}

INFO_METRIC = "gpuledger_gpu_info"
# columns carried as labels of gpuledger_gpu_info (label name = column name)
INFO_COLUMNS = ("model", "environment", "region", "cluster", "pool", "instance_id", "instance_type",
                "image", "cuda_version", "team", "user", "job_id", "slurm_account", "source")

GPULEDGER_METRICS: dict[str, tuple[str, float]] = {
    "gpuledger_memory_used_bytes": ("mem_used_bytes", 1.0),
    "gpuledger_memory_total_bytes": ("mem_total_bytes", 1.0),
    "gpuledger_energy_joules": ("energy_j", 1.0),
    "gpuledger_processes": ("process_count", 1.0),
    "gpuledger_xid_errors": ("xid_count", 1.0),
    "gpuledger_process_count": ("process_count", 1.0),      # the names agents before 0.1 exposed
    "gpuledger_xid_count": ("xid_count", 1.0),
    "gpuledger_sample_timestamp_seconds": ("_ts_seconds", 1.0),
}

# labels naming the Kubernetes node, preferred over dcgm-exporter's Hostname (the exporter pod
# under the GPU Operator); [[scrape]] and [receiver] host_labels change them
NODE_LABELS = ("kubernetes_node", "node")
DCGM = MetricMapping(DCGM_METRICS, DCGM_LABELS, source="dcgm", host_labels=NODE_LABELS)
GPULEDGER = MetricMapping({**DCGM_METRICS, **GPULEDGER_METRICS},
                          {**DCGM_LABELS, **{c: c for c in INFO_COLUMNS}},
                          source="dcgm", info=frozenset({INFO_METRIC}), host_labels=NODE_LABELS)


def records_from_text(text: str, scrape_ts: datetime, mapping: MetricMapping = GPULEDGER,
                      defaults: dict | None = None, source: str | None = None
                      ) -> list[GpuSample]:
    """GpuSample records from one scrape of dcgm-exporter, our agent, or any exporter with a
    mapping (see ``collector.sample_mapping.mapping_from_config``)."""
    return samples_to_records(parse(text).samples, mapping, scrape_ts, defaults, source)
