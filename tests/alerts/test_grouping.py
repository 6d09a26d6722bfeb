"""Grouping, repeat_interval and routing by labels."""
from alerts.config import RouteConfig

from .conftest import make_engine, src_rule, webhook_channel


def test_one_notification_per_group(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule(group_by=("alertname", "team"))], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0), ("vision", "h2", 92.0), ("nlp", "h3", 93.0))
    report = engine.run_once()
    assert len(report.notifications) == 2
    got = sorted((b.json()["groupLabels"]["team"], sorted(a["labels"]["host"] for a in b.json()["alerts"]))
                 for b in receiver.delivered())
    assert got == [("nlp", ["h3"]), ("vision", ["h1", "h2"])]


def test_group_by_alertname_puts_every_instance_in_one_notification(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0), ("vision", "h2", 92.0), ("nlp", "h3", 93.0))
    engine.run_once()
    [body] = [r.json() for r in receiver.delivered()]
    assert len(body["alerts"]) == 3 and body["groupLabels"] == {"alertname": "gpu_hot"}


def test_no_repeat_before_repeat_interval(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule(repeat_interval_s=3600)], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    engine.run_once()
    for _ in range(59):
        clock.advance(60)
        assert engine.run_once().notifications == []
    clock.advance(60)                      # an hour after the first notification
    report = engine.run_once()
    assert len(report.notifications) == 1
    assert len(receiver.delivered()) == 2
    assert receiver.delivered()[1].json()["alerts"][0]["labels"]["host"] == "h1"


def test_a_new_alert_in_a_group_is_notified_at_once_with_the_others(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule(repeat_interval_s=3600)], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    engine.run_once()
    clock.advance(60)
    source.set(("vision", "h1", 91.0), ("vision", "h2", 97.0))
    engine.run_once()
    second = receiver.delivered()[1].json()
    assert sorted(a["labels"]["host"] for a in second["alerts"]) == ["h1", "h2"]


def test_routes_send_each_team_to_its_channel(astore, source, receiver, clock):
    channels = [webhook_channel(receiver, "vision-hook", "/vision"), webhook_channel(receiver, "ops", "/ops")]
    engine = make_engine(astore, [src_rule(group_by=("alertname", "team"))], channels, clock,
                         routes=[RouteConfig({"team": "vision"}, ["vision-hook"])], default_channels=["ops"])
    source.set(("vision", "h1", 91.0), ("nlp", "h3", 93.0))
    engine.run_once()
    assert [r.json()["groupLabels"]["team"] for r in receiver.delivered("/vision")] == ["vision"]
    assert [r.json()["groupLabels"]["team"] for r in receiver.delivered("/ops")] == ["nlp"]


def test_team_contact_channel_is_used_when_no_route_matches(astore, source, receiver, clock):
    from alerts.channels import build_channels
    from alerts.config import AlertsConfig, DeliveryConfig
    from alerts.engine import Engine

    channels = [webhook_channel(receiver, "nlp-oncall", "/nlp"), webhook_channel(receiver, "ops", "/ops")]
    cfg = AlertsConfig(builtin=False, channels=channels, default_channels=["ops"],
                       delivery=DeliveryConfig(inline_wait_max_s=0))
    engine = Engine(astore, [src_rule(group_by=("alertname", "team"))], cfg, build_channels(channels),
                    clock=clock, team_contacts={"nlp": "nlp-oncall"})
    source.set(("vision", "h1", 91.0), ("nlp", "h3", 93.0))
    engine.run_once()
    assert [r.json()["groupLabels"]["team"] for r in receiver.delivered("/nlp")] == ["nlp"]
    assert [r.json()["groupLabels"]["team"] for r in receiver.delivered("/ops")] == ["vision"]


def test_a_notification_link_opens_the_dashboard_with_its_filters_applied():
    """The link uses the dashboard's own URL parameters, so the filters are applied, not dropped."""
    from datetime import date
    from urllib.parse import parse_qs, urlparse

    from alerts.grouping import alert_url
    from dashboard.filters import parse

    url = alert_url("http://gl:8050/", "alerts", {"team": "research", "environment": "aws", "host": "h"})
    assert url.startswith("http://gl:8050/alerts?")
    filters = parse(parse_qs(urlparse(url).query), today=date(2026, 3, 2))
    assert filters.envs == ("aws",) and filters.teams == ("research",)
