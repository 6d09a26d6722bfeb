"""The derivation benchmark (bench/bench_derive.py) at its quick size: it derives as a rollup does
(its rollup + idle phases call the rollup's own functions) and prints every figure with its
reference and goal. No timing is asserted: the machine decides those."""
from __future__ import annotations

import re

import pytest

from bench import bench_derive, common


@pytest.fixture(scope="module")
def figures(store_dir):
    # the benchmark's databases in the tests' store: chDB opens one store directory per process
    before, common._store_dir = common._store_dir, store_dir
    try:
        yield bench_derive.run(quick=True)
    finally:
        common._store_dir = before


def one(figures, *words):
    found = [r for r in figures if all(w in r["name"] for w in words)]
    assert len(found) == 1, (words, [r["name"] for r in figures])
    return found[0]


def test_every_figure_has_its_reference_and_goal(figures):
    assert len(figures) == 5
    for r in figures:
        assert r["unit"] == "s" and r["value"] > 0 and r["reference"] > 0 and r["goal"], r


def test_the_derivation_against_the_plain_scan(figures):
    scan = one(figures, "plain GROUP BY (GPU, minute) scan")
    assert scan["goal"] == "<= 3x scan (ratio: derivation / scan)"
    assert scan["ratio"] == pytest.approx(scan["value"] / scan["reference"])
    assert scan["value"] == one(figures, "complete derivation", "ref: pandas")["value"]


def test_the_incremental_run_recomputes_one_day(figures):
    assert "(1 day recomputed)" in one(figures, "incremental run")["name"]


def test_the_derivation_runs_with_the_fleets_cloud_bills(figures):
    # the benchmark loads the simulated fleet's FOCUS bills, so the timed derivation includes
    # attributing them to GPUs (a fleet without bills would skip that work)
    name = one(figures, "complete derivation", "ref: pandas")["name"]
    lines = re.search(r"([\d,]+) bill lines", name)
    assert lines and int(lines.group(1).replace(",", "")) > 0, name
