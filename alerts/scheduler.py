"""Alerts inside ``gpuledger up``: one scheduler job running an evaluation round every
``alerts.interval_s``. A round whose rules failed still does everything else, then raises so
that ``/healthz`` shows the alerts part degraded with the reason."""
from __future__ import annotations

from alerts.engine import Engine
from base.errors import RuleError


def install(platform, cfg, **engine_kwargs) -> Engine | None:
    """Register the alerts job on ``platform`` (a gpuledger.platform.Platform); None when disabled."""
    if not cfg.alerts.enabled:
        return None
    from alerts.actions import engine_for

    engine = engine_for(cfg, platform.store, **engine_kwargs)

    def round_():
        report = engine.run_once()
        if report.errors:
            raise RuleError("; ".join(report.errors.values()))

    platform.add_job("alerts", round_, seconds=cfg.alerts.interval_s)
    return engine
