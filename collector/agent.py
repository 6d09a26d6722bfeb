"""The collector agent's loop: sample every interval, expose ``/metrics``, hand rounds on.

Built by ``gpuledger collect`` (``gpuledger/cli_collect.py``) — and, for local GPUs, by
``gpuledger up`` — from parts passed in::

    sampler, reason = open_sampler(lambda: pynvml, host="node-1", labels={...})
    agent = Agent(sampler, interval_s=10, sink=write_round, unavailable=reason)
    server = serve_metrics(agent.registry, "0.0.0.0", 9400)
    agent.run(stop_event)

``sink(round_)`` receives each ``SampleRound`` (the agent composition spools it for the
store); the agent itself knows nothing about ClickHouse. A failing sink or sampling round is
logged and counted (``gpuledger_agent_round_errors_total``); the loop goes on.

Without NVML (no driver, no permission) the agent still starts and serves ``/metrics`` —
its own health series, ``gpuledger_agent_nvml_available 0``, and whatever other sources add
— after one log line saying why there are no GPU samples.
"""
from __future__ import annotations

import logging
import threading
import time

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from collector.exposition import GpuMetricsCollector
from collector.nvml import NvmlSampler, NvmlUnavailable

log = logging.getLogger(__name__)


def open_sampler(load_nvml, host: str | None = None, labels: dict | None = None,
                 owner_of=None, clock=time.time):
    """``(NvmlSampler, None)``, or ``(None, reason)`` when NVML cannot be used here.

    ``load_nvml()`` returns the NVML module (``pynvml``, or a ``FakeNvml`` in tests); an
    ImportError from it counts as "NVML unavailable" too."""
    try:
        nvml = load_nvml()
    except ImportError as e:
        return None, f"the nvidia-ml-py package cannot be imported ({e}); `pip install nvidia-ml-py`"
    try:
        return NvmlSampler(nvml=nvml, clock=clock, host=host, labels=labels, owner_of=owner_of), None
    except NvmlUnavailable as e:
        return None, str(e)


class Agent:
    """Sampling loop plus its Prometheus registry; see the module docstring."""

    def __init__(self, sampler, interval_s: float = 10.0, sink=None, unavailable: str | None = None,
                 registry: CollectorRegistry | None = None, timer=time.monotonic):
        self.sampler, self.interval_s, self.sink = sampler, float(interval_s), sink
        self.unavailable = unavailable
        self.timer = timer
        self.errors = 0
        self.exposition = GpuMetricsCollector(stats=sampler.stats if sampler else None)
        self.exposition.add_source(self._own_metrics)
        self.registry = registry or CollectorRegistry()
        self.registry.register(self.exposition)
        if sampler is None:
            log.warning("no GPU samples from this node: %s", unavailable or "NVML is unavailable")

    def add_source(self, collect) -> None:
        """Also expose ``collect()``'s metric families (the spool's, the shipper's)."""
        self.exposition.add_source(collect)

    def round(self):
        """One sampling round: sample, expose, hand to the sink. Returns it (None: no NVML)."""
        if self.sampler is None:
            return None
        try:
            round_ = self.sampler.sample()
        except Exception:
            self.errors += 1
            log.exception("sampling round failed; trying again next interval")
            return None
        self.exposition.update(round_.samples)
        if self.sink is not None:
            try:
                self.sink(round_)
            except Exception as e:
                self.errors += 1
                log.error("could not hand round %s on (%s: %s); its samples are only on /metrics",
                          round_.ts.isoformat(), type(e).__name__, e)
        return round_

    def run(self, stop: threading.Event, rounds: int | None = None) -> int:
        """Sample every ``interval_s`` until ``stop`` is set (or ``rounds`` done); return rounds."""
        done = 0
        next_at = self.timer()
        while not stop.is_set() and (rounds is None or done < rounds):
            self.round()
            done += 1
            next_at += self.interval_s
            now = self.timer()
            if next_at < now:              # a slow round: skip ahead rather than burst
                next_at = now + self.interval_s
            stop.wait(max(0.0, next_at - now))
        return done

    def _own_metrics(self):
        yield GaugeMetricFamily("gpuledger_agent_nvml_available",
                                "1 when NVML answers on this node, 0 when it cannot be used.",
                                value=0 if self.sampler is None else 1)
        yield CounterMetricFamily("gpuledger_agent_round_errors",
                                  "Sampling rounds that failed or could not be handed on.",
                                  value=self.errors)


def serve_metrics(registry, listen: str, port: int):
    """Serve ``registry`` on ``http://listen:port/metrics`` in a daemon thread.

    Returns the server (``.server_port``; stop it with ``.shutdown()`` and ``.server_close()``).
    """
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=listen, registry=registry)
    log.info("serving Prometheus metrics on http://%s:%d/metrics", listen, server.server_port)
    return server
