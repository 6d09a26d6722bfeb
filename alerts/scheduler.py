"""Alerts inside ``gpuledger up``: one scheduler job running an evaluation round every
``alerts.interval_s``. A round whose rules failed still does everything else, then raises so
that ``/healthz`` shows the alerts part degraded with the reason.

With ``[alerts.digest] enabled``, a second job, ``alerts-digest``, sends each team's waste digest
when it is due (``alerts.digest.send_digests``), checking every ``interval_s`` (at least every 15
minutes). The two jobs share one lock, so two deliveries of the outbox never overlap.
"""
from __future__ import annotations

import threading
import time

from alerts.engine import Engine
from base.errors import RuleError

DIGEST_CHECK_MAX_S = 900                 # a due digest waits at most this long for its round


def install(platform, cfg, **engine_kwargs) -> Engine | None:
    """Register the alerts job on ``platform`` (a gpuledger.platform.Platform); None when disabled."""
    if not cfg.alerts.enabled:
        return None
    from alerts.actions import engine_for

    engine = engine_for(cfg, platform.store, **engine_kwargs)
    outbox_lock = threading.Lock()
    metrics = getattr(platform, "metrics", None)     # the platform's own metrics (GET /metrics)

    def round_():
        with outbox_lock:
            started = time.perf_counter()
            report = engine.run_once()
            if metrics is not None:
                metrics.alert_round(time.perf_counter() - started, len(report.firing))
        if report.errors:
            raise RuleError("; ".join(report.errors.values()))

    platform.add_job("alerts", round_, seconds=cfg.alerts.interval_s)
    if cfg.alerts.digest.enabled:
        from alerts.digest import send_digests

        def digest():
            with outbox_lock:
                send_digests(platform.store, cfg, engine, engine.clock())

        platform.add_job("alerts-digest", digest, seconds=min(cfg.alerts.interval_s, DIGEST_CHECK_MAX_S))
    return engine
