"""Shared by the benchmarks: a private embedded store, timing, and the result row shape.

Every benchmark module has ``run(quick: bool) -> list[dict]`` returning rows with keys
name, value, unit, reference, ratio, goal — a figure next to a reference measured in the same
run — and prints them with ``report`` when run as a script.
"""
from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
import time
from pathlib import Path

_store_dir: Path | None = None
_count = itertools.count()


def work_dir(name: str) -> Path:
    """A private directory for a benchmark's files, removed when this process exits (a full
    ``gpuledger bench`` writes ~10 GB of samples and stores; they were left behind before)."""
    path = Path(tempfile.mkdtemp(prefix=f"gpuledger-bench-{name}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def bench_store(name: str):
    """A fresh, migrated database in this process's one embedded store."""
    global _store_dir
    from ingest.schema import prepare
    from ingest.store import connect

    if _store_dir is None:
        _store_dir = work_dir("store")
    store = connect(f"chdb://{_store_dir}?database=bench_{name}_{next(_count)}")
    prepare(store)
    return store


def best_of(repeat: int, func, setup=lambda: None) -> float:
    """The fastest of ``repeat`` timed calls of ``func(setup())``, in seconds."""
    times = []
    for _ in range(repeat):
        arg = setup()
        start = time.perf_counter()
        func(arg)
        times.append(time.perf_counter() - start)
    return min(times)


def row(name: str, value: float, unit: str, reference: float | None, goal: str, higher_is_better: bool = True) -> dict:
    ratio = None
    if reference:
        ratio = value / reference if higher_is_better else reference / value
    return {"name": name, "value": value, "unit": unit, "reference": reference, "ratio": ratio, "goal": goal}


def report(rows: list[dict]) -> str:
    lines = [f"{'benchmark':58} {'value':>14} {'unit':10} {'reference':>14} {'ratio':>7}  goal"]
    for r in rows:
        ref = f"{r['reference']:14,.3f}" if r["reference"] is not None else f"{'-':>14}"
        ratio = f"{r['ratio']:7.2f}" if r["ratio"] is not None else f"{'-':>7}"
        lines.append(f"{r['name'][:58]:58} {r['value']:14,.3f} {r['unit'][:10]:10} {ref} {ratio}  {r['goal']}")
    return "\n".join(lines)
