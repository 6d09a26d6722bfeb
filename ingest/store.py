"""The one way to reach ClickHouse: a DSN, parsed, connected and checked.

Two modes, same SQL:

* ``chdb:///abs/dir`` (or ``chdb://~/dir``, ``chdb://./dir``): ClickHouse embedded in this
  process through chDB. One process owns a directory; a second one gets ``StoreLocked`` naming
  the owner (read from the ``gpuledger.owner`` file this module writes beside the data).
* ``http(s)://user:password@host:port/database``: a ClickHouse server or cluster.

A ``?database=NAME`` query parameter picks the database in either mode (default ``gpuledger``).

Every write goes through a ``Store``: ``insert`` for rows, and ``staging`` for whole-partition
work: a private empty copy of a table is filled, then its partitions are attached to the table,
replace the table's, or the two tables are exchanged, each step atomic per partition.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import clickhouse_connect

from base.errors import StoreError, StoreLocked, StoreUnreachable, first_line
from base.settings import expand_home
from base.sqlfiles import sql

log = logging.getLogger(__name__)

DEFAULT_DATABASE = "gpuledger"
OWNER_FILE = "gpuledger.owner"
STAGE_PREFIX = "_stage_"
_PARTITION_ID = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class StoreTarget:
    """Where the store is. ``password`` is kept out of ``repr`` and ``str``."""

    mode: str                      # "chdb" or "http"
    database: str = DEFAULT_DATABASE
    path: Path | None = None       # chdb data directory
    host: str = ""
    port: int = 0
    user: str = "default"
    password: str = field(default="", repr=False)
    secure: bool = False

    @property
    def embedded(self) -> bool:
        return self.mode == "chdb"

    def __str__(self) -> str:  # safe for logs: never the password
        if self.embedded:
            return f"chdb://{self.path} (database {self.database})"
        scheme = "https" if self.secure else "http"
        return f"{scheme}://{self.user}@{self.host}:{self.port}/{self.database}"


def parse_dsn(dsn: str) -> StoreTarget:
    """Parse a store DSN; raise StoreError saying what a valid one looks like."""
    parsed = urlparse(dsn)
    database = parse_qs(parsed.query).get("database", [""])[0]
    if parsed.scheme == "chdb":
        raw = unquote(parsed.netloc + parsed.path)
        if not raw:
            raise StoreError(f"store DSN {dsn!r} names no directory: use chdb:///absolute/dir or chdb://~/dir")
        path = expand_home(raw).absolute()
        return StoreTarget("chdb", database or DEFAULT_DATABASE, path=path)
    if parsed.scheme in ("http", "https"):
        if not parsed.hostname:
            raise StoreError(f"store DSN {_redact(dsn)!r} names no host: use http://user:password@host:8123/database")
        secure = parsed.scheme == "https"
        path_db = parsed.path.strip("/")
        return StoreTarget(
            "http",
            database or path_db or DEFAULT_DATABASE,
            host=parsed.hostname,
            port=parsed.port or (8443 if secure else 8123),
            user=unquote(parsed.username or "default"),
            password=unquote(parsed.password or ""),
            secure=secure,
        )
    raise StoreError(
        f"store DSN {_redact(dsn)!r} has scheme {parsed.scheme!r}; expected chdb:///dir (embedded) "
        "or http(s)://user:password@host:port/database (server)"
    )


def _redact(dsn: str) -> str:
    parsed = urlparse(dsn)
    if parsed.password:
        return dsn.replace(f":{parsed.password}@", ":***@")
    return dsn


class Store:
    """A connected store: the clickhouse-connect client plus where it points.

    ``client`` is the plain clickhouse-connect client; use it for queries with ``parameters=``.
    """

    def __init__(self, target: StoreTarget, client):
        self.target = target
        self.client = client
        self._helper: Store | None = None
        self._workers: list[Store] = []

    def __repr__(self) -> str:
        return f"Store({self.target})"

    def query_df(self, sql: str, parameters: dict | None = None):
        return self.client.query_df(sql, parameters=parameters or {})

    def rows(self, sql: str, parameters: dict | None = None) -> list[tuple]:
        return self.client.query(sql, parameters=parameters or {}).result_rows

    def scalar(self, sql: str, parameters: dict | None = None):
        rows = self.rows(sql, parameters)
        return rows[0][0] if rows else None

    def command(self, sql: str, parameters: dict | None = None, settings: dict | None = None):
        return self.client.command(sql, parameters=parameters or None, settings=settings or None)

    def insert(self, table: str, rows, columns: Sequence[str] | None = None, *, token: str | None = None,
               settings: dict | None = None, types: Sequence[str] | None = None) -> int:
        """Insert ``rows`` (sequences in ``columns`` order, or a DataFrame) into ``table``; return
        how many. ``token`` deduplicates: the same token inserted again is stored once. ``types``,
        the columns' ClickHouse types when the caller knows them, spares the client asking the
        store for them (a query per insert, a third of a small insert's time)."""
        settings = {**(settings or {}), **({"insert_deduplication_token": token} if token else {})}
        if columns is None:
            self.client.insert_df(table, rows, settings=settings)
        else:
            self.client.insert(table, rows, column_names=list(columns), settings=settings,
                               column_type_names=list(types) if types else None)
        return len(rows)

    def columns(self, table: str, *, defaulted: bool = True) -> list[str]:
        """The insertable columns of ``table`` (not MATERIALIZED or ALIAS), in order; without
        ``defaulted``, only those without a DEFAULT (the ones a query must yield)."""
        return list(self.column_types(table, defaulted=defaulted))

    def column_types(self, table: str, *, defaulted: bool = True) -> dict[str, str]:
        """name -> ClickHouse type of the insertable columns of ``table``, in order."""
        kinds = ["", "DEFAULT"] if defaulted else [""]
        return dict(self.rows(sql("store/columns"), {"t": table, "kinds": kinds}))

    def partitions(self, table: str) -> list[str]:
        """Ids of the partitions ``table`` holds rows in."""
        ids = [r[0] for r in self.rows(sql("store/partitions"), {"t": table})]
        for pid in ids:
            if not _PARTITION_ID.fullmatch(pid):
                raise StoreError(f"unexpected partition id {pid!r} in table {table}")
        return ids

    @contextmanager
    def staging(self, like: str, *, engine: str = "") -> Iterator[Stage]:
        """A private, empty copy of table ``like`` (optionally with another ``engine`` clause),
        dropped when the block ends whatever happens."""
        stage = self.stage_type(self, like, f"{STAGE_PREFIX}{like}_{uuid.uuid4().hex[:12]}")
        self.note_stage(stage.name, like)
        stage.create(engine)
        try:
            yield stage
        finally:
            stage.drop()

    stage_type: type[Stage]              # set below: the Stage class this store makes (ClusterStore: its own)

    def note_stage(self, name: str, like: str) -> None:
        """Told of each staging table made for this store (a planning store answers reads of it)."""

    def stage_partitions(self, name: str, expected: Sequence[str] = ()) -> list[str]:
        """Ids of the partitions staging table ``name`` holds (a planning store answers ``expected``)."""
        return self.partitions(name)

    def insert_bytes(self, table: str, data: bytes, columns: Sequence[str], fmt: str, settings: dict | None = None) -> None:
        """Insert ``data``, rows in ClickHouse format ``fmt`` with ``columns``, into ``table``."""
        self.client.raw_insert(table, list(columns), insert_block=data, fmt=fmt, settings=settings or {})

    def drop_stale_stages(self, older_than_s: int = 86_400) -> list[str]:
        """Drop staging tables left behind by killed processes (older than ``older_than_s``)."""
        names = [r[0] for r in self.rows(sql("store/stale_stages"), {"prefix": STAGE_PREFIX, "older_than_s": older_than_s})]
        for name in names:
            log.info("dropping staging table %s left behind by an earlier run", name)
            self.command(f"DROP TABLE IF EXISTS `{name}`")
        return names

    def clone(self) -> Store:
        """Another handle on the same store, for work in another thread."""
        client = _chdb_client(self.target) if self.target.embedded else _http_client(self.target)
        return Store(self.target, client)

    @contextmanager
    def sharing_cores(self, handles: int) -> Iterator[None]:
        """While the block runs, this handle's queries use their share of this machine's cores,
        ``handles`` handles working at once (embedded store: the engine runs on these cores, and
        two queries of two threads each on two cores ran ~8 % slower than of one thread each). A
        server's queries keep its own settings."""
        if not self.target.embedded or handles < 2:
            yield
            return
        self.command(f"SET max_threads = {max(1, (os.cpu_count() or 1) // handles)}")
        try:
            yield
        finally:
            self.command("SET max_threads = 0")        # the engine's default: every core

    def read_only(self) -> Store:
        """A second handle on the same store that refuses writes (for user-typed SQL)."""
        if self.target.embedded:
            client = _chdb_client(self.target)
            # a reader's queries go before the derivation's (DERIVE_SETTINGS, priority 2: paused
            # while one of these runs); set before readonly, which forbids changing settings
            client.command("SET priority = 1")
            client.command("SET readonly = 1")
        else:
            client = _http_client(self.target, settings={"readonly": 1})
        return Store(self.target, client)

    def helper(self) -> Store:
        """A second handle on this store (a clone, kept until this handle closes), for work beside
        this handle's own in another thread; a store whose clone is itself (a plan) is its own."""
        if self._helper is None:
            self._helper = self.clone()
        return self._helper

    def workers(self, count: int) -> list[Store]:
        """Up to ``count`` more handles on this store (clones, kept until this handle closes), for
        work side by side with it; none for a store whose clone is itself (a plan)."""
        while len(self._workers) < count and (clone := self.clone()) is not self:
            self._workers.append(clone)
        return self._workers[:count]

    def close(self) -> None:
        self.close_helpers()
        self.client.close()

    def close_helpers(self) -> None:
        """Close the handles helper() and workers() opened."""
        for handle in [*self._workers, self._helper]:
            if handle not in (None, self):
                handle.close()
        self._helper, self._workers = None, []


class Stage:
    """A staging table (see ``Store.staging``): fill it, then move what it holds into a table."""

    def __init__(self, store: Store, like: str, name: str):
        self.store, self.like, self.name = store, like, name

    def create(self, engine: str = "") -> None:
        self.store.command(f"CREATE TABLE `{self.name}` AS `{self.like}` {engine}".rstrip())

    def drop(self) -> None:
        self.store.command(f"DROP TABLE IF EXISTS `{self.name}`")

    def fill(self, select: str, parameters: dict | None = None, settings: dict | None = None,
             columns: Sequence[str] | None = None) -> None:
        """``INSERT INTO`` the stage the rows of ``select``, which yields ``columns`` (default: every
        column of the table without a DEFAULT, by name; the others take their default)."""
        cols = ", ".join(f"`{c}`" for c in (columns or self.store.columns(self.like, defaulted=False)))
        self.store.command(f"INSERT INTO `{self.name}` ({cols}) SELECT {cols} FROM ({select})",
                           parameters=parameters, settings=settings)

    def fill_bytes(self, data: bytes, columns: Sequence[str], fmt: str, settings: dict | None = None) -> None:
        """Insert ``data``, rows in ClickHouse format ``fmt`` with ``columns``, into the stage."""
        self.store.insert_bytes(self.name, data, columns, fmt, settings)

    def on(self, store: Store) -> Stage:
        """This staging table reached through ``store`` (another handle on the same store)."""
        return type(self)(store, self.like, self.name)

    def count(self) -> int:
        return int(self.store.scalar(f"SELECT count() FROM `{self.name}`"))

    def attach_to(self, table: str | None = None, *, unless_stored: Sequence[str] = (),
                  progress: Callable[[int, int], None] | None = None) -> None:
        """Add every partition of the stage to ``table`` (default: the table it copies).

        ``unless_stored`` (the table's key columns) finishes an interrupted earlier load of the
        same input: a partition whose every row the table already holds is not attached again
        (ATTACH is atomic per partition, so one is attached whole or not at all). ``progress``
        is called with (partitions done, partitions in all) after each one."""
        table = table or self.like
        keys = ", ".join(f"`{k}`" for k in unless_stored)
        pids = self.store.stage_partitions(self.name)
        for done, pid in enumerate(pids, 1):
            if unless_stored:
                total, stored = self.store.rows(
                    f"SELECT count(), countIf(({keys}) IN (SELECT {keys} FROM `{table}` WHERE _partition_id = {{p:String}})) "
                    f"FROM `{self.name}` WHERE _partition_id = {{p:String}}", {"p": pid})[0]
                if total == stored:
                    pid = ""
            if pid:
                self.store.command(f"ALTER TABLE `{table}` ATTACH PARTITION ID '{pid}' FROM `{self.name}`")
            if progress:
                progress(done, len(pids))

    def drop_repeats(self, key: Sequence[str]) -> int:
        """Keep one row of each ``key`` (which must cover the table's sorting and partition keys);
        return how many rows were dropped."""
        keys = ", ".join(f"`{k}`" for k in key)
        total, unique = self.store.rows(f"SELECT count(), uniqExact({keys}) FROM `{self.name}`")[0]
        if total != unique:
            self.store.command(f"OPTIMIZE TABLE `{self.name}` FINAL DEDUPLICATE BY {keys}")
        return int(total - unique)

    def replace_in(self, partition_ids: Sequence[str] = ()) -> None:
        """Make each partition of the table that the stage holds, and each of ``partition_ids``,
        exactly what the stage holds for it (a partition the stage has no rows for is dropped)."""
        held = self.store.stage_partitions(self.name, partition_ids)
        for pid in held:
            self.store.command(f"ALTER TABLE `{self.like}` REPLACE PARTITION ID '{pid}' FROM `{self.name}`")
        for pid in sorted(set(partition_ids) - set(held)):
            if not _PARTITION_ID.fullmatch(pid):
                raise StoreError(f"unexpected partition id {pid!r} for table {self.like}")
            self.store.command(f"ALTER TABLE `{self.like}` DROP PARTITION ID '{pid}'")

    def exchange(self) -> None:
        """Swap the stage and the table it copies, atomically; the old rows go when the stage is dropped."""
        self.store.command(f"EXCHANGE TABLES `{self.name}` AND `{self.like}`")


Store.stage_type = Stage


def connect(dsn: str, *, create_database: bool = True) -> Store:
    """Open the store named by ``dsn``: make the database if needed and check it answers."""
    target = parse_dsn(dsn)
    client = _chdb_client(target, use_database=False) if target.embedded else _http_client(target, use_database=False)
    if create_database:
        client.command(f"CREATE DATABASE IF NOT EXISTS `{target.database}`")
    client.database = target.database
    log.debug("connected to %s", target)
    return Store(target, client)


def _chdb_client(target: StoreTarget, use_database: bool = True):
    target.path.mkdir(parents=True, exist_ok=True)
    try:
        client = clickhouse_connect.get_client(
            interface="chdb", path=str(target.path), database=target.database if use_database else None
        )
    except Exception as exc:  # chDB reports a held directory as a generic start-up failure
        if _held_by_another(target.path):
            raise StoreLocked(_locked_message(target.path)) from exc
        raise StoreError(f"cannot open the embedded store at {target.path}: {exc}") from exc
    _write_owner(target.path)
    return client


def _http_client(target: StoreTarget, use_database: bool = True, settings: dict | None = None):
    try:
        return clickhouse_connect.get_client(
            host=target.host, port=target.port, username=target.user, password=target.password,
            secure=target.secure, database=target.database if use_database else None,
            settings=settings or {}, connect_timeout=5,
        )
    except Exception as exc:
        raise StoreUnreachable(
            f"ClickHouse server at {target} does not answer ({type(exc).__name__}: {first_line(exc)}). "
            "Check that it runs and that host, port, user and password in the store DSN are right."
        ) from exc


def ensure_free(path: Path) -> None:
    """Raise StoreLocked, naming the owner, if another process holds the embedded store at ``path``."""
    if _held_by_another(path):
        raise StoreLocked(_locked_message(path))


def _held_by_another(path: Path) -> bool:
    status = path / "status"
    if not status.exists():
        return False
    import fcntl

    with open(status, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)  # ClickHouse holds it with flock(LOCK_EX)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def _locked_message(path: Path) -> str:
    owner = ""
    try:
        info = json.loads((path / OWNER_FILE).read_text())
        alive = Path(f"/proc/{info['pid']}").exists()
        owner = f" by process {info['pid']} ({info['command']}, since {info['started']})" if alive else ""
    except (OSError, ValueError, KeyError):
        pass
    return (
        f"the embedded store {path} is in use{owner or ' by another process'}. One process owns an "
        "embedded store: stop that process, send data to it over HTTP (scrape / remote_write), "
        "or point this command at another directory with --store"
    )


def _write_owner(path: Path) -> None:
    info = {
        "pid": os.getpid(),
        "command": " ".join(Path(sys.argv[0]).name.split() + sys.argv[1:])[:200],
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        (path / OWNER_FILE).write_text(json.dumps(info))
    except OSError:
        pass
