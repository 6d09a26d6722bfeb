"""One evaluation round: rules -> state machine -> silences and inhibition -> groups -> outbox -> delivery.

``Engine.run_once()`` is what the scheduler of ``gpuledger up`` calls every ``interval_s``;
``Engine.evaluate(apply=False)`` is the dry run behind ``gpuledger alerts check``. Everything the
next round needs is read back from ClickHouse at its start, so any round may be the first after
a restart.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from alerts import outbox
from alerts.channels import build_channels
from alerts.clock import Clock, system_clock
from alerts.config import AlertsConfig
from alerts.delivery.retry import Deliverer, DeliveryReport
from alerts.durations import parse_duration
from alerts.evaluate import evaluate_rules
from alerts.grouping import Routing, plan
from alerts.inhibition import InhibitRule, inhibited
from alerts.notification import Notification
from alerts.rules import Rule, rules_from_config
from alerts.silences import list_silences, silenced_by
from alerts.state import FIRING, RESOLVED, AlertState, load_states, save, transition

log = logging.getLogger(__name__)


@dataclass
class RoundReport:
    at: datetime
    alerts: list[tuple[AlertState, Rule]] = field(default_factory=list)   # pending, firing, resolved
    errors: dict[str, str] = field(default_factory=dict)                  # rule -> error
    muted: dict[str, str] = field(default_factory=dict)                   # fingerprint -> why
    destinations: dict[str, list[str]] = field(default_factory=dict)      # fingerprint -> channels ([]: nowhere)
    notifications: list[Notification] = field(default_factory=list)
    delivery: DeliveryReport | None = None
    rules: int = 0
    duration_s: float = 0.0

    def in_state(self, state: str) -> list[AlertState]:
        return [st for st, _ in self.alerts if st.state == state]

    @property
    def firing(self) -> list[AlertState]:
        return self.in_state(FIRING)


class Engine:
    def __init__(self, store, rules: list[Rule], cfg: AlertsConfig, channels: dict, *,
                 clock: Clock = system_clock, sleep: Callable[[float], None] = time.sleep,
                 team_contacts: dict[str, str] | None = None):
        self.store, self.rules, self.cfg, self.channels, self.clock = store, rules, cfg, channels, clock
        self.routing = Routing(tuple((dict(r.match), tuple(r.channels)) for r in cfg.routes),
                               dict(team_contacts or {}), tuple(cfg.default_channels))
        self.inhibit_rules = [InhibitRule.from_config(c) for c in cfg.inhibit]
        self.keep_resolved_s = parse_duration(cfg.keep_resolved)
        self.send_resolved = {c.name: c.send_resolved for c in cfg.channels}
        self.deliverer = Deliverer(store, channels, cfg.delivery, clock=clock, sleep=sleep)

    def evaluate(self, now: datetime | None = None, *, apply: bool = True) -> RoundReport:
        """Evaluate every rule and decide notifications. With ``apply`` the new state and the
        notifications are written (not yet sent); without, nothing is written (a dry run)."""
        started = time.perf_counter()
        now = now or self.clock()
        report = RoundReport(now, rules=len(self.rules))
        results, report.errors = evaluate_rules(self.store, self.rules, now)
        for error in report.errors.values():
            log.warning("%s", error)
        previous = load_states(self.store)
        by_name = {r.name: r for r in self.rules}
        changed, events = [], []
        for name in list(by_name) + sorted(set(previous) - set(by_name)):
            rule = by_name.get(name) or Rule(name, sql="")      # a rule removed from the config resolves
            prev = previous.get(name, {})
            if name in report.errors:
                report.alerts += [(st, rule) for st in prev.values()]
                continue
            step = transition(rule, prev, results.get(name, []), now, self.keep_resolved_s)
            changed += step.changed
            events += step.events
            report.alerts += [(st, rule) for st in step.current.values()]
        report.muted = self.muted(report.alerts, now)
        report.destinations = {st.fingerprint: self.routing.channels_for(st.labels, rule.channels)
                               for st, rule in report.alerts}
        last = outbox.last_per_group(self.store)
        report.notifications = plan(report.alerts, report.muted, last, self.routing, now, self.cfg.base_url,
                                    self.send_resolved)
        if apply:
            save(self.store, changed, events)
            outbox.enqueue(self.store, report.notifications, now)
        report.duration_s = time.perf_counter() - started
        return report

    def muted(self, alerts: list[tuple[AlertState, Rule]], now: datetime) -> dict[str, str]:
        """{fingerprint: why} of firing alerts silenced or inhibited now, and of resolved alerts
        that were silenced when they resolved (their resolve is never sent, during the silence or
        after it)."""
        silences = list_silences(self.store, now, include_expired=True)
        out = {}
        for st, _ in alerts:
            if st.state in (FIRING, RESOLVED):
                sid = silenced_by(st.labels, silences, now)
                if st.state == RESOLVED and st.resolved_at:
                    sid = sid or silenced_by(st.labels, silences, st.resolved_at)
                if sid:
                    out[st.fingerprint] = f"silenced by {sid}"
        firing = {st.fingerprint: st for st, _ in alerts if st.state == FIRING}
        for fp, source in inhibited({fp: st.labels for fp, st in firing.items()}, self.inhibit_rules).items():
            out.setdefault(fp, f"inhibited by {firing[source].rule} ({source})")
        return out

    def deliver(self, only: list[str] | None = None) -> DeliveryReport:
        return self.deliverer.run(only)

    def run_once(self) -> RoundReport:
        """A full round: evaluate, record notifications, deliver everything due."""
        report = self.evaluate(apply=True)
        report.delivery = self.deliver()
        if report.notifications or report.delivery.failed or report.delivery.retrying:
            log.info("alerts: %d firing, %d notification(s) decided, %d delivered, %d retrying, %d failed",
                     len(report.firing), len(report.notifications), len(report.delivery.delivered),
                     len(report.delivery.retrying), len(report.delivery.failed))
        return report


def engine_from_config(store, cfg: AlertsConfig, *, teams=(), base_dir: Path | None = None, transport=None,
                       smtp=None, clock: Clock = system_clock, sleep: Callable[[float], None] = time.sleep) -> Engine:
    """The engine for a config: its rules, its channels (with the real transports unless given),
    and each team's ``contact`` channel (the config refuses one that names no channel)."""
    channels = build_channels(cfg.channels, transport=transport, smtp=smtp)
    contacts = {t.name: t.contact for t in teams if t.contact}
    return Engine(store, rules_from_config(cfg, base_dir), cfg, channels, clock=clock, sleep=sleep,
                  team_contacts=contacts)
