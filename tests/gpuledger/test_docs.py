"""Docs that cannot drift: every CLI command and every sample column is in the README."""
import re

from collector.records import GPU_SAMPLE_COLUMNS
from gpuledger.cli import parser
from tests.helpers import ROOT, commands, long_options

README = (ROOT / "README.md").read_text()


def test_every_command_and_option_is_documented():
    found = list(commands(parser()))
    assert len(found) > 10, "the walk found almost no commands"
    for command, sub in found:
        assert f"`{command}" in README, f"{command} is not in the README's command reference"
        for flag in long_options(sub):
            assert re.search(rf"`{re.escape(command)}[^`]*{re.escape(flag)}", README), f"{command} {flag} undocumented"


def test_every_sample_column_is_documented():
    documented = re.findall(r"^\| `([a-z_0-9]+)` \|", README, re.M)
    assert [c for c in GPU_SAMPLE_COLUMNS if c not in documented] == []


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in README and "bash scripts/test.sh" in ci
