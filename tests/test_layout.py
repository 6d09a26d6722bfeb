"""The layout holds: imports go one way, the agent and `--help` stay light, and every
`gpuledger …` command that code or docs name exists."""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuledger.cli import parser
from tests.helpers import ROOT

PRODUCT = ("base", "collector", "ingest", "alerts", "dashboard", "sim", "gpuledger")
OURS = set(PRODUCT) | {"bench", "tests", "sql"}
# package -> the packages of ours it may import (besides itself)
ALLOWED = {
    "base": set(),
    "collector": {"base"},
    "sim": {"base", "collector"},
    "alerts": {"base"},
    "dashboard": {"base", "alerts"},
    "ingest": {"base", "collector"},
    "gpuledger": set(PRODUCT),
}


def imports_of(root: Path, package: str):
    """(file, line, imported top-level package) for every import of ours in ``package``,
    including imports inside functions."""
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in OURS and top != package:
                    yield path.relative_to(root), node.lineno, top


def violations(root: Path) -> list[str]:
    return [f"{path}:{line} imports {top} ({path.parts[0]} may import only {sorted(ALLOWED[path.parts[0]]) or 'nothing of ours'})"
            for package in ALLOWED if (root / package).is_dir()
            for path, line, top in imports_of(root, package) if top not in ALLOWED[package]]


def test_imports_go_one_way():
    assert violations(ROOT) == []


def test_the_import_check_sees_a_wrong_way_import(tmp_path):
    (tmp_path / "collector").mkdir()
    (tmp_path / "collector" / "agent.py").write_text("def f():\n    from ingest.store import connect\n")
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "errors.py").write_text("import gpuledger.cli\n")
    assert violations(tmp_path) == [
        "base/errors.py:1 imports gpuledger (base may import only nothing of ours)",
        "collector/agent.py:2 imports ingest (collector may import only ['base'])",
    ]


HEAVY = ("pandas", "dash", "flask", "werkzeug", "pyarrow")
PROBE = """
import sys
from gpuledger.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print("LOADED", " ".join(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})))
sys.exit(code or 0)
"""


@pytest.mark.parametrize("argv", [["--help"], ["collect", "--rounds", "1", "--port", "0"]])
def test_help_and_the_agent_import_no_analysis_or_web_code(argv, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GPULEDGER_STORE_DSN": f"chdb://{tmp_path}/store"}
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *argv], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = next(line for line in out.stdout.splitlines() if line.startswith("LOADED")).split()[1:]
    assert loaded == [], f"gpuledger {' '.join(argv)} imported {loaded}"


TEXT_FILES = (".py", ".md", ".toml", ".sh", ".yml", ".yaml", ".sql", "Dockerfile")
SPAN = re.compile(r"`(?:\.venv/bin/)?gpuledger ([^`\n]+)`")
BLOCK = re.compile(r"^```(?:sh|bash|console|shell)\n(.*?)^```", re.M | re.S)
SHELL = re.compile(r"^\s*(?:\$ )?(?:\.venv/bin/)?gpuledger ([^\n#]+)", re.M)


def named_commands() -> list[tuple[str, str]]:
    """(where, the words after `gpuledger`) for every command that code and docs name."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    found = []
    for name in files:
        path = ROOT / name
        if not name.endswith(TEXT_FILES) or not path.is_file() or name == "tests/test_layout.py":
            continue
        text = path.read_text(errors="replace")
        spans = SPAN.findall(text)
        if name.endswith(".sh"):
            spans += SHELL.findall(text)
        if name.endswith(".md"):      # command lines in the shell blocks
            spans += [m for block in BLOCK.findall(text) for m in SHELL.findall(block)]
        found += [(name, span.strip()) for span in spans]
    return found


def resolve(words: list[str]) -> str | None:
    """None when ``gpuledger <words>`` names a command that exists, else what is wrong. Stops at
    the first word that is no command name (an argument, a placeholder such as COMMAND)."""
    current, path, i = parser(), ["gpuledger"], 0
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            i += 2 if word in ("--config", "--store") else 1
            continue
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or not re.fullmatch(r"[a-z][a-z-]*", word):
            return None
        if word not in subs[0].choices:
            return f"no command {' '.join(path + [word])}"
        current, path, i = subs[0].choices[word], path + [word], i + 1
    return None


def test_every_command_named_in_code_and_docs_exists():
    named = named_commands()
    assert len(named) > 50, "the scan found almost nothing: is it reading the files?"
    wrong = [f"{where}: `gpuledger {words}`: {problem}" for where, words in named
             if (problem := resolve(words.replace("…", " ").split()))]
    assert wrong == []


def test_the_command_check_sees_a_command_that_does_not_exist():
    assert resolve(["migrate"]) == "no command gpuledger migrate"
    assert resolve(["alerts", "silence", "remove", "x"]) == "no command gpuledger alerts silence remove"
    assert resolve(["ingest", "samples", "day1.csv"]) is None
    assert resolve(["--config", "x.toml", "rollup", "--force"]) is None


def test_every_exception_class_is_in_the_error_tree():
    """Errors an operator can see are GpuledgerErrors (one line, no traceback): all are in base/errors.py."""
    outside = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and any(
                        re.search(r"(Error|Exception|Unavailable|Refused|Lost|Rejected)$", ast.unparse(b)) for b in node.bases):
                    if path.relative_to(ROOT) != Path("base/errors.py"):
                        outside.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert outside == []
