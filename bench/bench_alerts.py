"""Alert evaluation time for the built-in rule pack on a 256-GPU x 30-day fleet.

Until the analytics views exist, the views the pack reads are stand-in tables with the
contract's names and columns (``bench/alerts_standins.py``), filled with a fleet of that size:
~61,000 idle windows (a few percent over the two-hour threshold, so ~2,600 alerts fire), daily
spend and utilization per team x environment, budgets and findings.

Reference: the pack's nine queries run directly through the client, in the same run — the
engine's own overhead (state, silences, inhibition, grouping, outbox) is the difference.
Goal: an evaluation round under 2 s.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone

from bench import alerts_standins as standins
from bench.common import bench_store, best_of, report, row

GOAL = "< 2 s per round"


def rounds(store, now: datetime, repeat: int) -> dict:
    """The built-in pack's rounds on ``store`` at ``now``, in seconds (best of ``repeat``): its
    queries run bare (the reference), a dry-run round, the first round (sends) and a steady round;
    with the alerts firing and notifications sent in the first round."""
    from alerts.channels.http import Response
    from alerts.channels.webhook import WebhookChannel
    from alerts.config import AlertsConfig, ChannelConfig
    from alerts.engine import Engine
    from alerts.evaluate import sql_time
    from alerts.rules import builtin_rules

    sent = []
    cfg = AlertsConfig(channels=[ChannelConfig(name="hook", type="webhook", endpoint="http://bench.invalid/hook")],
                       default_channels=["hook"])
    rules = builtin_rules(cfg)
    channels = {"hook": WebhookChannel("hook", "http://bench.invalid/hook",
                                       transport=lambda request: sent.append(request) or Response(200))}
    engine = Engine(store, rules, cfg, channels, clock=lambda: now)

    def raw(_):
        for rule in rules:
            store.rows(rule.sql, {"now": sql_time(now), **rule.params})

    reference = best_of(repeat, raw)
    dry = best_of(repeat, lambda _: engine.evaluate(now, apply=False))
    started = time.perf_counter()
    first = engine.run_once()
    first_s = time.perf_counter() - started
    assert not first.errors, first.errors
    steady = best_of(repeat, lambda _: engine.run_once())
    return {"reference": reference, "dry": dry, "first": first_s, "steady": steady, "firing": len(first.firing),
            "notifications": len(first.notifications)}


def run(quick: bool = False) -> list[dict]:
    from base.sqlfiles import split_statements, text

    gpus, days = (64, 7) if quick else (256, 30)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    store = bench_store("alerts")
    if store.scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'alert_state'") == 0:
        for statement in split_statements(text("migrations/005_alerts")):
            store.command(statement)
    for name in standins.DDL:            # stand-ins replace whatever the migrations made under these names
        if name.startswith("v_"):
            store.command(f"DROP VIEW IF EXISTS {name}")
        store.command(f"DROP TABLE IF EXISTS {name}")
    standins.create(store)
    sizes = standins.fill_fleet(store, now, gpus=gpus, days=days)

    r = rounds(store, now, 3 if quick else 5)
    reference, firing = r["reference"], r["firing"]
    print(f"fleet: {gpus} GPUs x {days} days, {sizes['v_idle_waste']:,} idle windows, {sizes['v_team_spend']:,} "
          f"spend rows; {firing:,} alerts firing, {r['notifications']} notifications in the first round")
    return [
        row(f"alerts: dry-run round, {gpus} GPUs x {days} d", r["dry"], "s", reference, GOAL, higher_is_better=False),
        row(f"alerts: first round ({firing:,} firing, sends)", r["first"], "s", reference, GOAL, higher_is_better=False),
        row("alerts: steady round (nothing new to send)", r["steady"], "s", reference, GOAL, higher_is_better=False),
    ]

if __name__ == "__main__":
    import sys

    print(report(run(quick="--quick" in sys.argv)))
