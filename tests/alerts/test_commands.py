"""`gpuledger alerts ...` through its argparse edge: check, test, silence add/list/expire."""
import argparse
import json
from types import SimpleNamespace
from unittest.mock import patch

import pytest

from alerts.config import AlertsConfig, DeliveryConfig
from base.errors import ChannelError, SilenceError
from gpuledger.cli import alerts as alerts_cli
from gpuledger.cli.common import LOCAL

from .conftest import slack_channel, webhook_channel
from .test_builtin_pack import planted  # noqa: F401  (fixture)


def run(argv, store, alerts_cfg=None, teams=()):
    """The command as `gpuledger alerts ...` runs it, on ``store`` (the test's database)."""
    top = argparse.ArgumentParser(prog="gpuledger")
    top.add_argument("--store")
    alerts_cli.add_commands(top.add_subparsers(dest="command", required=True))
    args = top.parse_args(argv)
    cfg = SimpleNamespace(alerts=alerts_cfg or AlertsConfig(), teams=list(teams), source="defaults")
    if hasattr(args.func, "run"):            # a command that may also run through the platform (cli.common.beside)
        return args.func.run(args, cfg, store, LOCAL)
    with patch.object(alerts_cli, "open_store", lambda cfg, dsn: store):
        return args.func(args, cfg)


def test_check_prints_what_fires_and_writes_nothing(planted, capsys):  # noqa: F811
    assert run(["alerts", "check", "--at", "2026-03-20T12:00:00Z"], planted) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["state", "severity", "alertname", "value", "labels", "summary", "delivered_to", "note"]
    assert sum(1 for line in lines if line.startswith("firing")) == 11
    assert "9 rule(s) evaluated at 2026-03-20T12:00:00Z" in out and "11 firing, 0 pending, 1 silenced or inhibited" in out
    assert all(line.rstrip().endswith("nowhere") or "inhibited" in line for line in lines if line.startswith("firing"))
    assert "11 firing alert(s) would be delivered nowhere: no rule channel, route, team contact" in out
    assert "inhibited by team_budget_exceeded" in out
    assert "clinical-ai ran on gcp us-east4, not allowed" in out
    assert planted.scalar("SELECT count() FROM alert_state") == 0
    assert planted.scalar("SELECT count() FROM alert_notifications") == 0


def test_check_json_and_rule_filter(planted, capsys):  # noqa: F811
    assert run(["alerts", "check", "--at", "2026-03-20T12:00:00Z", "--rule", "compliance_residency",
                "--format", "json"], planted) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["alertname"], r["severity"], r["state"]) for r in rows] == [("compliance_residency", "critical", "firing")]


def test_check_send_records_and_sends_once(planted, receiver, capsys):  # noqa: F811
    cfg = AlertsConfig(channels=[webhook_channel(receiver)], default_channels=["hook"],
                       delivery=DeliveryConfig(inline_wait_max_s=0))
    at = ["alerts", "check", "--send", "--at", "2026-03-20T12:00:00Z"]
    assert run(at, planted, cfg) == 0
    first = capsys.readouterr().out
    assert "notification(s) decided;" in first
    groups = len(receiver.delivered())
    assert groups == 7          # idle: 2 team groups; budget: 1 (the forecast is inhibited); compliance: 4
    idle = next(r.json() for r in receiver.delivered() if r.json()["groupLabels"] == {
        "alertname": "gpu_idle_window", "team": "data-science"})
    assert idle["title"].startswith("[FIRING:3] team data-science · gpu_idle_window · $39.20 so far, $")
    assert all(r.json()["groupLabels"].get("alertname") != "team_budget_forecast" for r in receiver.delivered())
    assert run(at[:-1] + ["2026-03-20T12:01:00Z"], planted, cfg) == 0
    assert len(receiver.delivered()) == groups
    assert planted.scalar("SELECT count() FROM alert_state FINAL WHERE state = 'firing'") == 11


def test_check_shows_where_each_alert_goes(planted, receiver, capsys):  # noqa: F811
    from gpuledger.config import TeamConfig

    cfg = AlertsConfig(channels=[webhook_channel(receiver)])
    teams = [TeamConfig("data-science", contact="hook")]
    assert run(["alerts", "check", "--at", "2026-03-20T12:00:00Z", "--format", "json"], planted, cfg, teams) == 0
    rows = json.loads(capsys.readouterr().out)
    to = {(r["alertname"], r["labels"]): r["delivered_to"] for r in rows if r["state"] == "firing"}
    ds = [dest for (name, labels), dest in to.items() if "team=data-science" in labels]
    assert len(ds) == 3 and set(ds) == {"hook"}                     # the team's contact channel
    assert set(to.values()) == {"hook", "nowhere"}                 # the others: no route, no default
    assert len(receiver.delivered()) == 0                          # a dry run sends nothing


def test_check_reports_rule_errors_with_status_1(astore, capsys):
    assert run(["alerts", "check"], astore) == 1
    err = capsys.readouterr().err
    assert err.count("gpuledger: rule error: rule ") == 9 and "v_team_budget" in err


def test_unknown_rule_is_refused(astore):
    with pytest.raises(Exception, match="no rule named 'nope'"):
        run(["alerts", "check", "--rule", "nope"], astore)


def test_test_sends_to_the_channel_and_hides_its_secret(astore, receiver, capsys):
    cfg = AlertsConfig(channels=[slack_channel(receiver)], delivery=DeliveryConfig(inline_wait_max_s=0))
    assert run(["alerts", "test", "slack"], astore, cfg) == 0
    assert capsys.readouterr().out == "sent a test notification to slack (slack)\n"
    assert receiver.delivered()[0].json()["text"].startswith("[TEST]")
    receiver.reply(403, body=b"invalid_token")
    with pytest.raises(ChannelError) as info:
        run(["alerts", "test", "slack"], astore, cfg)
    assert "answered HTTP 403: invalid_token" in str(info.value) and "s3cr3tT0ken" not in str(info.value)
    with pytest.raises(ChannelError, match="no channel named 'nope'"):
        run(["alerts", "test", "nope"], astore, cfg)
    assert astore.scalar("SELECT count() FROM alert_notifications FINAL WHERE kind = 'test'") == 2


def test_silence_add_list_expire(astore, capsys):
    assert run(["alerts", "silence", "add", "team=vision", "alertname=~gpu_.*", "--comment", "maintenance",
                "--duration", "3h", "--author", "ana"], astore) == 0
    out = capsys.readouterr().out
    assert out.startswith("silence ") and "team=vision alertname=~gpu_.*" in out and "by ana" in out
    sid = out.split()[1]
    assert run(["alerts", "silence", "list", "--format", "json"], astore) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["id"], row["state"], row["created_by"], row["comment"]) == (sid, "active", "ana", "maintenance")
    assert run(["alerts", "silence", "expire", sid], astore) == 0
    assert "expired" in capsys.readouterr().out
    assert run(["alerts", "silence", "list"], astore) == 0
    assert "(0 rows)" in capsys.readouterr().out
    assert run(["alerts", "silence", "list", "--all"], astore) == 0
    assert "expired" in capsys.readouterr().out
    with pytest.raises(SilenceError, match="not like 30s"):
        run(["alerts", "silence", "add", "team=x", "--comment", "c", "--duration", "soon"], astore)
