"""`gpuledger schema` and `gpuledger bench` (gpuledger/cli/ops.py)."""
from __future__ import annotations

import subprocess
import sys

from bench.__main__ import bench_modules
from gpuledger.cli import main
from tests.helpers import ROOT, env


def test_schema_command_prints_single_node_and_cluster_ddl(capsys, store):
    from base.sqlfiles import split_statements

    assert main(["schema", "--cluster", "gpu_fleet", "--database", "gl"]) == 0
    cluster = capsys.readouterr().out
    assert main(["schema"]) == 0
    single = capsys.readouterr().out
    for text, marker in ((cluster, "ON CLUSTER gpu_fleet"), (single, "CREATE TABLE IF NOT EXISTS gpu_samples")):
        statements = split_statements(text)
        assert marker in text and len(statements) > 20
        for sql in statements:
            store.scalar("SELECT formatQuery({q:String})", {"q": sql})
    assert "gl.gpu_samples_local" in cluster and "Distributed(gpu_fleet, gl, gpu_samples_local, cityHash64(host))" in cluster
    assert main(["schema", "--cluster", "no-dashes"]) == 2
    assert "cluster name" in capsys.readouterr().err


def test_bench_quick_runs_every_benchmark_and_prints_one_table():
    out = subprocess.run([sys.executable, "-m", "gpuledger", "bench", "--quick"], cwd=ROOT, env=env(),
                         capture_output=True, text=True, timeout=600)
    print(out.stdout)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["bench", "figure", "value"])
    rows = [line for line in lines[header + 2:] if line.strip() and not line.startswith(" ")]
    names = bench_modules()
    assert {"sizing", "writer", "derive", "ingest_samples"} <= set(names)
    for name in names:
        assert any(row.split()[0] == name for row in rows), f"no figure from bench {name}"
    assert f"from {len(names)} of {len(names)} benchmarks" in out.stdout
    assert "compression ratio" in out.stdout and "B/row" in out.stdout


def test_schema_and_bench_are_gpuledger_commands():
    from gpuledger.cli import parser

    args = parser().parse_args(["schema", "--cluster", "c"])
    assert args.func.__module__ == "gpuledger.cli.ops"
    args = parser().parse_args(["bench", "--quick", "--only", "writer"])
    assert args.func.__module__ == "gpuledger.cli.ops" and args.quick and args.only == ["writer"]
