"""The agent's ``/metrics``: the last sampled records as Prometheus metrics.

``GpuMetricsCollector`` is a prometheus-client custom collector (anything with
``collect()``)::

    collector = GpuMetricsCollector(stats=sampler.stats)
    registry.register(collector)
    ...
    round_ = sampler.sample()                         # after each round
    collector.update(round_.samples, round_.reserved_bytes)

Series use dcgm-exporter's names, units and labels where DCGM has the value (``gpu``,
``UUID``, ``pci_bus_id``, ``device``, ``Hostname``, ``DCGM_FI_DRIVER_VERSION``,
``GPU_I_ID`` / ``GPU_I_PROFILE`` on MIG devices, ``namespace`` / ``pod`` / ``container`` when a
pod holds the GPU), so dashboards built for dcgm-exporter work unchanged (NVIDIA's, Grafana 12239, selects and
groups by ``Hostname``, ``gpu``, ``UUID`` and ``GPU_I_*``). One label is left out: dcgm-exporter's
``modelName``, which is camelCase and fails ``promtool check metrics``; the model is the
``model`` label of ``gpuledger_gpu_info`` (``… * on(UUID) group_left(model) gpuledger_gpu_info``).
Memory is split as dcgm-exporter splits it: ``FB_USED`` what processes allocated, ``FB_RESERVED``
the driver's and firmware's share, ``FB_FREE`` the rest. What DCGM lacks is under ``gpuledger_*``:
exact memory bytes and energy joules, ``process_count``, the XID count of the interval, the
sample's own time, and ``gpuledger_gpu_info`` whose labels carry the model, environment, region,
cluster, pool, instance, CUDA version, image and the owner (team, user, job_id, slurm_account). A
value that was not sampled (None) has no series. ``collector.dcgm.GPULEDGER`` maps this text back
onto the very same ``GpuSample`` records (``ts`` comes from ``gpuledger_sample_timestamp_seconds``).

Agent health: ``gpuledger_agent_rounds_total``, ``gpuledger_agent_samples_total``,
``gpuledger_agent_sample_errors_total{field}``, ``gpuledger_agent_gpus``,
``gpuledger_agent_gpus_lost``, ``gpuledger_agent_round_seconds``. Other parts of the agent
(the ingest spool's drop counter, for one) add theirs with :meth:`add_source`.
"""
from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from collector.dcgm import INFO_COLUMNS, INFO_METRIC
from collector.records import GpuSample

MIB = 1024 * 1024

# (metric, help, type, getter) — getter returns None when there is nothing to expose
_SERIES = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", lambda s: s.util_gpu),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "gauge", lambda s: s.util_mem),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge",
     lambda s: None if s.mem_used_bytes is None else s.mem_used_bytes / MIB),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", lambda s: s.power_w),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).",
     "unknown", lambda s: None if s.energy_j is None else s.energy_j * 1000),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge", lambda s: s.temperature_c),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "gauge", lambda s: s.sm_clock_mhz),
    ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", "gauge",
     lambda s: s.mem_clock_mhz),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "Current clock event reasons (bitmask).", "gauge",
     lambda s: s.throttle_reasons),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total single-bit volatile ECC errors.", "unknown",
     lambda s: s.ecc_corrected_volatile),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total double-bit volatile ECC errors.", "unknown",
     lambda s: s.ecc_uncorrected_volatile),
    ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "Total single-bit persistent ECC errors.", "unknown",
     lambda s: s.ecc_corrected_aggregate),
    ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "Total double-bit persistent ECC errors.", "unknown",
     lambda s: s.ecc_uncorrected_aggregate),
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "gauge",
     lambda s: s.xid_last or 0),
    ("gpuledger_memory_used_bytes", "GPU memory used, in bytes.", "gauge",
     lambda s: s.mem_used_bytes),
    ("gpuledger_memory_total_bytes", "GPU memory total, in bytes.", "gauge",
     lambda s: s.mem_total_bytes),
    ("gpuledger_energy_joules", "Energy counter since driver load, in joules.", "unknown",
     lambda s: s.energy_j),
    ("gpuledger_processes", "Compute processes holding the GPU.", "gauge",
     lambda s: s.process_count),
    ("gpuledger_xid_errors", "XID errors seen during the last sampling interval.", "gauge",
     lambda s: s.xid_count),
    ("gpuledger_sample_timestamp_seconds", "When the GPU was sampled (Unix time).", "gauge",
     lambda s: s.ts.timestamp()),
)

