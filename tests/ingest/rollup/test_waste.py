"""Waste in money (DESIGN.md "Waste"), hand-computed. On-prem GPUs at $1.50 per covered hour
(capital $1 + operations $0.50, no power), one sample a minute."""
from __future__ import annotations

from datetime import date

import pytest

from ingest.rollup.run import rollup
from tests.ingest.rollup.conftest import at, insert_samples, series

RATE = 1.5 / 3600            # USD per covered second
NLP = {"host": "dgx-1", "gpu_uuid": "GPU-1", "environment": "onprem", "pool": "dgx", "process_count": 1,
       "team": "nlp", "user": "ana", "job_id": "job-7", "k8s_namespace": "nlp-train"}
SPARE = {"host": "dgx-1", "gpu_uuid": "GPU-2", "environment": "onprem", "pool": "dgx", "process_count": 0}


def load(store, cfg):
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:20", util_gpu=60.0, util_mem=20.0)
                   + series("2026-03-02T10:20", "2026-03-02T10:40", util_gpu=0.0, util_mem=0.0)
                   + series("2026-03-02T10:40", "2026-03-02T10:50", util_gpu=30.0, util_mem=10.0), **NLP)
    # nothing held GPU-2 from 10:50 to 11:20: an unallocated idle window across two hours
    insert_samples(store, series("2026-03-02T10:50", "2026-03-02T11:20", util_gpu=0.0, util_mem=0.0), **SPARE)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:00:00"))


def test_waste_per_gpu_hour(store, cfg):
    load(store, cfg)
    rows = store.rows("SELECT gpu_uuid, toHour(hour), covered_s, cost_usd, idle_allocated_usd, idle_unallocated_usd, "
                      "unused_usd, no_data_s, no_data_usd FROM gpu_waste_hour ORDER BY gpu_uuid, hour")
    assert rows == [
        # 50 covered minutes: 20 idle (allocated), 20 at 60 % and 10 at 30 % (unused 40 % and 70 %), 10 without data
        ("GPU-1", 10, 3000.0, pytest.approx(3000 * RATE), pytest.approx(1200 * RATE), 0.0,
         pytest.approx((1200 * 0.4 + 600 * 0.7) * RATE), 600.0, pytest.approx(600 * RATE)),
        ("GPU-2", 10, 600.0, pytest.approx(600 * RATE), 0.0, pytest.approx(600 * RATE), 0.0, 3000.0,
         pytest.approx(3000 * RATE)),
        ("GPU-2", 11, 1200.0, pytest.approx(1200 * RATE), 0.0, pytest.approx(1200 * RATE), 0.0, 2400.0,
         pytest.approx(2400 * RATE)),
    ]


def test_team_waste_adds_up_and_never_counts_time_without_data(store, cfg):
    load(store, cfg)
    rows = {r[0]: r[1:] for r in store.rows(
        "SELECT team, spend_usd, idle_usd, unused_usd, waste_usd, efficiency_pct, no_data_usd, idle_allocated_usd, "
        "idle_unallocated_usd FROM v_team_waste WHERE month = '2026-03-01' AND environment = 'onprem'")}
    spend, idle, unused = 3000 * RATE, 1200 * RATE, 900 * RATE
    assert rows["nlp"] == pytest.approx((spend, idle, unused, idle + unused, 100 * (1 - (idle + unused) / spend),
                                         600 * RATE, idle, 0.0))
    assert rows["unallocated"] == pytest.approx((1800 * RATE, 1800 * RATE, 0.0, 1800 * RATE, 0.0, 5400 * RATE, 0.0,
                                                 1800 * RATE))
    # every part is a share of what the GPU-hours cost
    total = store.rows("SELECT sum(cost_usd), sum(idle_allocated_usd + idle_unallocated_usd + unused_usd) FROM gpu_waste_hour")[0]
    assert total[1] < total[0] and total[0] == pytest.approx(store.scalar("SELECT sum(cost_usd) FROM gpu_cost_hour"))


