"""The wheel `python -m build` makes is the whole product: its data files (the SQL, the
dashboard's assets, the simulator's traces) are inside it, and gpuledger runs from it alone;
`gpuledger --version` says the version pyproject.toml gives."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from tests.helpers import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PROJECT["project"]["version"]
PACKAGES = [p.rstrip("*") for p in PROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out, src = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):                # a copy, so no build/ is left in the checkout
        shutil.copy(ROOT / name, src / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    [path] = out.glob("gpuledger-*.whl")
    return path


def test_the_wheel_holds_every_data_file(wheel):
    assert wheel.name == f"gpuledger-{VERSION}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    data = [p.relative_to(ROOT).as_posix() for pattern in ("sql/**/*.sql", "sql/**/README.md", "dashboard/assets/*",
                                                            "sim/data/*") for p in ROOT.glob(pattern)]
    assert len(data) > 100
    missing = sorted(set(data) - names)
    assert not missing, f"not in the wheel: {missing[:10]}"
    assert not any(n.startswith(("tests/", "bench/")) for n in names), "tests and benchmarks stay in the checkout"


def test_gpuledger_runs_from_the_wheel_alone(wheel, tmp_path):
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    env = {"PYTHONPATH": str(unpacked), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def gpuledger(*args):
        return subprocess.run([sys.executable, "-c", "import sys; from gpuledger.cli import main; sys.exit(main())", *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    where = subprocess.run([sys.executable, "-c", "import gpuledger, sql; print(gpuledger.__file__, sql.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.split() and all(p.startswith(str(unpacked)) for p in where.stdout.split()), where
    version = gpuledger("--version")
    assert (version.returncode, version.stdout) == (0, f"gpuledger {VERSION}\n"), version.stderr
    init = gpuledger("--store", f"chdb://{tmp_path / 'store'}", "init")          # every migration from the wheel's sql/
    assert init.returncode == 0, init.stderr[-2000:]
    assert "schema version" in init.stdout
