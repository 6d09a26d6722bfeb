"""The daily rollups partitioned by month (sql/migrations/017_monthly_rollups.sql,
ingest/rollup/replace.py MONTHLY): the migration keeps every row, and deriving some days of a
month replaces exactly those days; a run of days derived by one query gives what a query per
day gives, for them and for the hourly tables derived a run of days at a time."""
from __future__ import annotations

import os
import shutil
import time
from datetime import date, datetime, timedelta

import pytest

from base.sqlfiles import MIGRATIONS_DIR, split_statements, text
from ingest.billing.load import ingest_billing
from ingest.migrations import migrate
from ingest.rollup.attribution import rules_expression
from ingest.rollup.parallel import in_parallel, run_jobs
from ingest.rollup.replace import MONTHLY, RUN_DAYS, partition_id, replace_day, replace_days, runs
from ingest.rollup.run import (
    bill_lines,
    day_inputs,
    hour_units,
    idle_parameters,
    rollup,
    sample_parts,
    sample_units,
)
from tests.ingest.rollup.conftest import at, focus_file, insert_samples, series

COST_DAY = ["day", "host", "gpu_uuid", "environment", "team", "gpu_hours", "cost_usd"]
DAYS = [date(2026, 2, 27), date(2026, 2, 28), date(2026, 3, 1)]


def partitions(store, table: str) -> list[str]:
    return [p for (p,) in store.rows("SELECT DISTINCT partition_id FROM system.parts WHERE database = currentDatabase() "
                                     "AND table = {t:String} AND active ORDER BY 1", {"t": table})]


def test_the_migration_keeps_every_row_and_partitions_by_month(store_dsn, tmp_path):
    from ingest.store import connect

    before = tmp_path / "sql"
    shutil.copytree(MIGRATIONS_DIR, before)
    (before / "017_monthly_rollups.sql").unlink()
    store = connect(store_dsn)
    migrate(store, sql_dir=before)
    rows = [[d, f"node-{i}", f"GPU-{i}", "onprem", "team-a", 24.0, 1.5 * i] for d in DAYS for i in range(3)]
    store.insert("gpu_cost_day", rows, COST_DAY)
    assert partitions(store, "gpu_cost_day") == ["20260227", "20260228", "20260301"]
    totals = "SELECT day, count(), sum(cost_usd) FROM gpu_cost_day GROUP BY day ORDER BY day"
    expected = store.rows(totals)

    assert migrate(store) == ["017_monthly_rollups.sql"]
    assert store.rows(totals) == expected
    assert partitions(store, "gpu_cost_day") == ["202602", "202603"]
    for table, column in MONTHLY.items():
        key = store.scalar("SELECT partition_key FROM system.tables WHERE database = currentDatabase() AND name = {t:String}",
                           {"t": table})
        assert key == f"toYYYYMM({column})", table
    # stopped half-way and run again from the start: still every row, once
    for statement in split_statements((MIGRATIONS_DIR / "017_monthly_rollups.sql").read_text()):
        store.command(statement)
    assert store.rows(totals) == expected
    assert not store.rows("SHOW TABLES LIKE '%_by_month'")


def test_deriving_days_of_a_month_replaces_those_days_only(store):
    hours = "hour, host, gpu_uuid, environment, team, held, gpu_hours, utilized_gpu_hours, cost_usd"

    def cost_hours(day: date, gpus: int, usd: float):
        store.command(f"INSERT INTO gpu_cost_hour ({hours}) SELECT toDateTime({{d:Date}}, 'UTC') + toIntervalHour(number % 24), "
                      "concat('node-', toString(intDiv(number, 24))), 'GPU-0', 'aws', 'team-a', 1, 1, 0.5, {usd:Float64} "
                      "FROM numbers({n:UInt32})", {"d": day, "usd": usd, "n": 24 * gpus})

    for day in DAYS:
        cost_hours(day, 2, 3.0)
    assert replace_days(store, "team_demand_hour", DAYS, "team_demand", {}) == 3 * 24
    assert partitions(store, "team_demand_hour") == [partition_id("team_demand_hour", d) for d in DAYS[1:]] == \
        ["202602", "202603"]
    per_day = "SELECT toDate(hour) AS d, count(), sum(gpu_hours), sum(cost_usd) FROM team_demand_hour GROUP BY d ORDER BY d"
    assert store.rows(per_day) == [(d, 24, 48.0, 144.0) for d in DAYS]

    # a third GPU on the 27th: re-deriving that day changes it alone, the 28th in its month is kept as it was
    cost_hours(DAYS[0], 1, 3.0)
    store.command("ALTER TABLE gpu_cost_hour DELETE WHERE toDate(hour) = {d:Date}", {"d": DAYS[1]},
                  settings={"mutations_sync": 2})                 # the 28th's inputs gone: proves it is not recomputed
    assert replace_day(store, "team_demand_hour", DAYS[0], "team_demand", {}) == 24
    assert store.rows(per_day) == [(DAYS[0], 24, 72.0, 216.0), (DAYS[1], 24, 48.0, 144.0), (DAYS[2], 24, 48.0, 144.0)]
    assert replace_day(store, "team_demand_hour", DAYS[0], "team_demand", {}) == 24      # again: nothing doubles
    assert store.scalar("SELECT count() FROM team_demand_hour") == 72

    with pytest.raises(ValueError, match="partitioned by month"):
        replace_day(store, "team_demand_hour", DAYS[0], "team_demand", {}, keep=("hour", datetime(2026, 2, 27, 6)))


