"""The state machine: pending -> firing only after `for`, resolve once, restarts repeat nothing."""
from alerts import outbox
from alerts.state import load_states

from .conftest import make_engine, src_rule, webhook_channel


def bodies(receiver):
    return [r.json() for r in receiver.delivered()]


def test_pending_becomes_firing_only_after_for(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule(for_s=300)], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    report = engine.run_once()
    assert [st.state for st in report.firing] == [] and len(report.in_state("pending")) == 1
    clock.advance(299)
    assert engine.run_once().in_state("pending") and receiver.requests == []
    clock.advance(1)
    report = engine.run_once()
    assert [st.labels["host"] for st in report.firing] == ["h1"]
    [body] = bodies(receiver)
    assert body["status"] == "firing" and body["alerts"][0]["labels"]["alertname"] == "gpu_hot"
    assert body["alerts"][0]["annotations"]["summary"] == "h1 of vision is at 91.0"


def test_pending_that_stops_before_for_never_fires(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule(for_s=300)], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    engine.run_once()
    clock.advance(120)
    source.set()
    engine.run_once()
    clock.advance(600)
    report = engine.run_once()
    assert report.alerts == [] and receiver.requests == []
    events = astore.rows("SELECT from_state, to_state FROM alert_events ORDER BY ts")
    assert events == [("inactive", "pending"), ("pending", "inactive")]


def test_resolve_is_sent_once(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0), ("vision", "h2", 95.0))
    engine.run_once()
    clock.advance(60)
    source.set(("vision", "h2", 95.0))
    engine.run_once()
    for _ in range(3):
        clock.advance(60)
        engine.run_once()
    sent = bodies(receiver)
    assert len(sent) == 2
    second = sent[1]
    assert second["status"] == "firing"      # h2 still fires; h1 resolved in the same group
    assert sorted((a["labels"]["host"], a["status"]) for a in second["alerts"]) == [("h1", "resolved"), ("h2", "firing")]
    resolved = next(a for a in second["alerts"] if a["status"] == "resolved")
    assert resolved["endsAt"] == "2026-03-02T09:01:00Z"
    clock.advance(60)
    source.set()
    engine.run_once()
    clock.advance(60)
    engine.run_once()
    sent = bodies(receiver)
    assert len(sent) == 3 and sent[2]["status"] == "resolved"
    assert [a["labels"]["host"] for a in sent[2]["alerts"]] == ["h2"]


def test_refiring_after_resolve_notifies_again(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    engine.run_once()
    clock.advance(60)
    source.set()
    engine.run_once()
    clock.advance(60)
    source.set(("vision", "h1", 92.0))
    engine.run_once()
    assert [b["status"] for b in bodies(receiver)] == ["firing", "resolved", "firing"]


def test_restart_mid_way_repeats_nothing(astore, source, receiver, clock):
    channels = [webhook_channel(receiver)]
    source.set(("vision", "h1", 91.0))
    make_engine(astore, [src_rule(for_s=300)], channels, clock).run_once()        # pending
    clock.advance(300)
    make_engine(astore, [src_rule(for_s=300)], channels, clock).run_once()        # a new process: fires
    assert len(receiver.requests) == 1
    for _ in range(3):
        clock.advance(60)
        report = make_engine(astore, [src_rule(for_s=300)], channels, clock).run_once()
        assert report.notifications == []
    assert len(receiver.requests) == 1
    st = next(iter(load_states(astore)["gpu_hot"].values()))
    assert st.state == "firing" and st.active_since.isoformat() == "2026-03-02T09:00:00+00:00"


def test_crash_between_deciding_and_sending_sends_once_after_restart(astore, source, receiver, clock):
    channels = [webhook_channel(receiver)]
    source.set(("vision", "h1", 91.0))
    decided = make_engine(astore, [src_rule()], channels, clock).evaluate()        # recorded, then "crash"
    assert len(decided.notifications) == 1 and receiver.requests == []
    assert [e.status for e in outbox.entries(astore)] == ["pending"]
    clock.advance(60)
    report = make_engine(astore, [src_rule()], channels, clock).run_once()        # restart
    assert report.notifications == [] and report.delivery.delivered == [decided.notifications[0].key]
    clock.advance(60)
    make_engine(astore, [src_rule()], channels, clock).run_once()
    assert len(receiver.requests) == 1
    assert receiver.requests[0].headers["idempotency-key"] == decided.notifications[0].key


def test_a_failing_rule_keeps_its_alerts(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    engine.run_once()
    astore.command("RENAME TABLE src TO src_gone")
    clock.advance(60)
    report = engine.run_once()
    assert "rule gpu_hot: its query failed" in report.errors["gpu_hot"]
    assert [st.state for st, _ in report.alerts] == ["firing"] and len(receiver.requests) == 1
