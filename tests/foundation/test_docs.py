"""Docs that cannot drift: every CLI command and every sample column is in the README."""
import re
from pathlib import Path

from collector.records import GPU_SAMPLE_COLUMNS
from gpuledger.cli import parser

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def commands(p=None, prefix="gpuledger"):
    p = p or parser()
    for action in p._subparsers._group_actions if p._subparsers else []:
        for name, sub in action.choices.items():
            if sub._subparsers:
                yield from commands(sub, f"{prefix} {name}")
            else:
                yield f"{prefix} {name}", sub


def test_every_command_and_option_is_documented():
    for command, sub in commands():
        assert f"`{command}" in README, f"{command} is not in the README's command reference"
        for action in sub._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    assert re.search(rf"`{re.escape(command)}[^`]*{re.escape(flag)}", README), f"{command} {flag} undocumented"


def test_every_sample_column_is_documented():
    documented = re.findall(r"^\| `([a-z_0-9]+)` \|", README, re.M)
    assert [c for c in GPU_SAMPLE_COLUMNS if c not in documented] == []


def test_readme_test_command_is_what_ci_runs():
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in README and "bash scripts/test.sh" in ci
