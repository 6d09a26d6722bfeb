"""gpu_util_day: one row per GPU-day (GPU entity, UTC day, team, environment) with its held and
utilized GPU-hours, derived with the daily rollups (sql/rollup/util_day.sql) and filled for days
derived before it by its migration (sql/migrations/020_gpu_util_day.sql) from gpu_cost_day."""
from __future__ import annotations

import re

from base.sqlfiles import MIGRATIONS_DIR, split_statements

KEY = "day, team, environment, host, gpu_uuid, mig_instance"


def rows(store, table: str) -> list[tuple]:
    return sorted(store.rows(f"SELECT {KEY}, round(gpu_hours, 9), round(utilized_gpu_hours, 9) FROM {table}"))


def test_one_row_per_gpu_day_with_the_held_hours_of_the_hourly_costs(demo):
    derived = rows(demo.store, "gpu_util_day")
    by_hour = rows(demo.store, f"(SELECT toDate(hour) AS day, team, environment, host, gpu_uuid, mig_instance, "
                               "sum(gpu_hours) AS gpu_hours, sum(utilized_gpu_hours) AS utilized_gpu_hours "
                               f"FROM gpu_cost_hour WHERE held GROUP BY {KEY})")
    assert len(derived) > 1000 and derived == by_hour
    assert len({r[:6] for r in derived}) == len(derived)
    # a GPU-day of gpu_cost_day's rows (split by pool, instance, versions, held) is one row here
    assert demo.store.scalar(f"SELECT count() FROM (SELECT 1 FROM gpu_cost_day WHERE held GROUP BY {KEY})") == len(derived)


def test_the_migration_fills_the_days_derived_before_it_with_what_the_derivation_gives(demo):
    path = next(MIGRATIONS_DIR.glob("020_*.sql"))
    scratch = "gpu_util_day_migrated"
    try:
        for statement in split_statements(path.read_text()):
            demo.store.command(re.sub(r"\bgpu_util_day\b", scratch, statement))
        assert rows(demo.store, scratch) == rows(demo.store, "gpu_util_day")
    finally:
        demo.store.command(f"DROP TABLE IF EXISTS {scratch}")