def test_a_gpu_hour_held_by_two_owners_charges_each_its_own_waste(store, cfg):
    """Seen by an independent check: the waste of a GPU-hour went whole to one of its owners
    (``any(team)``), so one team was charged another's idle time and the other none. ana's job
    idles on GPU-3 until 10:30:15 (an allocated window of 1,815 s); bob's job then runs at 50 %.
    gpu_hour gives minute 10:30 to bob (he held 45 s of it), the window is exact to the sample:
    bob's unused time is the hour's 1,785 s outside the window at 50 %, not 1,800 s."""
    cv = {**NLP, "gpu_uuid": "GPU-3", "team": "cv", "user": "bob", "job_id": "job-9", "k8s_namespace": "cv-train"}
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:30:15", 15, util_gpu=0.0, util_mem=0.0),
                   **{**NLP, "gpu_uuid": "GPU-3"})
    insert_samples(store, series("2026-03-02T10:30:15", "2026-03-02T11:00", 15, util_gpu=50.0, util_mem=20.0), **cv)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:00:00"))
    rows = store.rows("SELECT team, user, job_id, k8s_namespace, held, covered_s, cost_usd, idle_allocated_usd, "
                      "idle_unallocated_usd, unused_usd, no_data_usd FROM gpu_waste_hour ORDER BY team")
    assert rows == [
        ("cv", "bob", "job-9", "cv-train", 1, 1800.0, pytest.approx(1800 * RATE), 0.0, 0.0,
         pytest.approx(1785 * 0.5 * RATE), 0.0),
        ("nlp", "ana", "job-7", "nlp-train", 1, 1800.0, pytest.approx(1800 * RATE), pytest.approx(1815 * RATE), 0.0,
         0.0, 0.0),
    ]
    waste = {r[0]: r[1:] for r in store.rows("SELECT team, spend_usd, idle_usd, unused_usd FROM v_team_waste")}
    assert waste == {"cv": pytest.approx((1800 * RATE, 0.0, 892.5 * RATE)),
                     "nlp": pytest.approx((1800 * RATE, 1815 * RATE, 0.0))}
    # each team's waste is what its idle windows cost plus its unused time, and the spend is gpu_cost_hour's
    assert store.scalar("SELECT sum(cost_usd) FROM v_idle_waste WHERE team = 'nlp'") == pytest.approx(1815 * RATE)
    assert dict(store.rows("SELECT team, sum(cost_usd) FROM gpu_cost_hour GROUP BY team")) == \
        pytest.approx({"cv": 1800 * RATE, "nlp": 1800 * RATE})


def test_a_gpu_hour_time_without_data_is_shared_by_its_owners_covered_time(store, cfg):
    """Two owners in one hour, 20 minutes without data between them: each is shown its share of
    the hour's no-data time by its covered time, and the shares add up to the GPU-hour's."""
    cv = {**NLP, "team": "cv", "user": "bob", "job_id": "job-9", "k8s_namespace": "cv-train"}
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:10", util_gpu=80.0, util_mem=20.0), **NLP)
    insert_samples(store, series("2026-03-02T10:30", "2026-03-02T11:00", util_gpu=80.0, util_mem=20.0), **cv)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:00:00"))
    rows = store.rows("SELECT team, covered_s, no_data_s, no_data_usd, unused_usd FROM gpu_waste_hour ORDER BY team")
    assert rows == [("cv", 1800.0, pytest.approx(1200 * 3 / 4), pytest.approx(900 * RATE), pytest.approx(360 * RATE)),
                    ("nlp", 600.0, pytest.approx(1200 / 4), pytest.approx(300 * RATE), pytest.approx(120 * RATE))]


def test_a_job_holding_a_gpu_with_no_process_running_is_allocated_idle(store, cfg):
    """DESIGN.md: allocated idle is "a process or job holds the GPU". A job (or pod) whose GPU runs
    no process at the moment (a notebook between cells, a job loading data) is the owner wasting
    it; it was counted as unallocated idle, its user and job blanked, because the sample said
    process_count = 0."""
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:20", util_gpu=0.0, util_mem=0.0),
                   **{**NLP, "gpu_uuid": "GPU-4", "team": "cv", "user": "carol", "job_id": "j3", "process_count": 0})
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:00:00"))
    assert store.rows("SELECT kind, team, user, job_id, cost_usd FROM v_idle_waste") == \
        [("allocated", "cv", "carol", "j3", pytest.approx(1200 * RATE))]
    assert store.rows("SELECT held, idle_allocated_usd, idle_unallocated_usd FROM gpu_waste_hour") == \
        [(1, pytest.approx(1200 * RATE), 0.0)]


def test_idle_windows_name_the_team_the_attribution_rules_give_their_time(store, cfg):
    """An idle window, its alert and the waste per team name one team: the rules' (DESIGN.md
    "Attribution"), not the team label on the samples. Seen on a real H100 whose job ran as root
    with a rule root -> team: its window said 'unallocated' while the waste went to the team."""
    from ingest.rollup.config import AttributionRule

    cfg.attribution = [AttributionRule(name="nlp namespaces", team="language", when={"k8s_namespace": "nlp-*"}),
                       AttributionRule(name="dgx pool", team="platform", when={"pool": "dgx"})]
    load(store, cfg)
    windows = store.rows("SELECT gpu_uuid, kind, team, user, cost_usd FROM v_idle_waste ORDER BY gpu_uuid")
    assert windows == [("GPU-1", "allocated", "language", "ana", pytest.approx(1200 * RATE)),
                       ("GPU-2", "unallocated", "platform", "", pytest.approx(1800 * RATE))]
    waste = store.rows("SELECT team, idle_allocated_usd, idle_unallocated_usd FROM v_team_waste ORDER BY team")
    assert waste == [("language", pytest.approx(1200 * RATE), 0.0), ("platform", 0.0, pytest.approx(1800 * RATE))]


