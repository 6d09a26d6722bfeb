"""Every write to the store goes through here.

* ``Writer`` batches records (value types from collector.records, or tuples) and
  inserts them ``batch_rows`` at a time, each batch with an insert deduplication token so a
  retried batch is stored once.
* ``load_file`` loads a whole file atomically: ClickHouse parses it into a staging copy of the
  table, then its partitions are attached to the table. A bad file stores nothing.
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import logging
import pickle
import re
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from collector.records import as_row

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
    token = token or batch_token(table, rows)
    store.client.insert(table, rows, column_names=list(columns), settings={"insert_deduplication_token": token})


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


def column_types(store, table: str) -> dict[str, str]:
    rows = store.rows(
        "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = {t:String} ORDER BY position",
        {"t": table},
    )
    return dict(rows)


def structure(types: dict[str, str], columns: Sequence[str]) -> str:
    return ", ".join(f"`{c}` {types[c]}" for c in columns)


def load_file(store, table: str, path: Path, columns: Sequence[str], fmt: str, settings: dict | None = None) -> int:
    """Load ``path`` into ``table`` all-or-nothing; return the rows stored.

    Embedded stores read the file in-process (ClickHouse's own reader); servers are sent its bytes.
    """
    types = column_types(store, table)
    stage = f"_stage_{table}_{uuid.uuid4().hex[:12]}"
    store.command(f"CREATE TABLE `{stage}` AS `{table}`")
    try:
        all_settings = {**READ_SETTINGS, **(settings or {})}
        cols = ", ".join(f"`{c}`" for c in columns)
        if store.target.embedded:
            store.command(
                f"INSERT INTO `{stage}` ({cols}) SELECT {cols} FROM file({{path:String}}, {{fmt:String}}, {{structure:String}})",
                parameters={"path": str(path.resolve()), "fmt": fmt, "structure": structure(types, columns)},
                settings=all_settings,
            )
        else:
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            store.client.raw_insert(stage, list(columns), insert_block=data, fmt=fmt, settings=all_settings)
        rows = store.scalar(f"SELECT count() FROM `{stage}`")
        attach_all(store, stage, table)
        return int(rows)
    finally:
        store.command(f"DROP TABLE IF EXISTS `{stage}`")


def attach_all(store, stage: str, table: str) -> None:
    partitions = store.rows(
        "SELECT DISTINCT partition_id FROM system.parts WHERE database = currentDatabase() AND table = {t:String} AND active",
        {"t": stage},
    )
    for (partition,) in partitions:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", partition):
            raise ValueError(f"unexpected partition id {partition!r} in {stage}")
        store.command(f"ALTER TABLE `{table}` ATTACH PARTITION ID '{partition}' FROM `{stage}`")
