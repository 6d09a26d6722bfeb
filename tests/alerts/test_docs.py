"""docs/alerts.md cannot drift: every config key, built-in rule, param and command is in it."""
import argparse
import dataclasses
import re

from alerts import config
from alerts.builtin import BUILTIN_RULES
from gpuledger.cli.alerts import add_commands
from tests.helpers import ROOT, commands, config_keys, long_options

DOC = (ROOT / "docs" / "alerts.md").read_text()
REFERENCE = DOC.split("## Configuration reference")[1].split("## Commands")[0]


def test_every_config_key_is_in_the_reference():
    for cls in (config.AlertsConfig, config.DeliveryConfig, config.BuiltinRuleConfig, config.RuleConfig,
                config.ChannelConfig, config.RouteConfig, config.InhibitConfig):
        for f in dataclasses.fields(cls):
            as_key = re.search(rf"^{f.name} = ", REFERENCE, re.M)
            as_table = re.search(rf"^\[\[?alerts\.{f.name}[\].]", REFERENCE, re.M)
            assert as_key or as_table, f"{cls.__name__}.{f.name} is not documented"


def test_every_builtin_rule_and_param_is_documented():
    for rule in BUILTIN_RULES.values():
        row = next((line for line in DOC.splitlines() if line.startswith(f"| `{rule.name}` |")), None)
        assert row, f"{rule.name} is not in the built-in rule table"
        for param, default in rule.params.items():
            assert f"`{param}` ({default:g})" in row, f"{rule.name}.{param} default {default:g} is not documented"


def test_every_alerts_command_and_option_is_documented():
    top = argparse.ArgumentParser(prog="gpuledger")
    add_commands(top.add_subparsers())

    found = list(commands(top))
    assert len(found) == 6
    for command, parser in found:
        assert f"`{command}" in DOC, command
        for flag in long_options(parser):
            assert re.search(rf"`{re.escape(command)}[^`]*{re.escape(flag)}", DOC), f"{command} {flag}"


def test_example_section_loads_and_names_every_key():
    import tomllib

    from base.settings import build

    path = ROOT / "docs" / "alerts.example.toml"
    text = path.read_text()
    env = {"SLACK_WEBHOOK_URL": "https://hooks.invalid/x", "SMTP_PASSWORD": "x"}
    cfg = build(config.AlertsConfig, tomllib.loads(text)["alerts"], "alerts", str(path), env)
    assert [c.name for c in cfg.channels] == ["ops-slack", "oncall-mail", "alertmanager"]
    missing = sorted({k for k in config_keys(config.AlertsConfig) if f"{k} =" not in text and f".{k}]" not in text})
    assert missing == []


def test_every_builtin_rule_has_a_runbook_where_its_url_points():
    from alerts.config import RUNBOOK_BASE_URL
    from alerts.rules import runbook_url

    runbooks = (ROOT / "docs" / "runbooks.md").read_text()
    assert RUNBOOK_BASE_URL.endswith("/docs/runbooks.md")
    for name in BUILTIN_RULES:
        assert f"\n## {name}\n" in runbooks, f"docs/runbooks.md has no section for {name}"
        assert runbook_url(RUNBOOK_BASE_URL, name) == f"{RUNBOOK_BASE_URL}#{name}"
    assert runbook_url("https://wiki.example/gpu/{alertname}", "team_spend_anomaly") == \
        "https://wiki.example/gpu/team_spend_anomaly"