def test_a_window_that_grows_moves_its_time_from_unused_to_idle(store, cfg):
    """Ten idle minutes are unused capacity (no window yet); once the run reaches the minimum,
    the same minutes are idle, and nothing is counted twice."""
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:10", util_gpu=0.0, util_mem=0.0), **NLP)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-02T10:10:00"))
    assert store.rows("SELECT idle_allocated_usd, unused_usd FROM gpu_waste_hour") == [(0.0, pytest.approx(600 * RATE))]
    insert_samples(store, series("2026-03-02T10:10", "2026-03-02T10:20", util_gpu=0.0, util_mem=0.0), **NLP)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-02T10:20:00"))
    assert store.rows("SELECT idle_allocated_usd, unused_usd FROM gpu_waste_hour") == [(pytest.approx(1200 * RATE), 0.0)]


WASTE_TABLES = {"gpu_waste_hour": "hour", "gpu_waste_day": "day", "showback_focus_day": "day"}


def waste_rows(store) -> dict[str, list[tuple]]:
    return {table: store.rows(f"SELECT * FROM {table} ORDER BY {key}, cityHash64(*)") for table, key in WASTE_TABLES.items()}


def waste_from(monkeypatch) -> list[tuple[date, date]]:
    """The (first, last) day of each waste derivation the rollups make from now on."""
    import ingest.rollup.run as run
    calls, derive = [], run.derive_waste

    def spy(store, cfg, since, until, *rest, **options):
        calls.append((since, until))
        return derive(store, cfg, since, until, *rest, **options)
    monkeypatch.setattr(run, "derive_waste", spy)
    return calls


def test_an_open_window_that_grows_recomputes_no_earlier_day(store, cfg, monkeypatch):
    """An idle window from 22:00 on 2 March still open at 00:30 on the 3rd grows by an hour: its
    hours on the 2nd stay idle as they were, so the waste is derived again from the 3rd only, and
    every waste row is what a complete derivation gives."""
    insert_samples(store, series("2026-03-02T22:00", "2026-03-03T00:30", util_gpu=0.0, util_mem=0.0), **NLP)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:30:00"))
    calls = waste_from(monkeypatch)
    insert_samples(store, series("2026-03-03T00:30", "2026-03-03T01:30", util_gpu=0.0, util_mem=0.0), **NLP)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 4), now=at("2026-03-03T01:30:00"))
    # from the 3rd, and not to the 4th: no samples or bills there
    assert calls == [(date(2026, 3, 3), date(2026, 3, 3))]
    assert store.rows("SELECT start, end FROM idle_windows") == [(at("2026-03-02T22:00:00").replace(tzinfo=None),
                                                                   at("2026-03-03T01:30:00").replace(tzinfo=None))]
    incremental = waste_rows(store)
    assert store.scalar("SELECT sum(idle_allocated_usd) FROM gpu_waste_hour") == pytest.approx(3.5 * 3600 * RATE)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 4), now=at("2026-03-03T01:30:00"), force=True)
    assert waste_rows(store) == incremental


def test_a_window_that_reaches_its_minimum_after_midnight_recomputes_the_day_it_started(store, cfg, monkeypatch):
    """Ten idle minutes before midnight are no window (the minimum is 15); ten more after it make
    one, from 23:50: the 2nd's waste is derived again and its last ten minutes become idle."""
    insert_samples(store, series("2026-03-02T23:50", "2026-03-03T00:00", util_gpu=0.0, util_mem=0.0), **NLP)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:00:00"))
    assert store.rows("SELECT idle_allocated_usd, unused_usd FROM gpu_waste_hour") == [(0.0, pytest.approx(600 * RATE))]
    calls = waste_from(monkeypatch)
    insert_samples(store, series("2026-03-03T00:00", "2026-03-03T00:10", util_gpu=0.0, util_mem=0.0), **NLP)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:10:00"))
    assert calls == [(date(2026, 3, 2), date(2026, 3, 3))]
    assert store.rows("SELECT toDate(hour), idle_allocated_usd, unused_usd FROM gpu_waste_hour ORDER BY hour") == [
        (date(2026, 3, 2), pytest.approx(600 * RATE), 0.0), (date(2026, 3, 3), pytest.approx(600 * RATE), 0.0)]
    incremental = waste_rows(store)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:10:00"), force=True)
    assert waste_rows(store) == incremental


