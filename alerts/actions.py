"""What an operator asks of the alerts engine by hand (``gpuledger alerts check | test``, whose
command line is ``gpuledger/cli/alerts.py``): one evaluation round, a dry run unless told to
send, and a test notification through one channel."""
from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path

from alerts.clock import iso, system_clock
from alerts.config import AlertsConfig
from alerts.engine import RoundReport, engine_from_config
from alerts.notification import AlertView, Notification
from base.errors import AlertsError, ChannelError


def engine_for(cfg, store, clock=system_clock, **kwargs):
    alerts_cfg: AlertsConfig = cfg.alerts
    base_dir = Path(cfg.source).parent if cfg.source not in ("", "defaults") else None
    return engine_from_config(store, alerts_cfg, teams=cfg.teams, base_dir=base_dir, clock=clock, **kwargs)


# --- check -----------------------------------------------------------------------------------

def check(store, cfg, *, send: bool = False, at: datetime | None = None, rules: list[str] | None = None,
          clock=system_clock, **engine_kwargs) -> RoundReport:
    """Evaluate once. Without ``send`` a dry run (nothing written or sent); with it a full round."""
    fixed = at or clock()
    engine = engine_for(cfg, store, clock=lambda: fixed if at else clock(), **engine_kwargs)
    if rules:
        unknown = sorted(set(rules) - {r.name for r in engine.rules})
        if unknown:
            raise AlertsError(f"no rule named {unknown[0]!r}; rules: {', '.join(r.name for r in engine.rules)}")
        engine.rules = [r for r in engine.rules if r.name in rules]
    if send:
        return engine.run_once()
    return engine.evaluate(fixed, apply=False)


# --- test ---------------------------------------------------------------------------------

def test_notification(channel: str, base_url: str, now: datetime) -> Notification:
    alert = AlertView(
        fingerprint="0" * 16, status="firing",
        labels={"alertname": "gpuledger_test", "severity": "info", "channel": channel},
        annotations={"summary": f"Test notification from gpuledger to channel {channel}",
                     "description": "If you can read this, the channel works."},
        value=1.0, starts_at=iso(now), url=f"{base_url.rstrip('/')}/alerts")
    return Notification(key=f"test-{uuid.uuid4().hex}", channel=channel, group_key="test",
                        group_labels={"alertname": "gpuledger_test"}, status="test", alerts=(alert,),
                        created_at=now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                        dashboard_url=f"{base_url.rstrip('/')}/alerts", extra={"repeat_s": 0.0})


def send_test(store, cfg, channel: str, clock=system_clock, **engine_kwargs):
    """Send a test notification through ``channel`` (recorded like any other, retried inline)."""
    from alerts import outbox

    engine = engine_for(cfg, store, clock=clock, **engine_kwargs)
    if channel not in engine.channels:
        known = ", ".join(engine.channels) or "none are configured"
        raise ChannelError(f"no channel named {channel!r} under alerts.channels ({known})")
    now = clock()
    outbox.enqueue(store, [test_notification(channel, cfg.alerts.base_url, now)], now)
    return engine.deliver(only=[channel])


