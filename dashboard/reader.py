"""What the dashboard reads through: a bounded pool of read-only store handles and a cache of
query results that a finished derivation empties.

* **Pool.** A chDB handle (like a clickhouse-connect client) runs one query at a time: its calls
  hold a lock. chDB releases the GIL while a query runs, so several handles of the one embedded
  engine in this process run queries side by side; ``ReadPool`` lends up to ``size`` read-only
  handles (``Store.read_only()``), opened when first needed, and a request waits for a free one
  (measured in bench/bench_dashboard_users.py and docs/dashboard.md).
* **Cache.** ``ResultCache`` keeps query results keyed on (data version, query name, bound
  parameters). The data version goes up each time a derivation finishes in this process:
  ``ingest.rollup.run.rollup`` announces ``base.events.ROLLUP_FINISHED`` (so ingest never
  imports the dashboard), and results read before it are never served again. Queries of state
  that other jobs write as they go (alert state, silences) are kept only ``RECENT_S`` seconds;
  every result at most ``MAX_AGE_S`` (a backstop for derivations by another process on a
  ClickHouse server, and for queries that read the clock, such as month-to-date).
  Concurrent requests for the same key run the query once (the others wait for its result), so
  50 users opening the same page cost one query per card, not 50.
* **Rendered parts.** A second, smaller cache keeps what a page's callbacks return, the same way
  (``dashboard.state.shared``), so those users build its tables and figures once too.
"""
from __future__ import annotations

import copy
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pandas as pd

from base.events import ROLLUP_FINISHED, listen

POOL_SIZE = 4            # read handles: 50 users during a backfill, p95 622-710 ms with 4 (docs/dashboard.md "Concurrent users")
MAX_ENTRIES = 1024
MAX_AGE_S = 300.0
RECENT_S = 5.0
RENDERED_ENTRIES = 64    # a page's rendered parts (figures, tables) are far bigger than a query's rows
RENDERED_S = 60.0


class ReadPool:
    """Up to ``size`` handles from ``open_handle`` (``Store.read_only``), lent one query at a time.
    Has the read methods of a Store (``query_df``, ``rows``, ``scalar``), so query functions take it
    where they take a store."""

    def __init__(self, open_handle: Callable[[], object], size: int = POOL_SIZE, target=None):
        if size < 1:
            raise ValueError("a read pool needs at least one handle")
        self.size, self.target = size, target
        self._open = open_handle
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._opened = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ReadPool({self.target}, {self._opened}/{self.size} open)"

    @contextmanager
    def handle(self) -> Iterator[object]:
        try:
            handle = self._idle.get_nowait()
        except queue.Empty:
            handle = self._grow_or_wait()
        try:
            yield handle
        finally:
            self._idle.put(handle)

    def _grow_or_wait(self):
        while True:
            with self._lock:
                grow = self._opened < self.size
                self._opened += grow
            if grow:
                try:
                    return self._open()
                except BaseException:
                    with self._lock:
                        self._opened -= 1          # a failed open frees its place: a waiter may try again
                    raise
            try:
                return self._idle.get(timeout=0.5)
            except queue.Empty:
                continue

    def query_df(self, sql: str, parameters: dict | None = None) -> pd.DataFrame:
        with self.handle() as h:
            return h.query_df(sql, parameters)

    def rows(self, sql: str, parameters: dict | None = None) -> list[tuple]:
        with self.handle() as h:
            return h.rows(sql, parameters)

    def scalar(self, sql: str, parameters: dict | None = None):
        with self.handle() as h:
            return h.scalar(sql, parameters)

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


class _Flight:
    """One load in progress; others asking for the same key wait on it."""

    def __init__(self):
        self.done = threading.Event()
        self.value = None
        self.failed = False


