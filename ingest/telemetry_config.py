"""Configuration of the telemetry path: the agent, the scrape targets, the receiver.

In ``gpuledger.toml``::

    [collector]                      # `gpuledger collect` on each GPU node (and local sampling in `up`)
    interval_s = 10
    listen = "0.0.0.0"
    port = 9400                      # dcgm-exporter's port
    spool_dir = "~/.local/share/gpuledger/spool"
    spool_max_mb = 256
    push_url = "http://platform:8050"          # where `gpuledger up` receives batches
    push_token = { env = "GPULEDGER_INGEST_TOKEN" }
    labels = { environment = "onprem", cluster = "berlin", pool = "h100" }

    [[scrape]]                       # pulled by `gpuledger up`
    name = "dcgm-node-1"
    url = "http://node-1:9400/metrics"
    format = "dcgm"                  # dcgm | gpuledger | custom
    interval_s = 15

    [receiver]                       # POST /api/v1/write and /api/v1/ingest/batch in `gpuledger up`
    token = { env = "GPULEDGER_INGEST_TOKEN" }
    max_body_mb = 16
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuledger.configschema import Secret

LABEL_KEYS = ("environment", "region", "cluster", "pool", "instance_id", "instance_type")


@dataclass
class CollectorConfig:
    interval_s: float = 10.0                 # seconds between sampling rounds
    listen: str = "0.0.0.0"                  # address /metrics is served on
    port: int = 9400                         # 0: do not serve /metrics
    spool_dir: str = "~/.local/share/gpuledger/spool"
    spool_max_mb: float = 256.0              # past this the oldest unsent batches are dropped
    push_url: str = ""                       # base URL of `gpuledger up` to push batches to
    push_token: Secret | None = None         # bearer token the receiver expects
    host: str = ""                           # host name on samples (default: this machine's)
    labels: dict[str, str] = field(default_factory=dict)   # environment, region, cluster, ...
    local_sampling: bool = True              # `gpuledger up` samples local GPUs when NVML works

    def validate(self):
        if not self.interval_s > 0:
            return "interval_s", "a number of seconds > 0"
        if not 0 <= self.port < 65536:
            return "port", "a TCP port between 0 (no /metrics) and 65535"
        if not self.spool_max_mb > 0:
            return "spool_max_mb", "a size in MB > 0"
        unknown = sorted(set(self.labels) - set(LABEL_KEYS))
        if unknown:
            return f"labels.{unknown[0]}", f"one of the label columns {', '.join(LABEL_KEYS)}"
        if self.push_url and not self.push_url.startswith(("http://", "https://")):
            return "push_url", "an http(s):// URL of the platform, such as http://platform:8050"
        return None


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
    format: Literal["dcgm", "gpuledger", "custom"] = "gpuledger"
    metrics: dict[str, MappedMetric] = field(default_factory=dict)   # custom: metric -> column
    label_map: dict[str, str] = field(default_factory=dict)          # custom: label -> column
    labels: dict[str, str] = field(default_factory=dict)             # defaults for columns
    token: Secret | None = None              # bearer token the target expects

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

    def validate(self):
        if not self.max_body_mb > 0:
            return "max_body_mb", "a size in MB > 0"
        return None