def test_an_owner_is_never_charged_more_waste_than_its_own_time_cost(store, cfg):
    """Seen by an independent check (an unallocated row with waste $49.94 against spend $49.56, an
    efficiency of -0.77 %): on-prem energy is measured per owner, so in an hour a busy job and an
    idle, unallocated GPU shared, the unallocated second costs less than the job's; priced at the
    hour's average rate, its waste came out above its cost. Job 10:00-10:40 at 90 % and 700 W; then
    nothing holds the GPU, idle at 100 W (a 20-minute unallocated window) on GPU-4; on GPU-5 the job
    runs to 10:52 and the GPU sits unheld at 0 % for 8 minutes (too short for a window: unused)."""
    kwh_usd = 1.5 * 0.10 / 3.6e6                       # USD per joule: PUE 1.5 × $0.10 per kWh
    for gpu, end in (("GPU-4", "2026-03-02T10:40"), ("GPU-5", "2026-03-02T10:52")):
        insert_samples(store, series("2026-03-02T10:00", end, util_gpu=90.0, util_mem=40.0, power_w=700.0),
                       **{**NLP, "gpu_uuid": gpu})
        insert_samples(store, series(end, "2026-03-02T11:00", util_gpu=0.0, util_mem=0.0, power_w=100.0),
                       **{**SPARE, "gpu_uuid": gpu})
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:00:00"))
    rows = {(r[0], r[1]): r[2:] for r in store.rows(
        "SELECT gpu_uuid, team, cost_usd, idle_unallocated_usd, unused_usd FROM gpu_waste_hour")}
    job_rate, spare_rate = RATE + 700 * kwh_usd, RATE + 100 * kwh_usd
    # the idle, unallocated 1,200 s cost what that time cost: its own rate, waste = cost
    assert rows[("GPU-4", "unallocated")] == pytest.approx((1200 * spare_rate, 1200 * spare_rate, 0.0))
    assert rows[("GPU-4", "nlp")] == pytest.approx((2400 * job_rate, 0.0, 2400 * 0.1 * job_rate))
    # the unheld 480 s at 0 %: unused, all of it, at its own rate
    assert rows[("GPU-5", "unallocated")] == pytest.approx((480 * spare_rate, 0.0, 480 * spare_rate))
    assert rows[("GPU-5", "nlp")] == pytest.approx((3120 * job_rate, 0.0, 3120 * 0.1 * job_rate))
    waste = store.rows("SELECT min(spend_usd - waste_usd) FROM v_team_waste")[0][0]
    assert waste >= -1e-9
    # the window's own cost (v_idle_waste) is the same
    assert store.scalar("SELECT sum(cost_usd) FROM v_idle_waste WHERE gpu_uuid = 'GPU-4'") == pytest.approx(1200 * spare_rate)


def test_idle_time_of_an_owner_without_a_cost_row_in_its_hour_is_priced_at_the_gpu_hours_rate(store, cfg):
    """Found in review: an owner whose idle time in an hour holds no minute's middle (it took the
    GPU at 10:59:45) has no cost row of its own there; its 15 s were priced at $0 instead of the
    GPU-hour's rate. The job runs 10:00-10:59:45 at 80 %; then nothing holds GPU-6, idle to 11:30."""
    job = {**NLP, "gpu_uuid": "GPU-6"}
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:59:45", 15, util_gpu=80.0, util_mem=30.0), **job)
    insert_samples(store, series("2026-03-02T10:59:45", "2026-03-02T11:30", 15, util_gpu=0.0, util_mem=0.0),
                   **{**SPARE, "gpu_uuid": "GPU-6"})
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:00:00"))
    assert store.rows("SELECT team, toHour(hour) FROM gpu_cost_hour WHERE gpu_uuid = 'GPU-6' ORDER BY hour") == \
        [("nlp", 10), ("unallocated", 11)]                    # the unheld 15 s of hour 10 went to the job's minute
    window = store.rows("SELECT kind, toUnixTimestamp(start), cost_usd FROM v_idle_waste WHERE gpu_uuid = 'GPU-6'")
    assert window == [("unallocated", int(at("2026-03-02T10:59:45").timestamp()), pytest.approx((15 + 1800) * RATE))]
    idle = dict(store.rows("SELECT toHour(hour), sum(idle_unallocated_usd) FROM gpu_waste_hour WHERE gpu_uuid = 'GPU-6' "
                           "GROUP BY hour"))
    assert idle == {10: pytest.approx(15 * RATE), 11: pytest.approx(1800 * RATE)}
