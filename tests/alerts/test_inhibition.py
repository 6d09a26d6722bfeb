"""Inhibition: a firing higher-severity alert mutes lower ones with the same labels."""
from alerts.inhibition import InhibitRule, inhibited
from alerts.matchers import parse_matcher
from alerts.rules import Rule

from .conftest import make_engine, webhook_channel


def rule(name, severity):
    return Rule(name, sql=f"SELECT team, v AS value FROM src WHERE host = '{name}'", severity=severity,
                labels={"category": "budget"}, group_by=("alertname", "team"))


def test_critical_inhibits_warning_on_the_same_team_until_it_resolves(astore, source, receiver, clock):
    engine = make_engine(astore, [rule("budget_exceeded", "critical"), rule("budget_forecast", "warning")],
                         [webhook_channel(receiver)], clock)
    source.set(("vision", "budget_exceeded", 120.0), ("vision", "budget_forecast", 150.0),
               ("nlp", "budget_forecast", 130.0))
    report = engine.run_once()
    sent = sorted((b.json()["groupLabels"]["alertname"], b.json()["groupLabels"]["team"]) for b in receiver.delivered())
    assert sent == [("budget_exceeded", "vision"), ("budget_forecast", "nlp")]
    assert [why.split(" (")[0] for why in report.muted.values()] == ["inhibited by budget_exceeded"]
    clock.advance(60)
    source.set(("vision", "budget_forecast", 150.0), ("nlp", "budget_forecast", 130.0))
    engine.run_once()
    later = [(b.json()["groupLabels"]["alertname"], b.json()["groupLabels"]["team"], b.json()["status"])
             for b in receiver.delivered()[2:]]
    assert sorted(later) == [("budget_exceeded", "vision", "resolved"), ("budget_forecast", "vision", "firing")]


def test_equal_labels_must_match_and_an_alert_never_inhibits_itself():
    rules = [InhibitRule((parse_matcher("severity=critical"),), (parse_matcher("severity=~warning|critical"),), ("team",))]
    alerts = {"a": {"severity": "critical", "team": "x"}, "b": {"severity": "warning", "team": "x"},
              "c": {"severity": "warning", "team": "y"}, "d": {"severity": "warning"}}
    assert inhibited(alerts, rules) == {"b": "a"}
