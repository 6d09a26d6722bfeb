"""Finding the first bad row of a file ClickHouse refused, to name it to the operator.

Only runs after a load failed. It reads the file again with every column as text and asks
ClickHouse which row first fails to convert to the table's type, holds text over its column's
length limit (``ingest.limits``), or first breaks one of the table's CHECK constraints. The rows
may also come from a table holding the input as text (``locate_in``: a file sent to a server).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ingest import limits

CONSTRAINT = re.compile(r"CONSTRAINT (\w+) CHECK (.+?)(?=,\s*(?:CONSTRAINT|INDEX|PROJECTION)\b|\)\s*ENGINE)", re.S)


def base_type(ch_type: str) -> str:
    for wrapper in ("LowCardinality(", "Nullable("):
        while ch_type.startswith(wrapper):
            ch_type = ch_type[len(wrapper):-1]
    return ch_type


def cast_expr(column: str, ch_type: str) -> str:
    base = base_type(ch_type)
    if base == "String":
        return f"ifNull(`{column}`, '')"
    if base.startswith("DateTime64"):
        return f"parseDateTime64BestEffortOrNull(`{column}`, 3, 'UTC')"
    if base.startswith("DateTime"):
        return f"parseDateTimeBestEffortOrNull(`{column}`, 'UTC')"
    return f"accurateCastOrNull(`{column}`, '{base}')"


def constraints(store, table: str) -> list[tuple[str, str]]:
    ddl = store.scalar(
        "SELECT create_table_query FROM system.tables WHERE database = currentDatabase() AND name = {t:String}", {"t": table}
    ) or ""
    return CONSTRAINT.findall(ddl)


def locate(store, table: str, path: Path, fmt: str, columns: Sequence[str], types: dict[str, str]) -> tuple[int, str, str] | None:
    """(row, column, reason) of the first bad row, 1-based over data rows; None if none is found."""
    source = "file({path:String}, {fmt:String}, {structure:String})"
    params = {"path": str(path.resolve()), "fmt": fmt, "structure": ", ".join(f"`{c}` Nullable(String)" for c in columns)}
    return _locate(store, table, source, params, columns, types)


def locate_in(store, table: str, text_table: str, columns: Sequence[str], types: dict[str, str]) -> tuple[int, str, str] | None:
    """``locate`` over the rows of ``text_table`` (in the order they were inserted)."""
    return _locate(store, table, f"`{text_table}`", {}, columns, types)


def _locate(store, table, source, params, columns, types):
    settings = {"max_threads": 1, "input_format_parallel_parsing": 0}
    return _first_unparseable(store, source, params, settings, columns, types) or _first_breaking(
        store, table, source, params, settings, columns, types
    )


def _first_breaking(store, table, source, params, settings, columns, types):
    checks = [(name, expr) for name, expr in constraints(store, table) if not _mentions_missing(expr, types, columns)]
    if not checks:
        return None
    typed = ", ".join(f"{cast_expr(c, types[c])} AS `{c}`" for c in columns)
    which = "multiIf(" + ", ".join(f"NOT ({expr}), '{name}'" for name, expr in checks) + ", '')"
    rows = store.client.query(
        f"SELECT row, {which} AS bad FROM (SELECT rowNumberInAllBlocks() + 1 AS row, {typed} FROM {source}) "
        "WHERE bad != '' ORDER BY row LIMIT 1",
        parameters=params, settings=settings,
    ).result_rows
    if not rows:
        return None
    row, name = int(rows[0][0]), rows[0][1]
    return row, _constraint_column(dict(checks)[name], columns), f"breaks the check {name}: {dict(checks)[name].strip()}"


def _first_unparseable(store, source, params, settings, columns, types):
    checks = [
        (c, f"length(ifNull(`{c}`, '')) > {limits.max_bytes(c)}") if base_type(types[c]) == "String" else
        (c, f"`{c}` IS NOT NULL AND toString(`{c}`) != '' AND {cast_expr(c, types[c])} IS NULL")
        for c in columns
    ]
    if not checks:
        return None
    which = "multiIf(" + ", ".join(f"{cond}, '{c}'" for c, cond in checks) + ", '')"
    rows = store.client.query(
        f"SELECT row, bad FROM (SELECT rowNumberInAllBlocks() + 1 AS row, {which} AS bad FROM {source}) "
        "WHERE bad != '' ORDER BY row LIMIT 1",
        parameters=params, settings=settings,
    ).result_rows
    if not rows:
        return None
    row, column = int(rows[0][0]), rows[0][1]
    if base_type(types[column]) == "String":
        size = store.client.query(
            f"SELECT length(`{column}`) FROM (SELECT rowNumberInAllBlocks() + 1 AS row, `{column}` FROM {source}) "
            "WHERE row = {r:UInt64}", parameters=params | {"r": row}, settings=settings,
        ).result_rows[0][0]
        return row, column, f"{size:,} bytes, over the {limits.max_bytes(column):,}-byte limit of {column}"
    value = store.client.query(
        f"SELECT `{column}` FROM (SELECT rowNumberInAllBlocks() + 1 AS row, `{column}` FROM {source}) WHERE row = {{r:UInt64}}",
        parameters=params | {"r": row}, settings=settings,
    ).result_rows[0][0]
    return row, column, f"cannot read {value!r} as {base_type(types[column])}"


def _mentions_missing(expr: str, types: dict[str, str], columns: Sequence[str]) -> bool:
    return any(name in types and name not in columns for name in re.findall(r"\b([a-z_]+)\b", expr))


def _constraint_column(expr: str, columns: Sequence[str]) -> str:
    named = [c for c in columns if re.search(rf"\b{c}\b", expr)]
    return ", ".join(dict.fromkeys(named))
