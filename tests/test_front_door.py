"""The front door (issue #13): the README's demo command, as written, works on a fresh copy of
the checkout with nothing but the machine's python3: it makes its own virtualenv, installs the
package from the package index and serves the platform until stopped.

Runs once with the distribution's /usr/bin/python3 (what a fresh Debian/Ubuntu has: PEP 668
refuses a plain `pip install` there) and once with another python3 on the PATH, if any. Slow
the first time (a virtualenv and a pip install from the index in each copy).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import ROOT, free_port

SYSTEM_PYTHON = "/usr/bin/python3"
READY_TIMEOUT_S = 600     # venv creation and pip install from the package index happen inside
STOP_GRACE_S = 60         # SIGTERM waits for a running derive job before the process exits
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "HOME": "", "LANG": "C.UTF-8"}


def readme_demo_command() -> str:
    """The one command in the README's "Set up and run" section under "Run the demo"."""
    readme = (ROOT / "README.md").read_text()
    section = re.search(r"^## Set up and run\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    assert section, "README.md has no '## Set up and run' section"
    block = re.search(r"\*\*Run the demo\*\*.*?```sh\n(.*?)```", section.group(1), re.S)
    assert block, "README's 'Set up and run' has no ```sh block after **Run the demo**"
    lines = [line.strip() for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(lines) == 1, f"expected one demo command in the README, got {lines}"
    return lines[0]


def other_python() -> str | None:
    """The first python3 on this test's full PATH whose real interpreter is not the system one
    (asked of the interpreter itself, so that pyenv shims and virtualenvs resolve to it)."""
    system = os.path.realpath(SYSTEM_PYTHON)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidate = shutil.which("python3", path=directory) if directory else None
        if not candidate or os.path.realpath(candidate) == system:
            continue
        try:
            real = subprocess.run(
                [candidate, "-c", "import os, sys; print(os.path.realpath(getattr(sys, '_base_executable', sys.executable)))"],
                capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if real and real != system and os.path.isfile(real):
            return real
    return None


def fresh_copy(dest: Path) -> None:
    """What a fresh clone of this working tree holds: tracked and untracked-but-not-ignored files
    (uncommitted changes included; .venv, caches and build outputs left out)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout
    for name in filter(None, listed.split(b"\0")):
        rel = os.fsdecode(name)
        source, target = ROOT / rel, dest / rel
        if not source.is_file():       # tracked but deleted in the working tree
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copy2(source, target, follow_symlinks=False)
        except FileNotFoundError:      # removed while we copied
            continue


def tail(log: Path, chars: int = 4000) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    return text[-chars:]


def healthz(port: int) -> int | None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


@pytest.mark.parametrize("interpreter", ["system", "other"])
def test_readme_demo_command_serves_from_a_fresh_copy(interpreter, tmp_path):
    env = dict(CLEAN_ENV)
    if interpreter == "system":
        assert os.path.isfile(SYSTEM_PYTHON), (
            f"{SYSTEM_PYTHON} is missing: the README's commands are for a machine with the "
            "distribution's python3 (Debian/Ubuntu: apt-get install python3)")
    else:
        python = other_python()
        if python is None:
            pytest.skip(f"no python3 other than {SYSTEM_PYTHON} on this machine's PATH")
        env["PYTHON"] = python

    command = readme_demo_command()
    checkout = tmp_path / "checkout"
    fresh_copy(checkout)
    port = free_port()
    # Extra arguments pass through to `gpuledger demo`; the default fleet size loads in ~30 s.
    shell = f"{command} --port {port}"
    log = tmp_path / "demo.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-c", shell], cwd=checkout, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        status = None
        while time.monotonic() - started < READY_TIMEOUT_S and proc.poll() is None:
            status = healthz(port)
            if status == 200:
                break
            time.sleep(2)
        assert proc.poll() is None, (
            f"`{shell}` (env {env}) exited with status {proc.returncode} before serving; "
            f"output ends:\n{tail(log)}")
        assert status == 200, (
            f"`{shell}` (env {env}): /healthz on port {port} answered {status} after "
            f"{time.monotonic() - started:.0f} s; output ends:\n{tail(log)}")

        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        assert proc.returncode is not None, (
            f"`{shell}` still running {STOP_GRACE_S} s after SIGTERM; output ends:\n{tail(log)}")
        assert proc.returncode == 0, f"`{shell}` exited with status {proc.returncode} on SIGTERM; output ends:\n{tail(log)}"
    finally:
        try:                        # nothing of the command's process group outlives the test
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
