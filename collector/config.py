"""The agent's configuration: the ``[collector]`` section of ``gpuledger.toml``::

    [collector]                      # `gpuledger collect` on each GPU node (and local sampling in `up`)
    interval_s = 10
    listen = "0.0.0.0"
    port = 9400                      # dcgm-exporter's port
    spool_dir = "~/.local/share/gpuledger/spool"
    spool_max_mb = 256
    push_url = "http://platform:8050"          # where `gpuledger up` receives batches
    push_token = { env = "GPULEDGER_INGEST_TOKEN" }
    labels = { environment = "onprem", cluster = "berlin", pool = "h100" }
"""
from __future__ import annotations

from dataclasses import dataclass, field

from base.settings import Secret

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
