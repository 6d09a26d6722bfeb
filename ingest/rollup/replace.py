"""Recompute days of a derived table and swap them in atomically (REPLACE PARTITION).

Every derived table is partitioned by day or, the daily rollups read over months, by month
(``MONTHLY``), so re-running a day is idempotent: the day's old rows are replaced by exactly the
new ones, never added to.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager, nullcontext
from datetime import date, datetime, time
from itertools import groupby

from base.sqlfiles import sql
from ingest.rollup.parallel import in_parallel

# The daily rollups that pages and finance read over weeks and months, partitioned by month
# (sql/migrations/017_monthly_rollups.sql): table -> its time column. Replacing some days of a
# month copies the month's other days into the staging table as they are.
MONTHLY = {"gpu_cost_day": "day", "gpu_util_day": "day", "team_demand_hour": "hour", "team_spend_day": "day",
           "gpu_waste_day": "day", "showback_focus_day": "day"}


def partition_id(table: str, day: date) -> str:
    """The id of the partition of ``table`` that holds ``day``."""
    return day.strftime("%Y%m" if table in MONTHLY else "%Y%m%d")


# Derived queries read their inputs in the tables' order where they can: a window over a GPU's
# samples then needs no sort, and an aggregation by a prefix of the sorting key streams. Their
# aggregation state goes to disk beyond 1 GiB (the same result): a whole day of 2,000 GPUs at 15 s
# (11.8 M samples) peaked at 8.6 GB of memory without it, 1.7 GB with it, for 14 % more time.
# Priority 2: on the embedded store a derivation's query pauses while a reader's (Store.read_only,
# priority 1: dashboard pages, `gpuledger query`) runs, so pages stay quick during a backfill.
DERIVE_SETTINGS = {"optimize_read_in_window_order": 1, "optimize_aggregation_in_order": 1,
                   "max_bytes_before_external_group_by": 1 << 30, "priority": 2}


def replace_day(store, table: str, day: date, sql_name: str, parameters: dict, *, fills: dict | None = None,
                keep: tuple[str, datetime] | None = None, parts: list[tuple[dict, dict]] | None = None) -> int:
    """Run ``sql/rollup/<sql_name>.sql`` (a SELECT of the table's columns; ``fills`` fill its
    placeholders) for ``day`` into a staging copy of ``table`` and replace the day's partition
    with it; return the rows written.

    ``keep=(time_column, since)``: rows of the day before ``since`` are copied from the table as
    they are and only the rest is computed (the query gets ``since`` as its ``from`` parameter).
    ``parts``: the query runs once per (fills, parameters) given, each added to ``fills`` and
    ``parameters``, and their rows together make the day (default: one run).
    ``keep`` is not for a ``MONTHLY`` table, whose days are derived whole.
    """
    if not keep:
        return replace_days(store, table, [day], sql_name, parameters, fills=fills, parts=parts)
    if table in MONTHLY:
        raise ValueError(f"{table} is partitioned by month: its days are derived whole (replace_days)")
    pid = partition_id(table, day)
    column, start = keep[0], keep[1].replace(tzinfo=None)
    with store.staging(table) as stage:
        with copied_beside(store, stage, f"SELECT * FROM `{table}` WHERE _partition_id = {{p:String}} "
                                         f"AND `{column}` < {{since:DateTime}}", {"p": pid, "since": start}):
            for part_fills, part_parameters in parts or [({}, {})]:
                stage.fill(sql(f"rollup/{sql_name}", **(fills or {}), **part_fills),
                           parameters=parameters | part_parameters | {"day": day, "from": start}, settings=DERIVE_SETTINGS)
        stage.replace_in(partition_ids=[pid])
        return stage.count()


def replace_days(store, table: str, days: list[date], sql_name: str, parameters: dict, *,
                 fills: dict | None = None, parts: list[tuple[dict, dict]] | None = None,
                 beside: Sequence = ()) -> int:
    """replace_day of every day of ``days``, one query per run of consecutive days (at most
    ``RUN_DAYS``; the query gets the run's first day as ``from`` and its last as ``day``; with
    ``parts``, one per part as in replace_day) and one swap per partition: a ``MONTHLY`` table's
    month is staged with its other days copied as they are and the given ones computed. The
    queries of a staging unit run side by side on ``store`` and the free handles ``beside`` (a
    month of the showback: four runs of days). Returns the rows computed."""
    computed = 0
    for group in swap_units(table, days):
        pid = _swap_unit(table, group[0])
        with store.staging(table) as stage:
            kept, keeping = 0, nullcontext()
            if table in MONTHLY:
                other_days = (f"FROM `{table}` WHERE _partition_id = {{p:String}} "
                              f"AND NOT has({{days:Array(Date)}}, toDate(`{MONTHLY[table]}`))")
                where = {"p": pid, "days": group}
                kept = int(store.scalar(f"SELECT count() {other_days}", where) or 0)
                keeping = copied_beside(store, stage, f"SELECT * {other_days}", where)

            def fill(handle, query):
                (first, last), (part_fills, part_parameters) = query
                stage.on(handle).fill(sql(f"rollup/{sql_name}", **(fills or {}), **part_fills),
                                      parameters=parameters | part_parameters | {"day": last, "from": datetime.combine(first, time.min)},
                                      settings=DERIVE_SETTINGS)
            with keeping:
                in_parallel([store, *beside], [(span, part) for span in runs(group) for part in parts or [({}, {})]], fill)
            stage.replace_in(partition_ids=sorted({partition_id(table, d) for d in group}))
            computed += stage.count() - kept
    return computed


@contextmanager
def copied_beside(store, stage, select: str, parameters: dict) -> Iterator[None]:
    """Copy the rows of ``select`` (the table's rows that stay as they are) into ``stage`` on the
    store's second handle (Store.helper) while the block computes the others on ``store``: in an
    incremental run the copy takes about as long as the computing (a store with no second
    handle, a plan, copies first)."""
    helper, columns = store.helper(), store.columns(stage.like)
    if helper is store:
        stage.fill(select, parameters=parameters, columns=columns)
        yield
        return
    with ThreadPoolExecutor(1) as pool:
        copying = pool.submit(stage.on(helper).fill, select, parameters=parameters, columns=columns,
                              settings={"priority": DERIVE_SETTINGS["priority"]})     # readers first, as for the rest
        try:
            yield
        except BaseException:
            wait([copying])               # the stage stays until the copy is done; the block's error is the one raised
            raise
        copying.result()


# Days derived by one query in replace_days: the query is planned once for them (planning the
# showback alone takes ~0.1 s), while the rows one query holds stay bounded.
RUN_DAYS = 8


def _swap_unit(table: str, day: date) -> str:
    """The days staged together: a month of a MONTHLY table; up to RUN_DAYS days of another."""
    return partition_id(table, day) if table in MONTHLY else f"{day.toordinal() // RUN_DAYS}"


def swap_units(table: str, days: list[date]) -> list[list[date]]:
    """``days`` as replace_days stages them for ``table``: units that may be derived side by side."""
    return [list(group) for _, group in groupby(sorted(set(days)), key=lambda d: _swap_unit(table, d))]


def runs(days: list[date]) -> list[tuple[date, date]]:
    """(first, last) of each run of consecutive days in the sorted ``days``, at most RUN_DAYS long."""
    spans: list[tuple[date, date]] = []
    for day in days:
        if spans and (day - spans[-1][1]).days == 1 and (day - spans[-1][0]).days < RUN_DAYS:
            spans[-1] = (spans[-1][0], day)
        else:
            spans.append((day, day))
    return spans
