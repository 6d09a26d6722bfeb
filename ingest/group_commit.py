"""Group commit: the receiver's requests from many senders stored in a few large inserts.

A request (an agent's batch, a remote_write) is checked in its server thread (``split_valid``), then
handed to ``GroupCommit.store``, which blocks until ITS rows are stored. One writer thread takes
everything queued, stores it as one insert per table (requests arriving while an insert runs go
into the next one), and then answers each request: stored, its own refused rows, or the store's
error (every request of a failed group gets it: the receiver answers 503, the senders retry).
It takes a group at most every ``GATHER_S`` (0.2 s; at once when ``GROUP_ROWS`` are queued):
each insert is a part the store must write and later merge, so a burst of small groups (~20 a
second from 10,000 GPUs' agents) spent more CPU on parts and merges than on the rows; a sender
waits at most that much longer.

Exactly once per request, although requests no longer have an insert of their own (so the
store's ``insert_deduplication_token`` cannot name them): each request's id (the batch id; a
remote_write's body digest) is recorded in the ledger ``ingest_batches`` BEFORE the group's rows
are inserted. A request whose id is not in the ledger was never stored: its rows go in. A
request whose id is in the ledger (an acknowledged batch sent again; or one whose group failed or
was killed after the ledger insert, before or after its rows landed) is looked up by its rows'
sorting keys in the table, and only the rows not found go in. Either way a resend stores nothing
twice and loses nothing; the lookup is paid only by resends.

When the store refuses a group's data (a CHECK constraint), the group is stored request by
request with ``insert_valid``'s halving (each under its own id as token), so one sender's bad row
refuses that row of that request only.
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ingest.writer import MAX_SPLITS, RowProblem, _insert_halves, is_data_error

log = logging.getLogger(__name__)

LEDGER = "ingest_batches"          # sql/migrations/011_ingest_batches.sql
GROUP_ROWS = 100_000        # rows in one insert at most (more queued: the next insert)
GATHER_S = 0.2              # a group is taken at most this often: requests gather meanwhile


@dataclass
class Request:
    """One sender's rows, checked: ``items`` are (row number in the request, row) of the good ones."""
    id: str
    table: str
    columns: tuple[str, ...]
    items: list
    problems: list[RowProblem] = field(default_factory=list)
    stored: int = 0
    error: Exception | None = None
    done: threading.Event = field(default_factory=threading.Event, repr=False)


