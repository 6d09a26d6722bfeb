"""A benchmark's files (simulated samples, its embedded stores) are removed when its process
exits: a full ``gpuledger bench`` writes ~10 GB, and every run used to leave them in the temp dir."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
from bench.common import bench_store, work_dir
work = work_dir("probe")
(work / "samples.parquet").write_bytes(b"x" * 1000)
store = bench_store("probe")
store.command("CREATE TABLE t (a UInt32) ENGINE = MergeTree ORDER BY a")
store.command("INSERT INTO t SELECT number FROM numbers(1000)")
from bench import common
print(work)
print(common._store_dir)
assert store.scalar("SELECT count() FROM t") == 1000
"""


def test_work_dirs_and_the_bench_store_are_removed_when_the_process_exits(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    work, store = (Path(line) for line in done.stdout.split())
    assert work.parent == store.parent == tmp_path and work.name.startswith("gpuledger-bench-probe-")
    assert not work.exists() and not store.exists()
    assert list(tmp_path.iterdir()) == []
