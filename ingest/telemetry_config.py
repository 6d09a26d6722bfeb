"""Configuration of the platform's telemetry intake: the scrape targets and the receiver (the
agent's own section is ``collector.config``).

In ``gpuledger.toml``::

    [[scrape]]                       # pulled by `gpuledger up`
    name = "dcgm-node-1"
    url = "http://node-1:9400/metrics"
    format = "dcgm"                  # dcgm | gpuledger | custom
    interval_s = 15

    [receiver]                       # POST /api/v1/write and /api/v1/ingest/batch in `gpuledger up`
    token = { env = "GPULEDGER_INGEST_TOKEN" }
    max_body_mb = 16

    [queues]                         # GPU demand that waits, read by `gpuledger up` (ingest.queues)
    slurm = "auto"
    kubernetes_url = "https://kubernetes.default.svc"
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from base.settings import Secret


@dataclass
class MappedMetric:
    column: str                              # a numeric gpu_samples column (or a helper column)
    scale: float = 1.0                       # value × scale is stored


@dataclass
class ScrapeTarget:
    name: str
    url: str
    interval_s: float = 15.0
    timeout_s: float = 10.0
    format: Literal["dcgm", "gpuledger", "nvidia_gpu_exporter", "custom"] = "gpuledger"
    metrics: dict[str, MappedMetric] = field(default_factory=dict)   # custom: metric -> column
    label_map: dict[str, str] = field(default_factory=dict)          # custom: label -> column
    labels: dict[str, str] = field(default_factory=dict)             # defaults for columns
    token: Secret | None = None              # bearer token the target expects
    host_labels: list[str] | None = None     # labels naming the host before the mapped one
                                             # (default: kubernetes_node, node; [] for none)

    def validate(self):
        if not self.url.startswith(("http://", "https://")):
            return "url", "an http(s):// URL such as http://node-1:9400/metrics"
        if not self.interval_s >= 1:
            return "interval_s", "a number of seconds >= 1"
        if self.format == "custom" and not self.metrics:
            return "metrics", "at least one metric -> column entry for format = 'custom'"
        return None


@dataclass
class ReceiverConfig:
    enabled: bool = True
    token: Secret | None = None              # bearer token senders must present (None: open)
    max_body_mb: float = 16.0                # larger request bodies are refused with 413
    environment: str = ""                    # default environment for remote_write samples
    host_labels: list[str] | None = None     # labels naming the host before Hostname (default:
                                             # kubernetes_node, node; [] for none)
    quiet_minutes: float = 15.0              # an agent / scrape target silent this long counts as quiet
                                             # (gpuledger_ingest_sources_quiet on GET /metrics)

    def validate(self):
        if not self.max_body_mb > 0:
            return "max_body_mb", "a size in MB > 0"
        if not self.quiet_minutes > 0:
            return "quiet_minutes", "a number of minutes > 0"
        return None


@dataclass
class QueuesConfig:
    """``[queues]``: where ``gpuledger up`` reads the GPU jobs and pods that wait (``ingest.queues``)."""
    interval_s: float = 60.0                 # seconds between reads; each row stands for this long
    slurm: Literal["auto", "on", "off"] = "auto"   # squeue on this machine; auto: when it is on PATH
    slurm_cluster: str = ""                  # the cluster column of Slurm's rows
    kubernetes_url: str = ""                 # the API server; "" = no Kubernetes queue
    kubernetes_token_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    kubernetes_ca_file: str = ""             # "" = the system's CAs
    kubernetes_insecure_tls: bool = False
    kubernetes_cluster: str = ""             # the cluster column of Kubernetes' rows
    pool_selectors: list[str] = field(default_factory=lambda: ["gpuledger.io/pool", "nvidia.com/gpu.product"])
    team_labels: list[str] = field(default_factory=lambda: ["team"])   # a pod's team: the first label set
    pool_map: dict[str, str] = field(default_factory=dict)   # partition / selector value -> gpuledger pool

    def validate(self):
        if not self.interval_s >= 10:
            return "interval_s", "a number of seconds >= 10"
        if self.kubernetes_url and not self.kubernetes_url.startswith(("http://", "https://")):
            return "kubernetes_url", "the API server's https:// URL, such as https://kubernetes.default.svc"
        return None
