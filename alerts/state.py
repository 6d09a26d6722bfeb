"""The alert state machine, as in Prometheus: inactive -> pending -> firing -> resolved.

``transition`` is pure: given a rule's previous states and this round's instances it returns the
new states and the events. ``load_states`` / ``save`` keep them in ClickHouse (``alert_state``,
``alert_events``), read at the start of every round, so a restart continues where it stopped.

* a new instance becomes *pending*; with ``for`` = 0 it fires at once;
* a pending instance fires once it has been active for ``for``;
* an instance that stops being returned: pending -> inactive (forgotten), firing -> resolved;
* a resolved instance returned again starts over as pending; one resolved for longer than
  ``keep_resolved`` is forgotten.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from alerts.clock import utc, version
from alerts.evaluate import Instance
from alerts.rules import Rule

PENDING, FIRING, RESOLVED, INACTIVE = "pending", "firing", "resolved", "inactive"


@dataclass
class AlertState:
    rule: str
    fingerprint: str
    labels: dict[str, str]
    annotations: dict[str, str]
    severity: str
    state: str
    value: float
    active_since: datetime
    fired_at: datetime | None = None
    resolved_at: datetime | None = None
    evaluated_at: datetime | None = None

    @property
    def summary(self) -> str:
        return self.annotations.get("summary", "")


STATE_COLUMNS = [f.name for f in dataclasses.fields(AlertState)]
EVENT_COLUMNS = ["ts", "rule", "fingerprint", "labels", "severity", "from_state", "to_state", "value", "summary"]


@dataclass
class Transition:
    current: dict[str, AlertState] = field(default_factory=dict)   # not inactive, after the round
    changed: list[AlertState] = field(default_factory=list)        # rows to write
    events: list[tuple] = field(default_factory=list)              # alert_events rows


def transition(rule: Rule, previous: dict[str, AlertState], instances: list[Instance], now: datetime,
               keep_resolved_s: float) -> Transition:
    out = Transition()

    def change(st: AlertState, new_state: str) -> None:
        out.events.append((now, st.rule, st.fingerprint, st.labels, st.severity, st.state, new_state, st.value,
                           st.summary))
        st.state = new_state

    seen = set()
    for inst in instances:
        seen.add(inst.fingerprint)
        prev = previous.get(inst.fingerprint)
        if prev is None or prev.state in (RESOLVED, INACTIVE):
            st = AlertState(rule.name, inst.fingerprint, inst.labels, inst.annotations, inst.severity,
                            prev.state if prev else INACTIVE, inst.value, now, evaluated_at=now)
            change(st, PENDING)
            if rule.for_s <= 0:
                st.fired_at = now
                change(st, FIRING)
            out.changed.append(st)
        else:
            st = dataclasses.replace(prev, labels=inst.labels, annotations=inst.annotations, value=inst.value,
                                     evaluated_at=now)
            moved = False
            if st.state == PENDING and now - st.active_since >= timedelta(seconds=rule.for_s):
                st.fired_at = now
                change(st, FIRING)
                moved = True
            if moved or st.value != prev.value or st.annotations != prev.annotations:
                out.changed.append(st)
        out.current[st.fingerprint] = st
    for fp, prev in previous.items():
        if fp in seen:
            continue
        st = dataclasses.replace(prev, evaluated_at=now)
        if st.state == PENDING:
            change(st, INACTIVE)
            out.changed.append(st)
            continue
        if st.state == FIRING:
            st.resolved_at = now
            change(st, RESOLVED)
            out.changed.append(st)
        elif st.state == RESOLVED and st.resolved_at and now - st.resolved_at >= timedelta(seconds=keep_resolved_s):
            change(st, INACTIVE)
            out.changed.append(st)
            continue
        out.current[fp] = st
    return out


def load_states(store) -> dict[str, dict[str, AlertState]]:
    """{rule: {fingerprint: state}} of every alert not inactive."""
    cols = ", ".join(STATE_COLUMNS)
    rows = store.rows(f"SELECT {cols} FROM alert_state FINAL WHERE state != 'inactive'")
    out: dict[str, dict[str, AlertState]] = {}
    for row in rows:
        st = AlertState(*row)
        st.labels, st.annotations = dict(st.labels), dict(st.annotations)
        st.active_since, st.fired_at = utc(st.active_since), utc(st.fired_at)
        st.resolved_at, st.evaluated_at = utc(st.resolved_at), utc(st.evaluated_at)
        out.setdefault(st.rule, {})[st.fingerprint] = st
    return out


def save(store, changed: list[AlertState], events: list[tuple]) -> None:
    if changed:
        rows = [[*dataclasses.astuple(st), version()] for st in changed]
        store.insert("alert_state", rows, STATE_COLUMNS + ["version"])
    if events:
        store.insert("alert_events", events, EVENT_COLUMNS)
