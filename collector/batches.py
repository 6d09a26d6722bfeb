"""A batch: rows for one telemetry table under a stable id, as spooled, pushed and inserted.

The id is chosen once, when the batch is made, and travels with it: it is the batch's name in
the on-disk spool (``collector.spool``), in the agent's push to ``/api/v1/ingest/batch``
(``ingest.receiver``), and the ``insert_deduplication_token`` of its insert, so a batch sent
twice (a replay after a crash between insert and acknowledgement) is stored once.

On the wire and on disk a batch is one JSON object::

    {"id": "node-1/gpu_samples/1784000000000/3f2a...", "table": "gpu_samples",
     "columns": ["ts", "host", ...], "rows": [[1784000000000, "node-1", ...], ...]}

where ``ts`` is milliseconds since the epoch (UTC). A ``ts`` that is not a finite number of
milliseconds within datetime's range is left as it came, for the store's checks to refuse that
row by name (``ingest.writer.insert_valid``).
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from base.errors import BatchError
from collector.records import GPU_HEALTH_EVENT_COLUMNS, GPU_PROCESS_COLUMNS, GPU_SAMPLE_COLUMNS

TABLES: dict[str, tuple[str, ...]] = {
    "gpu_samples": GPU_SAMPLE_COLUMNS,
    "gpu_processes": GPU_PROCESS_COLUMNS,
    "gpu_health_events": GPU_HEALTH_EVENT_COLUMNS,
}
TIME_COLUMNS = frozenset({"ts"})
BATCH_PATH = "/api/v1/ingest/batch"   # where `gpuledger up` receives batches (POST)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ID = re.compile(r"[A-Za-z0-9_.:/@-]{1,200}")


@dataclass(frozen=True)
class Batch:
    id: str
    table: str
    columns: tuple[str, ...]
    rows: list

    def to_json(self) -> bytes:
        idx = [i for i, c in enumerate(self.columns) if c in TIME_COLUMNS]
        rows = self.rows
        if idx:
            rows = [list(r) for r in rows]
            for r in rows:
                for i in idx:
                    if isinstance(r[i], datetime):
                        r[i] = _ms(r[i])
        return json.dumps({"id": self.id, "table": self.table, "columns": list(self.columns),
                           "rows": rows}, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> Batch:
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise BatchError(f"batch is not JSON ({e})") from None
        if not isinstance(doc, dict) or not {"id", "table", "columns", "rows"} <= set(doc):
            raise BatchError("batch must be a JSON object with id, table, columns and rows")
        columns = doc["columns"]
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise BatchError("columns must be a list of column names")
        batch = cls(str(doc["id"]), str(doc["table"]), tuple(columns), doc["rows"])
        batch.check()
        idx = [i for i, c in enumerate(batch.columns) if c in TIME_COLUMNS]
        for r in batch.rows:
            for i in idx:
                r[i] = _from_ms(r[i])
        return batch

    def check(self) -> None:
        """Raise BatchError unless the batch names a known table, its columns, and fits them."""
        if not _ID.fullmatch(self.id):
            raise BatchError(f"batch id {self.id[:80]!r} must be 1-200 characters of "
                             "letters, digits and _.:/@-")
        known = TABLES.get(self.table)
        if known is None:
            raise BatchError(f"unknown table {self.table!r}; batches go to {', '.join(TABLES)}")
        unknown = [c for c in self.columns if c not in known]
        if unknown or len(set(self.columns)) != len(self.columns):
            raise BatchError(f"columns {unknown or list(self.columns)} are not distinct "
                             f"{self.table} columns; known: {', '.join(known)}")
        if not isinstance(self.rows, list):
            raise BatchError("rows must be a list of lists")
        width = len(self.columns)
        for n, r in enumerate(self.rows):
            if not isinstance(r, list) or len(r) != width:
                raise BatchError(f"row {n} has {len(r) if isinstance(r, list) else 'no'} "
                                 f"values; expected {width} (one per column)")


def new_id(host: str, table: str, ts: datetime) -> str:
    """A batch id unique to this agent, round and table."""
    safe_host = re.sub(r"[^A-Za-z0-9_.:@-]", "_", host)[:80] or "host"
    return f"{safe_host}/{table}/{_ms(ts)}/{uuid.uuid4().hex[:12]}"


def batches_from_round(round_, host: str) -> list[Batch]:
    """One batch per non-empty table of a sampling round (``collector.nvml.SampleRound``)."""
    out = []
    for table, records in (("gpu_samples", round_.samples), ("gpu_processes", round_.processes),
                           ("gpu_health_events", round_.events)):
        if records:
            rows = [list(dataclasses.astuple(r)) for r in records]
            out.append(Batch(new_id(host, table, round_.ts), table, TABLES[table], rows))
    return out


def _from_ms(value):
    """The time ``value`` milliseconds after the epoch; any other value unchanged."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return value
    try:
        return _EPOCH + timedelta(milliseconds=value)
    except OverflowError:
        return value


def _ms(ts: datetime) -> int:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return round(ts.timestamp() * 1000)
