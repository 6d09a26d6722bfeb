"""The collector agent's loop: sample every interval, expose ``/metrics``, hand rounds on.

``run_agent(config, destination, load_nvml, stop)`` is ``gpuledger collect``: it samples, serves
``/metrics`` and, given a destination (``collector.shipper.PushDestination``, or a store's), ships
every round through the durable spool. ``gpuledger up`` builds the same parts for local GPUs::

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

from collector.config import CollectorConfig
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
        self.exposition.update(round_.samples, round_.reserved_bytes)
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


def run_agent(c: CollectorConfig, destination, load_nvml, stop: threading.Event,
                  rounds: int | None = None, ready=None) -> int:
    """Run the agent until ``stop`` (or ``rounds``); return the rounds done."""
    from collector.agent import Agent, open_sampler, serve_metrics
    from collector.batches import batches_from_round
    from collector.owner_lookup import build_owner_lookup
    from collector.shipper import Shipper
    from collector.spool import Spool

    sampler, reason = open_sampler(load_nvml, host=c.host or None, labels=c.labels,
                                   owner_of=build_owner_lookup(c))
    spool = shipper = None
    sink = None
    if destination is not None:
        spool = Spool(c.spool_dir, max_bytes=int(c.spool_max_mb * 1024 * 1024))
        shipper = Shipper(spool, destination)
        host = sampler.host if sampler else ""

        def sink(round_):
            for batch in batches_from_round(round_, host):
                spool.append(batch)
            shipper.wake()

        log.info("shipping samples to %s through the spool in %s", destination, spool.dir)
    else:
        log.info("no --push-url and no server store DSN: samples are only exposed on /metrics")
    agent = Agent(sampler, c.interval_s, sink=sink, unavailable=reason)
    if spool is not None:
        agent.add_source(spool.collect)
        agent.add_source(shipper.collect)
        shipper.start()
    server = serve_metrics(agent.registry, c.listen, c.port) if c.port else None
    try:
        if ready:
            ready(agent, server, spool, shipper)
        if sampler is None:
            stop.wait() if rounds is None else None
            return 0
        return agent.run(stop, rounds)
    finally:
        if shipper is not None:
            shipper.stop(drain_s=5.0)
            spool.close()
        if server is not None:
            server.shutdown()
            server.server_close()
        if sampler is not None:
            sampler.close()
        log.info("collector stopped")