def test_runs_of_days_split_at_gaps_and_at_the_run_length():
    days = [date(2026, 3, d) for d in (1, 2, 3, 5)] + [date(2026, 3, 10) + timedelta(days=i) for i in range(RUN_DAYS + 1)]
    assert runs(days) == [(date(2026, 3, 1), date(2026, 3, 3)), (date(2026, 3, 5), date(2026, 3, 5)),
                          (date(2026, 3, 10), date(2026, 3, 9) + timedelta(days=RUN_DAYS)),
                          (date(2026, 3, 10) + timedelta(days=RUN_DAYS),) * 2]


# what replace_days derives with one query for a run of days (ingest/rollup/run.py: sample_units,
# hour_units, daily_rollups, derive_waste)
RANGED = [("gpu_minute", "minute"), ("gpu_idle_segments", "idle_segments"), ("gpu_hour", "hour"), ("billing_line_hour", "line_hours"), ("gpu_cost_hour", "cost"), ("team_spend_day", "spend"), ("gpu_cost_day", "cost_day"), ("gpu_util_day", "util_day"), ("team_demand_hour", "team_demand"),
          ("gpu_waste_hour", "waste"), ("gpu_waste_day", "waste_day"), ("showback_focus_day", "showback")]


def test_one_query_over_a_run_of_days_gives_what_a_query_per_day_gives(store, cfg, tmp_path):
    # three days across a month's end: a cloud GPU whose bill line spans midnight, another with no bill
    # (list price), an on-prem GPU idle then busy, and a storage line attributed by tag
    aws = {"environment": "aws", "region": "us-east-1", "instance_id": "i-0abc", "instance_type": "p4d.24xlarge",
           "pool": "aws-train", "host": "ip-10-0-0-1"}
    insert_samples(store, series("2026-02-28T20:00", "2026-03-01T04:00", util_gpu=60.0, process_count=1, team="nlp"),
                   **aws, gpu_uuid="GPU-0", gpu_index=0)
    insert_samples(store, series("2026-03-01T22:00", "2026-03-02T02:00", util_gpu=30.0, process_count=1, team="vision"),
                   **(aws | {"instance_id": "i-0def", "host": "ip-10-0-0-2"}), gpu_uuid="GPU-1", gpu_index=0)
    insert_samples(store, series("2026-02-28T00:00", "2026-03-02T12:00", util_gpu=0.0, util_mem=0.0, power_w=100.0),
                   host="dgx-1", gpu_uuid="GPU-9", environment="onprem", pool="dgx")
    insert_samples(store, series("2026-03-02T12:00", "2026-03-03T00:00", util_gpu=80.0, power_w=400.0, process_count=1,
                                 team="nlp"), host="dgx-1", gpu_uuid="GPU-9", environment="onprem", pool="dgx")
    ingest_billing(store, [focus_file(tmp_path / "bill.csv", [
        {"resource": "arn:aws:ec2:us-east-1:222222222222:instance/i-0abc", "start": "2026-02-28T20:00:00",
         "end": "2026-03-01T04:00:00", "cost": "80.00", "effective": "64.00"},
        {"resource": "vol-0123", "start": "2026-03-01T00:00:00", "end": "2026-03-02T00:00:00", "cost": "5.00",
         "service": "Amazon Elastic Block Store", "category": "Storage", "tags": '{"team": "vision"}'}])],
        progress=lambda m: None)
    days = [date(2026, 2, 28), date(2026, 3, 1), date(2026, 3, 2)]
    # the samples of the three days are read by one query each of minute.sql and idle_segments.sql
    assert sample_units(days, dict.fromkeys(days), day_inputs(store, days[0], days[-1])) == [(days, None)]
    rollup(store, cfg, since=days[0], until=days[-1], now=at("2026-03-03T06:00:00"), progress=lambda m: None)

    def snapshot(table: str) -> list[tuple]:
        columns = ", ".join(f"round(`{c}`, 6)" if t.startswith(("Float", "Nullable(Float")) else f"toString(`{c}`)"
                            for c, t in store.rows("SELECT name, type FROM system.columns WHERE database = currentDatabase() "
                                                   "AND table = {t:String} ORDER BY position", {"t": table}))
        return sorted(store.rows(f"SELECT {columns} FROM `{table}`"))

    ranged = {table: snapshot(table) for table, _ in RANGED}
    assert all(ranged.values()) and {r[1] for r in ranged["team_spend_day"]} >= {"nlp", "vision"}
    rule_params: dict = {}
    rules = rules_expression(cfg.attribution, rule_params)
    fills = {"spend": {"bill_lines": bill_lines(rules)}, "showback": {"bill_lines": bill_lines(rules)},
             "cost": {"team_rules": rules, "entity_share": text("rollup/entity_share")},
             "line_hours": {"entity_share": text("rollup/entity_share")}}
    params = {"minute": {"max_gap_s": cfg.analytics.max_gap_s, "default_interval_s": cfg.analytics.default_interval_s},
              "idle_segments": idle_parameters(cfg)}
    for table, sql_name in RANGED:
        for day in days:
            replace_days(store, table, [day], sql_name, params.get(sql_name, rule_params), fills=fills.get(sql_name),
                         parts=sample_parts(store, day, 3600, 3600) if sql_name in params else None)
        assert snapshot(table) == ranged[table], table


