"""Telemetry into the store: every path into gpu_samples (and the agent's other tables) ends here.

* ``Writer`` batches records (value types from collector.records, or tuples) and inserts them
  ``batch_rows`` at a time, each batch with an insert deduplication token so a retried batch is
  stored once (local sampling, the demo, scrapes and remote_write use it through ``insert_rows``).
* ``insert_batch`` stores an agent's batch under its own id as token, checked like the
  receiver's (``StoreDestination`` for an agent writing straight to a ClickHouse server, and
  local sampling).
* ``insert_valid`` stores the rows that fit the table and reports the others (``RowProblem``):
  values are checked against the column types first (an unsigned column gets no negative, an
  integer fits its width, a float is finite, text is within its length (``ingest.limits``), a time
  is from 2000-01-01 up to 1 day ahead of now), and a row
  the store still refuses (a CHECK constraint) is found by halving the insert, so one bad row
  never takes a batch's good rows with it (the receiver's endpoints use it).
* ``file_format`` and ``READ_SETTINGS``: how sample files are read (``ingest.samples`` loads them,
  all-or-nothing, through a staging table).

The rows themselves go through ``Store.insert`` and ``Store.staging`` (ingest.store).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import math
import pickle
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from clickhouse_connect.driver.exceptions import DataError

from base.errors import BatchRejected, Unavailable, first_line
from collector.batches import Batch
from collector.records import as_row
from ingest import limits

log = logging.getLogger(__name__)

FILE_FORMATS = {".csv": "CSVWithNames", ".parquet": "Parquet", ".tsv": "TSVWithNames", ".jsonl": "JSONEachRow"}
READ_SETTINGS = {
    "date_time_input_format": "best_effort",
    "input_format_csv_empty_as_default": 1,
    "input_format_null_as_default": 1,
    "input_format_skip_unknown_fields": 0,
}


class Writer:
    """Batched inserts into one table. ``add`` buffers, ``flush`` writes what is buffered."""

    def __init__(self, store, table: str, columns: Sequence[str], batch_rows: int = 200_000):
        self.store, self.table, self.columns = store, table, list(columns)
        self.batch_rows = batch_rows
        self._rows: list[Sequence] = []
        self.rows_written = 0

    def add(self, row) -> None:
        self._rows.append(as_row(row) if dataclasses.is_dataclass(row) else row)
        if len(self._rows) >= self.batch_rows:
            self.flush()

    def add_many(self, rows: Iterable) -> None:
        for row in rows:
            self.add(row)

    def flush(self, token: str | None = None) -> int:
        """Insert the buffered rows; ``token`` (default: a digest of the rows) deduplicates retries."""
        if not self._rows:
            return 0
        rows, self._rows = self._rows, []
        insert_rows(self.store, self.table, self.columns, rows, token=token)
        self.rows_written += len(rows)
        return len(rows)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.flush()


def insert_rows(store, table: str, columns: Sequence[str], rows: Sequence[Sequence], token: str | None = None) -> None:
    store.insert(table, rows, columns, token=token or batch_token(table, rows))


# ClickHouse error codes meaning "this data will never be accepted" (retrying cannot help)
_DATA_ERRORS = frozenset({6, 16, 26, 27, 38, 41, 43, 47, 53, 69, 70, 72, 117, 321, 469})
_CODE = re.compile(r"Code: (\d+)")


def insert_batch(store, batch: Batch) -> int:
    """Insert the batch with its id as deduplication token, its rows checked like the receiver's
    (``insert_valid``); BatchRejected when the store refuses data (the good rows are stored)."""
    try:
        stored, problems = insert_valid(store, batch.table, batch.columns, batch.rows, batch.id)
    except Exception as exc:
        if is_data_error(exc):
            raise BatchRejected(f"the store refused batch {batch.id} for {batch.table}: "
                                f"{first_line(exc)}") from exc
        raise
    if problems:
        raise BatchRejected(f"the store refused batch {batch.id} for {batch.table}: {len(problems)} of "
                            f"{len(batch.rows)} rows refused, {stored} stored; first: {problems[0]}")
    return stored


def is_data_error(exc: Exception) -> bool:
    """True when ClickHouse refused the data itself (not a connection or load problem), including
    clickhouse-connect's DataError for a value that does not fit its column's type."""
    if isinstance(exc, (DataError, struct.error, OverflowError)):
        return True
    if isinstance(exc, (TypeError, ValueError)) and not isinstance(exc, OSError):
        return "Code:" not in str(exc) or _code(exc) in _DATA_ERRORS
    return _code(exc) in _DATA_ERRORS


def _code(exc: Exception) -> int | None:
    m = _CODE.search(str(exc))
    return int(m.group(1)) if m else None


# ---- rows checked against the column types ---------------------------------------------------

TIME_MIN = limits.TS_MIN                                  # gpu_samples' ts_plausible constraint
TIME_MAX = datetime(2299, 12, 31, tzinfo=timezone.utc)    # the end of DateTime64's range
_INT_TYPE = re.compile(r"(U?)Int(8|16|32|64)")
MAX_SPLITS = 64                                           # inserts spent finding refused rows


@dataclass(frozen=True)
class RowProblem:
    """Row ``row`` (0-based, in the rows given) was not stored: ``column`` (empty when the store
    refused the row as a whole), the ``reason``, and its ``kind``, one of ``PROBLEM_KINDS``."""
    row: int
    column: str
    reason: str
    kind: str = "other"

    def __str__(self) -> str:
        return f"row {self.row}" + (f" column {self.column}" if self.column else "") + f": {self.reason}"


# what kinds of refusal there are (the platform's gpuledger_ingest_rows_refused_total{reason})
PROBLEM_KINDS = ("type", "range", "length", "ts_range", "constraint", "other")


def value_problem(ch_type: str, value) -> str | None:
    """Why ``value`` cannot be stored in a column of ClickHouse type ``ch_type`` (None: it can)."""
    problem = _value_problem(ch_type, value)
    return problem and problem[1]


def _value_problem(ch_type: str, value) -> tuple[str, str] | None:
    """``(kind, reason)`` of ``value_problem``."""
    inner, nullable, bounds = _shape(ch_type)
    if value is None:
        return None if nullable else ("type", f"no value given for a non-nullable {inner} column")
    if bounds:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            return "type", f"{_show(value)} is not an integer"
        low, high = bounds
        if not low <= value <= high:
            return "range", f"{value} is outside {inner}'s range {low}..{high}"
        return None
    if inner.startswith("Float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "type", f"{_show(value)} is not a number"
        if not math.isfinite(value):
            return "range", f"{value} is not a finite number"
        return None
    if inner == "String":
        return None if isinstance(value, str) else ("type", f"{_show(value)} is not text")
    if inner.startswith("DateTime"):
        if not isinstance(value, datetime):
            return "type", f"{_show(value)} is not a time (milliseconds since the epoch, UTC)"
        aware = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        if not TIME_MIN <= aware <= TIME_MAX:
            return "ts_range", f"{value.isoformat()} is outside the accepted times ({limits.ACCEPTED_TS})"
        return None
    return None


def split_valid(types: dict[str, str], columns: Sequence[str], rows: Sequence[Sequence],
                now: datetime | None = None):
    """``(good, problems)``: ``(index, row)`` of the rows whose values fit ``types`` and
    ``ingest.limits`` (text lengths, times up to 1 day ahead of ``now``), and a RowProblem for each
    other row (its first bad value, in column order).

    Checked column by column: a column whose values all fit is passed on a few whole-column
    tests (their types, least and greatest); only a column that fails them is checked value by
    value, which names the refused rows."""
    latest = limits.latest(now)
    refused: dict[int, RowProblem] = {}
    width = len(columns)
    transposed = list(zip(*rows)) if rows and all(len(row) == width for row in rows) else None
    for i, column in enumerate(columns):
        ch_type = types.get(column, "")
        values = transposed[i] if transposed is not None else [row[i] for row in rows]
        if _all_fit(ch_type, column, values, latest):
            continue
        kind = _kind(ch_type)
        for n, value in enumerate(values):
            if n in refused:                    # an earlier column refused this row already
                continue
            problem = _value_problem(ch_type, value)
            if problem is None and kind == "text" and value and (long := limits.too_long(column, value)):
                problem = "length", long
            if problem is None and kind == "time" and value is not None and _aware(value) > latest:
                problem = "ts_range", f"{value.isoformat()} is more than 1 day ahead of now ({limits.ACCEPTED_TS})"
            if problem:
                refused[n] = RowProblem(n, column, problem[1], problem[0])
    good = [(n, row) for n, row in enumerate(rows) if n not in refused]
    return good, sorted(refused.values(), key=lambda p: p.row)


@functools.lru_cache(maxsize=256)
def _shape(ch_type: str) -> tuple[str, bool, tuple[int, int] | None]:
    """(the type inside Nullable and LowCardinality, nullable, an integer type's least and
    greatest value) of a ClickHouse type."""
    inner, nullable = ch_type, False
    if inner.startswith("Nullable(") and inner.endswith(")"):
        inner, nullable = inner[9:-1], True
    if inner.startswith("LowCardinality(") and inner.endswith(")"):
        inner = inner[15:-1]
    m = _INT_TYPE.fullmatch(inner)
    if not m:
        return inner, nullable, None
    bits = int(m.group(2))
    return inner, nullable, (0, 2**bits - 1) if m.group(1) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _all_fit(ch_type: str, column: str, values: Sequence, latest: datetime) -> bool:
    """True when every value surely fits (``value_problem`` and the limits would find nothing);
    False when one may not (then each is checked)."""
    inner, nullable, bounds = _shape(ch_type)
    seen = set(map(type, values))
    if type(None) in seen:
        if not nullable:
            return False
        seen.discard(type(None))
        values = [v for v in values if v is not None]
    if not values:
        return True
    try:
        if bounds:
            return seen <= {int} and bounds[0] <= min(values) and max(values) <= bounds[1]
        if inner.startswith("Float"):
            return seen <= {float, int} and math.isfinite(sum(values))
        if inner == "String":
            return seen <= {str} and max(map(len, values)) * 4 <= limits.max_bytes(column)
        if inner.startswith("DateTime"):
            if not seen <= {datetime}:
                return False
            return TIME_MIN <= _aware(min(values)) and _aware(max(values)) <= min(TIME_MAX, latest)
    except (TypeError, OverflowError):      # naive and aware times mixed; a sum past float's range
        return False
    return True


def _kind(ch_type: str) -> str:
    inner = ch_type.replace("Nullable(", "").replace("LowCardinality(", "")
    return "text" if inner.startswith("String") else "time" if inner.startswith("DateTime") else ""


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def insert_valid(store, table: str, columns: Sequence[str], rows: Sequence[Sequence],
                 token: str | None = None, now: datetime | None = None) -> tuple[int, list[RowProblem]]:
    """Store the rows of ``rows`` the table accepts; return how many and what was refused.

    The checked rows go in as one insert under ``token``; when the store refuses it for its data
    (a CHECK constraint), the rows are inserted in halves (each under a token derived from
    ``token``, so a retry of the same request stores nothing twice) until the refused rows are
    isolated, within ``MAX_SPLITS`` inserts (past it, the rest of a refused half is refused
    whole). Errors other than refused data propagate: the caller answers "retry later".
    """
    good, problems = split_valid(store.column_types(table), columns, rows, now)
    token = token or batch_token(table, rows)
    budget = [MAX_SPLITS]
    stored = _insert_halves(store, table, columns, good, token, problems, budget)
    return stored, sorted(problems, key=lambda p: p.row)


def _insert_halves(store, table, columns, items, token, problems, budget) -> int:
    if not items:
        return 0
    try:
        store.insert(table, [r for _, r in items], columns, token=token)
        return len(items)
    except Exception as exc:
        if not is_data_error(exc):
            raise
        if len(items) == 1 or budget[0] <= 0:
            problems.extend(RowProblem(n, "", f"the store refused it: {first_line(exc)}", "constraint") for n, _ in items)
            return 0
    budget[0] -= 1
    mid = len(items) // 2
    return (_insert_halves(store, table, columns, items[:mid], token + "/a", problems, budget)
            + _insert_halves(store, table, columns, items[mid:], token + "/b", problems, budget))


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class StoreDestination:
    """An agent's destination (``collector.shipper``) that inserts batches straight into a store,
    opened (and re-opened after failures) by ``connect()``."""

    def __init__(self, connect, name: str = "store"):
        self._connect, self._store, self.name = connect, None, name

    def send(self, batch: Batch) -> None:
        try:
            if self._store is None:
                self._store = self._connect()
            insert_batch(self._store, batch)
        except BatchRejected:
            raise
        except Exception as exc:
            self._store = None
            raise Unavailable(f"{self.name}: {type(exc).__name__}: {first_line(exc)}") from exc

    def __str__(self) -> str:
        return self.name


def batch_token(table: str, rows: Sequence[Sequence]) -> str:
    """A digest of the batch's content: the same rows sent again are stored once."""
    return hashlib.sha256(table.encode() + pickle.dumps([tuple(r) for r in rows], protocol=5)).hexdigest()


def file_format(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if not suffixes or suffixes[-1] not in FILE_FORMATS:
        raise ValueError(f"{path}: unknown file type; expected one of {', '.join(FILE_FORMATS)} (optionally .gz)")
    return FILE_FORMATS[suffixes[-1]]