# the rest of the memory, where the reserved share is known (NVML's v2 call); without it the used
# memory counts the reserved in (collector.nvml_fields.read_memory)
_FREE_AND_RESERVED = (
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).",
     lambda s, reserved: None if s.mem_used_bytes is None or s.mem_total_bytes is None
     else (s.mem_total_bytes - s.mem_used_bytes - (reserved or 0)) / MIB),
    ("DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).",
     lambda s, reserved: None if reserved is None else reserved / MIB),
)


def dcgm_labels(s: GpuSample) -> dict[str, str]:
    """dcgm-exporter's labels for one GPU entity, but ``modelName`` (see the module docstring)."""
    labels = {"gpu": str(s.gpu_index), "UUID": s.gpu_uuid, "pci_bus_id": s.pci_bus_id,
              "device": f"nvidia{s.gpu_index}", "Hostname": s.host,
              "DCGM_FI_DRIVER_VERSION": s.driver_version}
    if s.mig_instance:
        labels["GPU_I_ID"] = s.mig_instance
        labels["GPU_I_PROFILE"] = s.mig_profile
    if s.k8s_namespace or s.k8s_pod:
        labels["namespace"] = s.k8s_namespace
        labels["pod"] = s.k8s_pod
        labels["container"] = s.k8s_container
    return labels


class GpuMetricsCollector:
    """Exposes the records of the last round; see the module docstring."""

    def __init__(self, stats=None):
        self._samples: list[GpuSample] = []
        self._reserved: dict[tuple[str, str], int] = {}
        self._stats = stats
        self._sources: list = []

    def update(self, samples, reserved_bytes: dict[tuple[str, str], int] | None = None) -> None:
        """Replace what is exposed with these records (the latest round) and the memory
        reserved on their GPUs, by (gpu_uuid, mig_instance) (``SampleRound.reserved_bytes``)."""
        self._samples = list(samples)
        self._reserved = dict(reserved_bytes or {})

    def add_source(self, collect) -> None:
        """Also expose what ``collect()`` yields (prometheus-client metric families)."""
        self._sources.append(collect)

    def collect(self):
        samples = self._samples
        labels = [dcgm_labels(s) for s in samples]
        for name, doc, kind, get in _SERIES:
            family = Metric(name, doc, kind)
            for s, lab in zip(samples, labels):
                v = get(s)
                if v is not None:
                    family.add_sample(name, lab, float(v))
            if family.samples:
                yield family
        reserved = [self._reserved.get((s.gpu_uuid, s.mig_instance)) for s in samples]
        for name, doc, get in _FREE_AND_RESERVED:
            family = GaugeMetricFamily(name, doc)
            for s, lab, r in zip(samples, labels, reserved):
                v = get(s, r)
                if v is not None:
                    family.add_sample(name, lab, float(v))
            if family.samples:
                yield family
        if samples:
            yield self._info(samples, labels)
        if self._stats is not None:
            yield from self._agent_metrics(self._stats)
        for source in self._sources:
            yield from source()

    @staticmethod
    def _info(samples, labels) -> GaugeMetricFamily:
        info = GaugeMetricFamily(INFO_METRIC, "Where the GPU is, what runs it and who uses it.")
        for s, lab in zip(samples, labels):
            info.add_sample(INFO_METRIC, {**lab, **{c: str(getattr(s, c)) for c in INFO_COLUMNS}},
                            1.0)
        return info

    @staticmethod
    def _agent_metrics(st):
        yield CounterMetricFamily("gpuledger_agent_rounds", "Sampling rounds done.",
                                  value=st.rounds)
        yield CounterMetricFamily("gpuledger_agent_samples", "GPU samples produced.",
                                  value=st.samples_total)
        errors = CounterMetricFamily("gpuledger_agent_sample_errors",
                                     "NVML reads that failed (not 'not supported'), by field.",
                                     labels=["field"])
        for field, n in sorted(st.field_errors.items()):
            errors.add_metric([field], n)
        yield errors
        yield GaugeMetricFamily("gpuledger_agent_gpus", "GPUs NVML reports.", value=st.gpus)
        yield GaugeMetricFamily("gpuledger_agent_gpus_lost", "GPUs not answering NVML now.",
                                value=st.gpus_lost)
        yield GaugeMetricFamily("gpuledger_agent_round_seconds",
                                "Duration of the last sampling round.",
                                value=st.last_round_seconds)
