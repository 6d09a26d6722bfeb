"""Recompute one day of a derived table and swap it in atomically (REPLACE PARTITION).

Every derived table is partitioned by day, so re-running a day is idempotent: the day's old
rows are replaced by exactly the new ones, never added to.
"""
from __future__ import annotations

from datetime import date, datetime, time

from base.sqlfiles import sql


def partition_id(day: date) -> str:
    return day.strftime("%Y%m%d")


# Derived queries read their inputs in the tables' order where they can: a window over a GPU's
# samples then needs no sort, and an aggregation by a prefix of the sorting key streams. Their
# aggregation state goes to disk beyond 1 GiB (the same result): a whole day of 2,000 GPUs at 15 s
# (11.8 M samples) peaked at 8.6 GB of memory without it, 1.7 GB with it, for 14 % more time.
DERIVE_SETTINGS = {"optimize_read_in_window_order": 1, "optimize_aggregation_in_order": 1,
                   "max_bytes_before_external_group_by": 1 << 30}


def replace_day(store, table: str, day: date, sql_name: str, parameters: dict, *, fills: dict | None = None,
                keep: tuple[str, datetime] | None = None) -> int:
    """Run ``sql/rollup/<sql_name>.sql`` (a SELECT of the table's columns; ``fills`` fill its
    placeholders) for ``day`` into a staging copy of ``table`` and replace the day's partition
    with it; return the rows written.

    ``keep=(time_column, since)``: rows of the day before ``since`` are copied from the table as
    they are and only the rest is computed (the query gets ``since`` as its ``from`` parameter).
    """
    pid = partition_id(day)
    start = datetime.combine(day, time.min)
    with store.staging(table) as stage:
        if keep:
            column, start = keep[0], keep[1].replace(tzinfo=None)
            stage.fill(f"SELECT * FROM `{table}` WHERE _partition_id = {{p:String}} AND `{column}` < {{since:DateTime}}",
                       parameters={"p": pid, "since": start}, columns=store.columns(table))
        stage.fill(sql(f"rollup/{sql_name}", **(fills or {})), parameters=parameters | {"day": day, "from": start},
                   settings=DERIVE_SETTINGS)
        stage.replace_in(partition_ids=[pid])
        return stage.count()