def test_hourly_tables_take_a_day_recomputed_from_an_hour_alone_and_whole_days_a_run_at_a_time():
    days = [date(2026, 3, 1) + timedelta(days=i) for i in range(RUN_DAYS + 3)]
    starts = dict.fromkeys(days) | {days[4]: datetime(2026, 3, 5, 17)}
    units = hour_units(days, starts)
    assert units[0] == ([days[4]], datetime(2026, 3, 5, 17))
    whole = [unit for unit, start in units[1:]]
    assert all(start is None for _, start in units[1:]) and all(len(unit) <= RUN_DAYS for unit in whole)
    assert sorted(d for unit in whole for d in unit) == [d for d in days if d != days[4]]
    assert len(whole) < len(days) - 1


def test_in_parallel_runs_every_item_once_each_on_a_free_handle(store):
    handles, taken = [store, store.clone()], []
    names = {id(handle): name for handle, name in zip(handles, "ab")}
    slow, quick = 0.3, 0.02
    default = store.scalar("SELECT getSetting('max_threads')")

    def work(handle, item):
        time.sleep(item)
        taken.append((names[id(handle)], item, handle.scalar("SELECT getSetting('max_threads')")))
    in_parallel(handles, [slow] + [quick] * 6, work)
    assert sorted(item for _, item, _ in taken) == sorted([slow] + [quick] * 6)
    # the handle on the slow item takes nothing else meanwhile: the other one takes every quick one
    (busy,) = [handle for handle, item, _ in taken if item == slow]
    assert [handle for handle, item, _ in taken if item == quick] == [{"a": "b", "b": "a"}[busy]] * 6
    # more items than handles: each handle's queries take their share of the cores, then all again
    assert {threads for _, _, threads in taken} == {max(1, (os.cpu_count() or 1) // 2)}
    assert [h.scalar("SELECT getSetting('max_threads')") for h in handles] == [default, default]
    taken.clear()
    run_jobs(handles, [lambda h: work(h, quick)] * 3)              # unequal jobs keep every core
    assert {threads for _, _, threads in taken} == {default}

    with pytest.raises(ZeroDivisionError):
        in_parallel(handles, [1, 0, 2], lambda handle, item: 1 / item)
    assert [h.scalar("SELECT getSetting('max_threads')") for h in handles] == [default, default]
    handles[1].close()


class Recording:
    """A second handle that records the statements it runs."""

    def __init__(self, handle):
        self.handle, self.statements = handle, []

    def command(self, sql, parameters=None, settings=None):
        result = self.handle.command(sql, parameters, settings)
        self.statements.append(" ".join(sql.split()))
        return result

    def __getattr__(self, name):
        return getattr(self.handle, name)


def test_a_months_other_days_are_copied_on_a_second_handle_beside_the_computing(store, monkeypatch):
    hours = "hour, host, gpu_uuid, environment, team, held, gpu_hours, utilized_gpu_hours, cost_usd"
    store.command(f"INSERT INTO gpu_cost_hour ({hours}) SELECT toDateTime({{d:Date}}, 'UTC') + toIntervalHour(number % 24) "
                  "+ toIntervalDay(intDiv(number, 24)), 'node-1', 'GPU-0', 'aws', 'team-a', 1, 1, 0.5, 3 FROM numbers(72)",
                  {"d": DAYS[0]})
    replace_days(store, "team_demand_hour", DAYS, "team_demand", {})
    helper = Recording(store.clone())
    monkeypatch.setattr(store, "helper", lambda: helper)
    per_day = "SELECT toDate(hour) AS d, count(), sum(cost_usd) FROM team_demand_hour GROUP BY d ORDER BY d"
    before = store.rows(per_day)

    assert replace_days(store, "team_demand_hour", [DAYS[0]], "team_demand", {}) == 24     # the rows computed
    (copy,) = helper.statements
    assert copy.startswith("INSERT INTO `_stage_team_demand_hour_") and "NOT has(" in copy
    assert store.rows(per_day) == before

    # the computing fails: the copy still finishes before the staging copy is dropped, the error
    # raised is the computing's, and the table is as it was
    from ingest.store import Stage
    fill = Stage.fill

    def failing(stage, select, parameters=None, settings=None, columns=None):
        if stage.store is not helper:                      # the query computing the day (not the copy)
            time.sleep(0.2)
            raise RuntimeError("the computing failed")
        fill(stage, select, parameters, settings, columns)
    monkeypatch.setattr(Stage, "fill", failing)
    with pytest.raises(RuntimeError, match="the computing failed"):
        replace_days(store, "team_demand_hour", [DAYS[1]], "team_demand", {})
    assert len(helper.statements) == 2
    assert store.rows(per_day) == before
    assert not store.rows("SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE '\\\\_stage\\\\_%'")
    helper.handle.close()


def test_a_months_runs_of_days_are_computed_side_by_side_on_the_free_handles_given(store):
    # 20 days of March: three runs of days (8, 8, 4) into one staging copy of the month
    days = [date(2026, 3, 1) + timedelta(days=i) for i in range(20)]
    hours = "hour, host, gpu_uuid, environment, team, held, gpu_hours, utilized_gpu_hours, cost_usd"
    store.command(f"INSERT INTO gpu_cost_hour ({hours}) SELECT toDateTime({{d:Date}}, 'UTC') + toIntervalHour(number), "
                  "'node-1', 'GPU-0', 'aws', if(number % 3 = 0, 'team-a', 'team-b'), 1, 1, 0.5, number FROM numbers(480)",
                  {"d": days[0]})
    per_day = "SELECT toDate(hour) AS d, team, count(), sum(cost_usd) FROM team_demand_hour GROUP BY d, team ORDER BY d, team"
    assert replace_days(store, "team_demand_hour", days, "team_demand", {}) == 480
    alone = store.rows(per_day)
    free = Recording(store.clone())

    assert replace_days(store, "team_demand_hour", days, "team_demand", {}, beside=[free]) == 480
    assert store.rows(per_day) == alone and len(alone) == 40
    # the free handle computed at least one of the three runs, into the month's staging copy
    fills = [s for s in free.statements if s.startswith("INSERT INTO `_stage_team_demand_hour_")]
    assert 1 <= len(fills) <= 2 and all("FROM gpu_cost_hour" in s for s in fills)
    free.handle.close()


def test_a_plan_derives_on_one_handle_so_its_statements_stay_in_order(store):
    from ingest.plan import PlanStore
    from ingest.rollup.run import worker_handles

    plan = PlanStore(store)
    assert worker_handles(plan, 2) == [plan] and plan.helper() is plan
    handles = worker_handles(store, 2)
    assert len(handles) == 2 and handles[1] is not store
    assert worker_handles(store, 2) == handles                # kept with the store: an hourly run opens none
