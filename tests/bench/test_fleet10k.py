"""The 10,000-GPU benchmark (bench/bench_fleet10k.py) at its quick size: every figure the issue asks
for is printed, in its unit, with a sane value. No timing is asserted: the machine decides those."""
from __future__ import annotations

import re

import pytest

from bench import bench_fleet10k

PAGES = ("overview", "utilization", "idle", "spend", "placement", "compliance", "alerts", "gpu")


@pytest.fixture(scope="module")
def figures():
    return bench_fleet10k.run(quick=True)


def one(figures, *words):
    found = [r for r in figures if all(w in r["name"] for w in words)]
    assert len(found) == 1, (words, [r["name"] for r in figures])
    return found[0]


def test_every_row_has_the_shape_of_a_figure(figures):
    for r in figures:
        assert set(r) == {"name", "value", "unit", "reference", "ratio", "goal"}, r
        assert r["value"] >= 0 and r["goal"], r


def test_ingest_rate_against_the_needed_670_rows_per_second(figures):
    ingest = one(figures, "ingest over HTTP", "vs needed")
    assert ingest["unit"] == "rows/s" and ingest["value"] > 0
    assert ingest["reference"] == 670 and ingest["ratio"] == pytest.approx(ingest["value"] / 670)
    assert "remote_write" in ingest["name"] and "10x" in ingest["goal"]
    assert one(figures, "p95 of a push")["unit"] == "s"


def test_incremental_derivation_and_alert_rounds(figures):
    derive = one(figures, "incremental derivation")
    assert derive["unit"] == "s" and derive["value"] > 0 and derive["reference"] > 0 and derive["goal"] == "< 60 s"
    lines = re.search(r"([\d,]+) bill lines", derive["name"])   # the fleet's cloud bills are derived too
    assert lines and int(lines.group(1).replace(",", "")) > 0, derive["name"]
    rounds = [r for r in figures if r["name"].startswith("alerts:")]
    assert len(rounds) == 4
    for r in rounds:
        assert r["unit"] == "s" and r["value"] > 0 and r["reference"] > 0 and r["goal"] == "< 2 s"


def test_a_p95_for_every_dashboard_page(figures):
    for page in PAGES:
        r = one(figures, f"dashboard {page},", "p95")
        assert r["unit"] == "ms" and r["value"] > 0 and r["reference"] > 0 and r["goal"] == "< 300 ms"


def test_disk_per_gpu_day_raw_and_rolled_up(figures):
    raw = one(figures, "disk per GPU-day, raw")
    rolled = one(figures, "disk per GPU-day, rolled up")
    for r in (raw, rolled):
        assert r["unit"] == "B" and r["value"] > 0
        assert r["reference"] > r["value"]              # uncompressed is larger: the ratio is the compression
    # 5,760 samples a GPU-day: the raw table is tens of kilobytes per GPU-day, rollups smaller
    assert 1_000 < raw["value"] < 1_000_000 and rolled["value"] < raw["value"]
    assert one(figures, "gpu_minute")["value"] > one(figures, "gpu_hour (")["value"]


def test_peak_memory_of_the_platform_process(figures):
    peak = one(figures, "peak memory")
    assert peak["unit"] == "GB" and 0.05 < peak["value"] < 64 and peak["goal"] == "< 4 GB"