class GroupCommit:
    """Stores requests in groups (see the module docstring). ``store`` blocks until the request's
    rows are stored; it raises the store's error when its group failed."""

    def __init__(self, store, group_rows: int = GROUP_ROWS, gather_s: float = GATHER_S):
        self.store, self.group_rows, self.gather_s = store, group_rows, gather_s
        self._last = float("-inf")           # monotonic time the last group was taken
        self._queue: list[Request] = []
        self._queued_rows = 0
        self._cv = threading.Condition()
        self._writer: threading.Thread | None = None
        self._keys: dict[str, tuple[str, ...]] = {}
        self._types: dict[str, dict[str, str]] = {}
        self.counts = {"inserts": 0, "requests": 0, "resends": 0}

    def store_request(self, request: Request) -> Request:
        with self._cv:
            self._queue.append(request)
            self._queued_rows += len(request.items)
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._run, name="ingest-group-commit", daemon=True)
                self._writer.start()
            if len(self._queue) == 1 or self._queued_rows >= self.group_rows:
                self._cv.notify()         # the writer waits for a first request, or for a full group
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request

    def types(self, table: str) -> dict[str, str]:
        """Column name -> ClickHouse type of ``table``, asked of the store once."""
        if table not in self._types:
            self._types[table] = self.store.column_types(table)
        return self._types[table]

    def queued(self) -> int:
        """Requests waiting for the next insert (not counting the one running)."""
        with self._cv:
            return len(self._queue)

    # ---- the writer thread ---------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._queue:
                    self._cv.wait()
                while (wait := self._last + self.gather_s - time.monotonic()) > 0 and \
                        self._queued_rows < self.group_rows:
                    self._cv.wait(wait)
                self._last = time.monotonic()
                group, rows = [], 0
                while self._queue and (not group or rows + len(self._queue[0].items) <= self.group_rows):
                    request = self._queue.pop(0)
                    group.append(request)
                    rows += len(request.items)
                self._queued_rows -= rows
            try:
                self.commit(group)
            except Exception as exc:      # the store failed: every request of the group gets it
                for request in group:
                    request.error = exc
            finally:
                for request in group:
                    request.done.set()

    def commit(self, group: Sequence[Request]) -> None:
        """Store ``group``'s rows, each request's once; set each one's ``stored`` and ``problems``."""
        first: dict[str, Request] = {}
        for request in group:
            first.setdefault(request.id, request)
        unique = list(first.values())
        known = self._recorded([r.id for r in unique])
        new = [r for r in unique if r.id not in known]
        if new:
            self._store(LEDGER, ("id", "tbl"), [(r.id, r.table) for r in new], "ledger:" + _digest(r.id for r in new))
        to_insert: dict[tuple, list[tuple[Request, list]]] = {}
        for request in unique:
            items = request.items
            if request.id in known and items:
                self.counts["resends"] += 1
                items = self._not_stored(request)
            to_insert.setdefault((request.table, request.columns), []).append((request, items))
        for (table, columns), members in to_insert.items():
            self._insert(table, columns, members)
        for request in group:
            if request is not first[request.id]:
                request.stored, request.problems = first[request.id].stored, first[request.id].problems
        self.counts["requests"] += len(group)

    def _insert(self, table: str, columns: tuple, members: list[tuple[Request, list]]) -> None:
        rows = [row for _, items in members for _, row in items]
        if rows:
            try:
                self._store(table, columns, rows, "group:" + _digest(r.id for r, _ in members))
                self.counts["inserts"] += 1
            except Exception as exc:
                if not is_data_error(exc):
                    raise
                for request, items in members:      # find the refused rows, request by request
                    _insert_halves(self.store, table, columns, items, request.id, request.problems, [MAX_SPLITS])
                    request.problems.sort(key=lambda p: p.row)
        for request, _ in members:
            refused = {p.row for p in request.problems}
            request.stored = sum(n not in refused for n, _ in request.items)

    def _store(self, table: str, columns: Sequence[str], rows: list, token: str) -> None:
        types = self.types(table)
        self.store.insert(table, rows, columns, token=token, types=[types[c] for c in columns])

    def _recorded(self, ids: list[str]) -> set[str]:
        rows = self.store.rows(f"SELECT DISTINCT id FROM {LEDGER} WHERE id IN {{ids:Array(String)}}", {"ids": ids})
        return {r[0] for r in rows}

    def _not_stored(self, request: Request) -> list:
        """The items of a resent request whose sorting key the table does not hold yet."""
        keys = self._sorting_key(request.table)
        if not keys or not {"host", "ts"} <= set(keys) or not set(keys) <= set(request.columns):
            return []                     # cannot look it up: it was recorded, so take it as stored
        at = [request.columns.index(k) for k in keys]
        host, ts = request.columns.index("host"), request.columns.index("ts")
        hosts = sorted({row[host] for _, row in request.items})
        times = [row[ts] for _, row in request.items]
        cols = ", ".join(f"`{k}`" for k in keys)
        found = self.store.rows(
            f"SELECT {cols} FROM `{request.table}` WHERE host IN {{hosts:Array(String)}} "
            "AND ts >= {lo:DateTime64(3, 'UTC')} AND ts <= {hi:DateTime64(3, 'UTC')}",
            {"hosts": hosts, "lo": min(times), "hi": max(times)})
        held = {tuple(_comparable(v) for v in r) for r in found}
        return [(n, row) for n, row in request.items if tuple(_comparable(row[i]) for i in at) not in held]

    def _sorting_key(self, table: str) -> tuple[str, ...]:
        if table not in self._keys:
            text = self.store.scalar("SELECT sorting_key FROM system.tables WHERE database = currentDatabase() "
                                     "AND name = {t:String}", {"t": table}) or ""
            self._keys[table] = tuple(k.strip().strip("`") for k in text.split(",") if k.strip())
        return self._keys[table]


def _comparable(value):
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return round(aware.timestamp() * 1000)
    return value


def _digest(ids) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()