class ResultCache:
    """Results by key, per data version, at most ``max_entries`` (least recently used go first)."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_age_s: float = MAX_AGE_S,
                 clock: Callable[[], float] = time.monotonic):
        self.max_entries, self.max_age_s, self.clock = max_entries, max_age_s, clock
        self.version = 0
        self.hits = self.misses = 0
        self._entries: OrderedDict = OrderedDict()
        self._flights: dict = {}
        self._lock = threading.Lock()

    def invalidate(self, *_args, **_kwargs) -> None:
        """Forget every result: the next request of each key runs its query again."""
        with self._lock:
            self.version += 1
            self._entries.clear()

    def forget(self, name: str) -> None:
        """Forget the results of query ``name`` (after the dashboard wrote what it reads)."""
        with self._lock:
            for key in [k for k in self._entries if k[1] == name]:
                del self._entries[key]

    def get(self, name: str, params: dict, load: Callable[[], object], max_age_s: float | None = None,
            share: bool = False):
        """``load()``'s result for (``name``, ``params``), run at most once at a time per key and
        kept ``max_age_s`` (default ``self.max_age_s``) or until the data version changes. Each
        caller gets a copy, or with ``share`` the one result (for values no caller changes)."""
        give = (lambda value: value) if share else _copy
        max_age = self.max_age_s if max_age_s is None else min(max_age_s, self.max_age_s)
        with self._lock:
            key = (self.version, name, _frozen(params))
            hit = self._entries.get(key)
            if hit is not None and self.clock() - hit[0] < max_age:
                self._entries.move_to_end(key)
                self.hits += 1
                return give(hit[1])
            flight = self._flights.get(key)
            leader = flight is None
            if leader:
                flight = self._flights[key] = _Flight()
                self.misses += 1
        if not leader:
            flight.done.wait()
            if flight.failed:            # the leader's query failed: run it here, to report our own error
                return load()
            with self._lock:
                self.hits += 1
            return give(flight.value)
        try:
            started = self.clock()
            flight.value = load()
        except BaseException:
            flight.failed = True
            raise
        finally:
            with self._lock:
                del self._flights[key]
                if not flight.failed and key[0] == self.version:   # read before a derivation finished: not kept
                    self._entries[key] = (started, flight.value)
                    while len(self._entries) > self.max_entries:
                        self._entries.popitem(last=False)
            flight.done.set()
        return give(flight.value)


class Reader(ReadPool):
    """The pool plus its caches (query results; ``rendered``: page callbacks' outputs), emptied by
    every derivation of ``target`` that finishes in this process."""

    def __init__(self, open_handle: Callable[[], object], size: int = POOL_SIZE, target=None,
                 cache: ResultCache | None = None):
        super().__init__(open_handle, size, target)
        self.cache = cache or ResultCache()
        self.rendered = ResultCache(RENDERED_ENTRIES, RENDERED_S)
        listen(ROLLUP_FINISHED, self._derived)          # weakly: a dropped Reader stops listening

    def invalidate(self) -> None:
        """Forget every query result and rendered part, as a finished derivation does."""
        self.cache.invalidate()
        self.rendered.invalidate()

    def _derived(self, sender) -> None:
        if sender is None or self.target is None or sender == self.target:
            self.invalidate()


def reader_for(store, size: int = POOL_SIZE) -> Reader:
    """The dashboard's reader of ``store``: read-only handles of it, its derivations' signal."""
    return Reader(store.read_only, size, target=getattr(store, "target", None))


def cached(store, name: str, params: dict, load: Callable[[], object], max_age_s: float | None = None):
    """``load()`` through ``store``'s cache when it has one (a Reader), else run it."""
    cache = getattr(store, "cache", None)
    return load() if cache is None else cache.get(name, params, load, max_age_s)


def _frozen(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_frozen(v) for v in value]
        return tuple(sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items)
    return (type(value).__name__, value)


def _copy(value):
    """A private copy for the caller: callbacks may change the frame they get."""
    return value.copy() if isinstance(value, pd.DataFrame) else copy.deepcopy(value)
