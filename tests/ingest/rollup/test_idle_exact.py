"""Idle windows exact to the sample: hand-computable cases, one per rule of DESIGN.md's
"Idle window". On-prem GPU at $1.50 per covered hour (capital $1 + operations $0.50, no power)."""
from __future__ import annotations

from datetime import date, timedelta

import pytest

from ingest.rollup.run import rollup
from tests.ingest.rollup.conftest import at, insert_samples, series

GPU = {"host": "dgx-1", "gpu_uuid": "GPU-1", "environment": "onprem", "pool": "dgx", "process_count": 1,
       "team": "nlp", "user": "ana", "job_id": "job-7"}
USD_PER_S = 1.5 / 3600


def run(store, cfg, until="2026-03-03T00:00:00"):
    return rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at(until))


def windows(store) -> list[tuple[str, str, float, float]]:
    return [(s, e, d, round(c, 6)) for s, e, d, c in store.rows(
        "SELECT toString(start), toString(end), duration_s, cost_usd FROM idle_windows ORDER BY start")]


def idle(start, end, step_s, **kw):
    return series(start, end, step_s=step_s, util_gpu=0.0, util_mem=0.0, **kw)


def busy(start, end, step_s, **kw):
    return series(start, end, step_s=step_s, util_gpu=60.0, util_mem=30.0, **kw)


def test_boundaries_fall_at_sample_times_not_minutes(store, cfg):
    # every 10 s: busy up to the 10:00:25 sample (it holds to 10:00:35), idle from 10:00:35 to the
    # 10:20:35 sample (it holds to 10:20:45, where a busy sample comes)
    insert_samples(store, busy("2026-03-02T09:50:05", "2026-03-02T10:00:35", 10)
                   + idle("2026-03-02T10:00:35", "2026-03-02T10:20:45", 10)
                   + busy("2026-03-02T10:20:45", "2026-03-02T10:40:05", 10), **GPU)
    run(store, cfg)
    assert windows(store) == [("2026-03-02 10:00:35.000", "2026-03-02 10:20:45.000", 1210.0, round(1210 * USD_PER_S, 6))]


def test_one_busy_sample_ends_a_window_inside_an_otherwise_idle_minute(store, cfg):
    samples = idle("2026-03-02T10:00:00", "2026-03-02T10:40:00", 10)
    busy_at = at("2026-03-02T10:20:10")
    for s in samples:
        if s["ts"] == busy_at:
            s.update(util_gpu=50.0)
    insert_samples(store, samples + busy("2026-03-02T10:40:00", "2026-03-02T10:50:00", 10), **GPU)
    run(store, cfg)
    assert [w[:3] for w in windows(store)] == [("2026-03-02 10:00:00.000", "2026-03-02 10:20:10.000", 1210.0),
                                               ("2026-03-02 10:20:20.000", "2026-03-02 10:40:00.000", 1180.0)]


@pytest.mark.parametrize("samples, expected", [(76, [912.0]), (74, [])])
def test_a_run_just_over_the_minimum_is_a_window_and_just_under_is_not(store, cfg, samples, expected):
    # one idle sample every 12 s: 76 of them hold for 15.2 minutes, 74 for 14.8
    start = at("2026-03-02T10:00:00")
    end = start + timedelta(seconds=12 * samples)
    insert_samples(store, idle(start.isoformat(), end.isoformat(), 12)
                   + busy(end.isoformat(), (end + timedelta(minutes=5)).isoformat(), 12), **GPU)
    run(store, cfg)
    assert [w[2] for w in windows(store)] == expected


def test_a_short_gap_is_bridged_and_a_longer_one_ends_the_window(store, cfg):
    cfg.analytics.max_gap_s = 60                     # samples every 30 s; a silence over 60 s is no data
    cfg.analytics.idle_max_gap_minutes = 2
    # the last sample before each silence holds 30 s (its preceding interval): the 10:09:30 sample
    # holds to 10:10:00 and the next comes at 10:12:00, 120 s of no data (bridged); the 10:29:30
    # sample holds to 10:30:00 and the next comes at 10:32:30, 150 s (the window ends)
    insert_samples(store, idle("2026-03-02T10:00:00", "2026-03-02T10:10:00", 30)
                   + idle("2026-03-02T10:12:00", "2026-03-02T10:30:00", 30)
                   + idle("2026-03-02T10:32:30", "2026-03-02T10:50:00", 30), **GPU)
    run(store, cfg)
    covered_first = 20 * 30 + 36 * 30                # 10:00-10:10 and 10:12-10:30
    assert windows(store) == [
        ("2026-03-02 10:00:00.000", "2026-03-02 10:30:00.000", 1800.0, round(covered_first * USD_PER_S, 6)),
        ("2026-03-02 10:32:30.000", "2026-03-02 10:50:00.000", 1050.0, round(1050 * USD_PER_S, 6))]
    assert store.rows("SELECT covered_s FROM idle_windows ORDER BY start") == [(covered_first,), (1050.0,)]


