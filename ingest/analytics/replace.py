"""Recompute one day of a derived table and swap it in atomically (REPLACE PARTITION).

Every derived table is partitioned by day, so re-running a day is idempotent: the day's old
rows are replaced by exactly the new ones, never added to.
"""
from __future__ import annotations

import uuid
from datetime import date, datetime, time

from ingest.sqlfiles import query


def partition_id(day: date) -> str:
    return day.strftime("%Y%m%d")


# Derived queries read their inputs in the tables' order where they can: a window over a GPU's
# samples then needs no sort, and an aggregation by a prefix of the sorting key streams.
IN_ORDER = {"optimize_read_in_window_order": 1, "optimize_aggregation_in_order": 1}


def replace_day(store, table: str, day: date, sql_name: str, parameters: dict, *, sql_text: str | None = None,
                keep: tuple[str, datetime] | None = None) -> int:
    """Run ``sql/analytics/<sql_name>.sql`` (a SELECT of the table's columns) for ``day`` into a
    staging copy of ``table`` and replace the day's partition with it; return the rows written.

    ``keep=(time_column, since)``: rows of the day before ``since`` are copied from the table as
    they are and only the rest is computed (the query gets ``since`` as its ``from`` parameter).
    """
    stage = f"_stage_{table}_{uuid.uuid4().hex[:10]}"
    store.command(f"CREATE TABLE `{stage}` AS `{table}`")
    try:
        columns = [r[0] for r in store.rows(
            "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = {t:String} "
            "AND default_kind NOT IN ('MATERIALIZED', 'ALIAS') ORDER BY position", {"t": table})]
        select = sql_text if sql_text is not None else query(f"analytics/{sql_name}")
        cols = ", ".join(f"`{c}`" for c in columns)
        start = datetime.combine(day, time.min)
        if keep:
            column, start = keep[0], keep[1].replace(tzinfo=None)
            store.command(f"INSERT INTO `{stage}` ({cols}) SELECT {cols} FROM `{table}` WHERE _partition_id = {{p:String}} "
                          f"AND `{column}` < {{since:DateTime}}", parameters={"p": partition_id(day), "since": start})
        store.command(f"INSERT INTO `{stage}` ({cols}) SELECT {cols} FROM ({select})",
                      parameters=parameters | {"day": day, "from": start}, settings=IN_ORDER)
        rows = int(store.scalar(f"SELECT count() FROM `{stage}`"))
        pid = partition_id(day)
        if rows:
            store.command(f"ALTER TABLE `{table}` REPLACE PARTITION ID '{pid}' FROM `{stage}`")
        else:
            store.command(f"ALTER TABLE `{table}` DROP PARTITION ID '{pid}'")
        return rows
    finally:
        store.command(f"DROP TABLE IF EXISTS `{stage}`")
