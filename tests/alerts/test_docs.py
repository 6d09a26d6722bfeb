"""docs/alerts.md cannot drift: every config key, built-in rule, param and command is in it."""
import argparse
import dataclasses
import re
from pathlib import Path

from alerts import config
from alerts.builtin import BUILTIN_RULES
from gpuledger.cli.alerts import add_commands

DOC = (Path(__file__).resolve().parents[2] / "docs" / "alerts.md").read_text()
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

    def walk(parser, prefix):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield prefix, parser
        for action in subs:
            for name, sub in action.choices.items():
                yield from walk(sub, f"{prefix} {name}")

    commands = list(walk(top, "gpuledger"))
    assert len(commands) == 5
    for command, parser in commands:
        assert f"`{command}" in DOC, command
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    assert re.search(rf"`{re.escape(command)}[^`]*{re.escape(flag)}", DOC), f"{command} {flag}"


def test_example_section_loads_and_names_every_key():
    import tomllib
    import typing

    from base.settings import build

    path = Path(__file__).resolve().parents[2] / "docs" / "alerts.example.toml"
    text = path.read_text()
    env = {"SLACK_WEBHOOK_URL": "https://hooks.invalid/x", "SMTP_PASSWORD": "x"}
    cfg = build(config.AlertsConfig, tomllib.loads(text)["alerts"], "alerts", str(path), env)
    assert [c.name for c in cfg.channels] == ["ops-slack", "oncall-mail", "alertmanager"]

    def walk(cls, seen):
        for name, hint in typing.get_type_hints(cls).items():
            yield name
            for candidate in (hint, *getattr(hint, "__args__", ())):
                if dataclasses.is_dataclass(candidate) and candidate not in seen:
                    seen.add(candidate)
                    yield from walk(candidate, seen)

    missing = sorted({k for k in walk(config.AlertsConfig, set()) if f"{k} =" not in text and f".{k}]" not in text})
    assert missing == []