def test_the_last_sample_before_no_data_holds_for_the_interval_before_it(store, cfg):
    # samples every 20 s until 10:30:00, then nothing: the window ends at 10:30:20, not at the next hour
    insert_samples(store, idle("2026-03-02T10:00:00", "2026-03-02T10:30:20", 20), **GPU)
    run(store, cfg)
    assert [w[:3] for w in windows(store)] == [("2026-03-02 10:00:00.000", "2026-03-02 10:30:20.000", 1820.0)]


def test_a_window_across_hours_and_midnight_is_one_window(store, cfg):
    insert_samples(store, idle("2026-03-01T23:40:00", "2026-03-02T00:25:00", 60)
                   + busy("2026-03-02T00:25:00", "2026-03-02T00:30:00", 60), **GPU)
    run(store, cfg)
    assert windows(store) == [("2026-03-01 23:40:00.000", "2026-03-02 00:25:00.000", 2700.0, round(2700 * USD_PER_S, 6))]


def test_the_last_sample_of_a_day_holds_until_the_first_of_the_next(store, cfg):
    # every 10 s until the 23:59:30 sample, then the next at 00:00:20: that sample holds 50 s, across
    # midnight, as in gpu_minute. (Each day's idle segments once read no sample after their day, so
    # it held for the 10 s before it, and the window covered 20 s less than its length.)
    insert_samples(store, idle("2026-03-01T23:40:00", "2026-03-01T23:59:40", 10)
                   + idle("2026-03-02T00:00:20", "2026-03-02T00:25:00", 10)
                   + busy("2026-03-02T00:25:00", "2026-03-02T00:30:00", 10), **GPU)
    run(store, cfg)
    assert windows(store) == [("2026-03-01 23:40:00.000", "2026-03-02 00:25:00.000", 2700.0, round(2700 * USD_PER_S, 6))]
    assert store.rows("SELECT covered_s FROM idle_windows") == [(2700.0,)]
    assert store.scalar("SELECT sum(covered_s) FROM gpu_minute WHERE minute < '2026-03-02 00:25:00'") == 2700.0


def test_an_owner_change_ends_a_window(store, cfg):
    other = {**GPU, "user": "bo", "job_id": "job-8"}
    insert_samples(store, idle("2026-03-02T10:00:00", "2026-03-02T10:20:00", 60), **GPU)
    insert_samples(store, idle("2026-03-02T10:20:00", "2026-03-02T10:40:00", 60), **other)
    run(store, cfg)
    assert store.rows("SELECT toString(start), user, job_id FROM idle_windows ORDER BY start") == [
        ("2026-03-02 10:00:00.000", "ana", "job-7"), ("2026-03-02 10:20:00.000", "bo", "job-8")]


def test_a_window_grows_as_samples_arrive(store, cfg):
    """Ten idle minutes are no window yet; ten more, derived later, make one, exact at both ends."""
    insert_samples(store, idle("2026-03-02T10:00:00", "2026-03-02T10:10:00", 15), **GPU)
    run(store, cfg, until="2026-03-02T10:10:00")
    assert windows(store) == []
    insert_samples(store, idle("2026-03-02T10:10:00", "2026-03-02T10:20:00", 15), **GPU)
    run(store, cfg, until="2026-03-02T10:20:00")
    assert [w[:3] for w in windows(store)] == [("2026-03-02 10:00:00.000", "2026-03-02 10:20:00.000", 1200.0)]
    insert_samples(store, idle("2026-03-02T10:20:00", "2026-03-02T10:30:00", 15), **GPU)
    run(store, cfg, until="2026-03-02T10:30:00")
    assert [w[:3] for w in windows(store)] == [("2026-03-02 10:00:00.000", "2026-03-02 10:30:00.000", 1800.0)]
