"""The telemetry parts of ``gpuledger up`` in one call (used by ``build_platform``).

* the receiver routes (``ingest.receiver``): remote_write and agent batches;
* one scrape job per ``[[scrape]]`` target (``ingest.scrape``);
* in embedded mode, sampling of this machine's GPUs when NVML works here (``ingest.scrape.register_local_sampling``);
* the Slurm and Kubernetes queues (``ingest.queues``).
"""
from __future__ import annotations

from collector.config import CollectorConfig
from collector.nvml import load_pynvml
from ingest.queues import register_queues
from ingest.receiver import register_receiver
from ingest.scrape import register_local_sampling, register_scrapes
from ingest.telemetry_config import QueuesConfig, ReceiverConfig


def register_telemetry(platform, store, config, load_nvml=load_pynvml, *, auth: bool = True) -> dict:
    """Mount what ``config`` (``collector``, ``scrape``, ``receiver``, ``queues`` sections) asks for; ``auth``
    (off only with ``--no-auth``) makes the receiver require its token."""
    receiver = register_receiver(platform, store, getattr(config, "receiver", None) or ReceiverConfig(), auth=auth)
    scrapes = register_scrapes(platform, store, getattr(config, "scrape", None) or [])
    local = None
    if getattr(getattr(store, "target", None), "embedded", False):   # a server store has agents
        local = register_local_sampling(platform, store,
                                        getattr(config, "collector", None) or CollectorConfig(), load_nvml)
    queues = register_queues(platform, store, getattr(config, "queues", None) or QueuesConfig())
    return {"receiver": receiver, "scrapes": scrapes, "local": local, "queues": queues}
