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
    kubelet_url = "https://node-1:10250"      # owners: pods by name (collector.owner_lookup)
    slurm = "auto"                             # owners: Slurm accounts from scontrol
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
    # owners of the processes on the GPUs (collector.owner_lookup)
    proc_dir: str = "/proc"                  # the host's process table (hostPID: /proc)
    kubelet_url: str = ""                    # e.g. https://NODE:10250; "" = no pod names
    kubelet_token_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    kubelet_ca_file: str = ""                # "" = the system's CAs
    kubelet_insecure_tls: bool = False       # the kubelet's self-signed serving certificate
    slurm: Literal["auto", "on", "off"] = "auto"     # auto: when scontrol is on PATH
    team_labels: list[str] = field(default_factory=lambda: ["team"])        # pod labels naming the team
    team_annotations: list[str] = field(default_factory=list)              # then these annotations

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
        if self.kubelet_url and not self.kubelet_url.startswith(("http://", "https://")):
            return "kubelet_url", "the kubelet's http(s):// URL, such as https://NODE:10250 (or \"\" for none)"
        if self.push_url and not self.push_url.startswith(("http://", "https://")):
            return "push_url", "an http(s):// URL of the platform, such as http://platform:8050"
        return None
