"""The daily rollups partitioned by month (sql/migrations/017_monthly_rollups.sql,
ingest/rollup/replace.py MONTHLY): the migration keeps every row, and deriving some days of a
month replaces exactly those days."""
from __future__ import annotations

import shutil
from datetime import date, datetime

import pytest

from base.sqlfiles import MIGRATIONS_DIR, split_statements
from ingest.migrations import migrate
from ingest.rollup.replace import MONTHLY, partition_id, replace_day, replace_days

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
