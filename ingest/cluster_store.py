"""The store on a ClickHouse cluster (``store.cluster = "NAME"`` or ``--cluster NAME``).

``ClusterStore`` is a ``Store``, so every command, ``gpuledger up`` and ``ingest/rollup/run.py``
use it unchanged; what it does differently:

* **DDL** (``command`` of CREATE / ALTER / DROP / TRUNCATE / OPTIMIZE) goes through
  ``ingest/cluster.py``'s ``ClusterSchema.rewrite``, the code behind ``gpuledger schema
  --cluster``: ``gpuledger init`` applies exactly the statements that command prints, and a
  ``TRUNCATE`` / ``MODIFY TTL`` reaches every shard's ``t_local … ON CLUSTER``;
* **inserts** and **reads** use the plain names, which on a cluster are the ``Distributed``
  tables (inserts synchronously, ``insert_distributed_sync = 1``, so the next read sees them);
  the alert engine's tables are replicated to every node instead (see ``ingest/cluster.py``);
* **staging** (``ClusterStage``): the staging copy is made ``ON CLUSTER`` as ``_stage_…_local``
  beside ``t_local`` (the single-node engine, not replicated) plus a ``Distributed`` ``_stage_…``
  over it; each shard's first replica fills its own copy, and the swap (ATTACH / REPLACE /
  DROP PARTITION) runs on that replica against ``t_local`` — a replicated table, so the shard's
  other replicas fetch the result through Keeper. (``ALTER … ON CLUSTER`` on a replicated table
  runs on *one* replica per shard chosen by the DDL queue, which need not be the one holding the
  filled staging copy: that is why the swap is sent to the replica that filled it.)

**How a shard is reached**: ``system.clusters`` of the node in the DSN lists the cluster's
shards; the first replica of each (``replica_num = 1``, its ``host_name``) is opened over HTTP on
``store.cluster_http_port`` (default: the DSN's port) with the DSN's user, password and TLS.

**Who derives what**: a fill ``INSERT INTO stage SELECT …`` runs on every shard. For a table
sharded by host, the tables sharded by host that the query reads are rewritten to their
``_local`` names, so each shard derives its own GPUs from its own samples; every other table
(config snapshots, bills, rates) is read whole through its ``Distributed`` name. Either way each
shard keeps only the rows whose sharding key is its own (``key % total weight`` in the shard's
range, as ``Distributed`` routes an insert), so a row never lands on two shards. A table sharded
by ``rand()`` is filled on the first shard only.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from base.errors import StoreError
from base.sqlfiles import sql
from ingest.cluster import LOCAL_SUFFIX, ClusterSchema, cluster_schema
from ingest.store import STAGE_PREFIX, Stage, Store, StoreTarget, parse_dsn

INSERT_SETTINGS = {"insert_distributed_sync": 1}
# Reads and inserts of a Distributed staging table: the first replica of each shard, the one a fill used.
STAGE_ROUTING = {"load_balancing": "in_order", "prefer_localhost_replica": 0}
_DDL = re.compile(r"\s*(CREATE\s+(OR\s+REPLACE\s+)?(TABLE|VIEW|MATERIALIZED|SETTINGS|ROLE|USER|ROW|QUOTA)|ALTER\s+TABLE|"
                  r"DROP\s+(TABLE|VIEW)|TRUNCATE|OPTIMIZE|GRANT|REVOKE|EXCHANGE\s+TABLES)\b|"
                  r"\s*INSERT\s+INTO\s+\S+\s+SELECT\s", re.I)      # no column list: a table copied or filled from another
_IDENT = r"`[^`]+`|[A-Za-z_][A-Za-z0-9_]*"


@dataclass(frozen=True)
class Shard:
    num: int
    host: str
    port: int
    slots: tuple[int, int]          # [first, last + 1) of sharding key % total weight that land here

    def __str__(self) -> str:
        return f"shard {self.num} ({self.host}:{self.port})"


def shards_from(rows: Sequence[tuple], port: int) -> list[Shard]:
    """``Shard``s from (shard_num, weight, host) rows, with their slices of the weights."""
    out, first = [], 0
    for num, weight, host in rows:
        out.append(Shard(int(num), str(host), port, (first, first + int(weight))))
        first += int(weight)
    return out


class ClusterStore(Store):
    """A ``Store`` on cluster ``cluster`` through ``node`` (a store on any node of it)."""

    def __init__(self, node: Store, cluster: str, shards: list[Shard], open_shard: Callable[[Shard], Store],
                 schema: ClusterSchema | None = None):
        super().__init__(node.target, node.client)
        if not shards:
            raise StoreError(f"store.cluster = {cluster!r}: the cluster has no shards in system.clusters of {node.target}")
        self.node, self.cluster, self.shards, self._open_shard = node, cluster, shards, open_shard
        self.schema = schema or cluster_schema(cluster, node.target.database, include_roles=False)[0]
        self.total_weight = shards[-1].slots[1]
        self._handles: dict[int, Store] = {}

    def __repr__(self) -> str:
        return f"ClusterStore({self.cluster}, {len(self.shards)} shards, via {self.node!r})"

    # ---- names -----------------------------------------------------------------------
    def sharded(self, table: str):
        """The ``ShardedTable`` of ``table`` (None: not sharded — a view, or replicated to every node)."""
        return self.schema.tables.get(table.split(".")[-1].strip("`"))

    def local_name(self, table: str) -> str:
        return f"{table}{LOCAL_SUFFIX}" if self.sharded(table) else table

    def localize(self, select: str) -> str:
        """``select`` reading each table sharded by host from this shard's ``_local`` copy."""
        db = self.target.database

        def swap(m):
            name = m.group(2).split(".")[-1].strip("`")
            table = self.schema.tables.get(name)
            return f"{m.group(1)}{db}.{name}{LOCAL_SUFFIX}" if table and table.by_host else m.group(0)
        return re.sub(rf"(\b(?:FROM|JOIN)\s+)((?:(?:{_IDENT})\.)?(?:{_IDENT}))(?![\w(`.])", swap, select, flags=re.I)

    def shard_filter(self, shard: Shard, key: str) -> str:
        """SQL true for the rows ``Distributed`` sends to ``shard``."""
        if len(self.shards) == 1:
            return "1"
        lo, hi = shard.slots
        return f"({key}) % {self.total_weight} >= {lo} AND ({key}) % {self.total_weight} < {hi}"

    def on_shard(self, shard: Shard) -> Store:
        """A store on ``shard``'s first replica (opened once per ``ClusterStore``)."""
        if shard.num not in self._handles:
            self._handles[shard.num] = self._open_shard(shard)
        return self._handles[shard.num]

    # ---- the Store API ---------------------------------------------------------------
    def statements(self, text: str) -> list[str]:
        """What ``command(text)`` runs: DDL made cluster-wide by ``ClusterSchema``, the rest as is."""
        return self.schema.rewrite(text) if _DDL.match(text) else [text]

    def command(self, sql: str, parameters: dict | None = None, settings: dict | None = None):
        result = None
        for statement in self.statements(sql):
            result = self.node.command(statement, parameters, settings)
        return result

    def rows(self, sql: str, parameters: dict | None = None) -> list[tuple]:
        if STAGE_PREFIX in sql and "SETTINGS" not in sql.upper():
            sql = f"{sql.rstrip().rstrip(';')}\nSETTINGS " + ", ".join(f"{k} = {v!r}" for k, v in STAGE_ROUTING.items())
        return self.node.rows(sql, parameters)

    def query_df(self, sql: str, parameters: dict | None = None):
        return self.node.query_df(sql, parameters)

    def column_types(self, table: str, *, defaulted: bool = True) -> dict[str, str]:
        return self.node.column_types(table, defaulted=defaulted)

    def insert(self, table: str, rows, columns: Sequence[str] | None = None, *, token: str | None = None,
               settings: dict | None = None, types: Sequence[str] | None = None) -> int:
        extra = STAGE_ROUTING if table.startswith(STAGE_PREFIX) else {}
        return self.node.insert(table, rows, columns, token=token, settings={**INSERT_SETTINGS, **extra, **(settings or {})},
                                types=types)

    def insert_bytes(self, table: str, data: bytes, columns: Sequence[str], fmt: str, settings: dict | None = None) -> None:
        extra = STAGE_ROUTING if table.startswith(STAGE_PREFIX) else {}
        self.node.insert_bytes(table, data, columns, fmt, {**INSERT_SETTINGS, **extra, **(settings or {})})

    def partitions(self, table: str) -> list[str]:
        """Partitions ``table`` holds rows in on any shard."""
        bare = table.split(".")[-1].strip("`")
        if not (self.sharded(bare) or bare.startswith(STAGE_PREFIX)):
            return self.node.partitions(bare)
        local = bare if bare.endswith(LOCAL_SUFFIX) else f"{bare}{LOCAL_SUFFIX}"
        return sorted({pid for shard in self.shards for pid in self.on_shard(shard).partitions(local)})

    def note_stage(self, name: str, like: str) -> None:
        self.node.note_stage(name, like)
        for shard in self.shards:
            self.on_shard(shard).note_stage(name, like)

    def drop_stale_stages(self, older_than_s: int = 86_400) -> list[str]:
        names = [r[0] for r in self.node.rows(sql("store/stale_stages"), {"prefix": STAGE_PREFIX, "older_than_s": older_than_s})]
        for name in names:
            self.node.command(f"DROP TABLE IF EXISTS {self.target.database}.`{name}` {self.schema.on()} SYNC")
        return names

    @contextmanager
    def sharing_cores(self, handles: int) -> Iterator[None]:
        yield                             # the servers' queries keep their own settings

    def clone(self) -> ClusterStore:
        node = self.node.clone()
        if node is self.node:             # a plan (ingest/plan.py): one handle, its statements in order
            return self
        return ClusterStore(node, self.cluster, self.shards, self._open_shard, self.schema)

    def read_only(self) -> Store:
        return self.node.read_only()

    def close(self) -> None:
        self.close_helpers()
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()
        self.node.close()


class ClusterStage(Stage):
    """A staging copy on every shard (see the module docstring): ``_stage_…_local`` per replica,
    ``_stage_…`` a ``Distributed`` table over them; filled and swapped in per shard."""

    store: ClusterStore

    def __init__(self, store: ClusterStore, like: str, name: str):
        super().__init__(store, like, name)
        self.table = store.sharded(like)
        if self.table is None:
            raise StoreError(f"cannot stage {like}: on a cluster only sharded tables (t_local + Distributed t) are staged")
        db = store.target.database
        self.local = f"{db}.{name}{LOCAL_SUFFIX}"
        self.like_local = f"{db}.{like}{LOCAL_SUFFIX}"

    def _bare_local(self) -> str:
        return self.local.split(".")[-1]

    def create(self, engine: str = "") -> None:
        s, db, on = self.store, self.store.target.database, self.store.schema.on()
        s.node.command(f"CREATE TABLE {self.local} {on} AS {self.like_local}\n{engine or 'ENGINE = ' + self.table.local_engine}")
        s.node.command(f"CREATE TABLE {db}.{self.name} {on} AS {self.local}\n"
                       f"ENGINE = Distributed({s.cluster}, {db}, {self._bare_local()}, {self.table.sharding_key})")

    def drop(self) -> None:
        s, on = self.store, self.store.schema.on()
        s.node.command(f"DROP TABLE IF EXISTS {s.target.database}.{self.name} {on} SYNC")
        s.node.command(f"DROP TABLE IF EXISTS {self.local} {on} SYNC")

    def _fill_shards(self) -> list[Shard]:
        return self.store.shards[:1] if self.table.sharding_key == "rand()" else self.store.shards

    def fill(self, select: str, parameters: dict | None = None, settings: dict | None = None,
             columns: Sequence[str] | None = None) -> None:
        """Each shard inserts into its copy the rows of ``select`` that are its own (reading its own
        ``_local`` rows of the tables sharded by host when this table is one of them)."""
        cols = ", ".join(f"`{c}`" for c in (columns or self.store.columns(self.like, defaulted=False)))
        text = self.store.localize(select) if self.table.by_host else select
        for shard in self._fill_shards():
            where = "1" if self.table.sharding_key == "rand()" else self.store.shard_filter(shard, self.table.sharding_key)
            self.store.on_shard(shard).command(
                f"INSERT INTO {self.local} ({cols}) SELECT {cols} FROM ({text}) WHERE {where}",
                parameters=parameters, settings=settings)

    def fill_bytes(self, data: bytes, columns: Sequence[str], fmt: str, settings: dict | None = None) -> None:
        self.store.insert_bytes(self.name, data, columns, fmt, settings)     # Distributed: routed by the key

    def count(self) -> int:
        return sum(int(self.store.on_shard(s).scalar(f"SELECT count() FROM {self.local}") or 0) for s in self.store.shards)

    def attach_to(self, table: str | None = None, *, unless_stored: Sequence[str] = (),
                  progress: Callable[[int, int], None] | None = None) -> None:
        target = f"{self.store.target.database}.{self.store.local_name(table or self.like)}"
        keys = ", ".join(f"`{k}`" for k in unless_stored)
        work = [(shard, pid) for shard in self.store.shards
                for pid in self.store.on_shard(shard).stage_partitions(self._bare_local())]
        for done, (shard, pid) in enumerate(work, 1):
            handle = self.store.on_shard(shard)
            if unless_stored:
                total, stored = handle.rows(
                    f"SELECT count(), countIf(({keys}) IN (SELECT {keys} FROM {target} WHERE _partition_id = {{p:String}})) "
                    f"FROM {self.local} WHERE _partition_id = {{p:String}}", {"p": pid})[0]
                if total == stored:
                    pid = ""
            if pid:
                handle.command(f"ALTER TABLE {target} ATTACH PARTITION ID '{pid}' FROM {self.local}")
            if progress:
                progress(done, len(work))

    def drop_repeats(self, key: Sequence[str]) -> int:
        keys = ", ".join(f"`{k}`" for k in key)
        dropped = 0
        for shard in self.store.shards:
            handle = self.store.on_shard(shard)
            total, unique = handle.rows(f"SELECT count(), uniqExact({keys}) FROM {self.local}")[0]
            if total != unique:
                handle.command(f"OPTIMIZE TABLE {self.local} FINAL DEDUPLICATE BY {keys}")
            dropped += int(total - unique)
        return dropped

    def replace_in(self, partition_ids: Sequence[str] = ()) -> None:
        for shard in self.store.shards:
            self._replace_on(shard, partition_ids)

    def _replace_on(self, shard: Shard, partition_ids: Sequence[str]) -> None:
        handle = self.store.on_shard(shard)
        held = handle.stage_partitions(self._bare_local(), partition_ids)
        for pid in held:
            handle.command(f"ALTER TABLE {self.like_local} REPLACE PARTITION ID '{pid}' FROM {self.local}")
        for pid in sorted(set(partition_ids) - set(held)):
            if not re.fullmatch(r"[A-Za-z0-9_-]+", pid):
                raise StoreError(f"unexpected partition id {pid!r} for table {self.like}")
            handle.command(f"ALTER TABLE {self.like_local} DROP PARTITION ID '{pid}'")

    def exchange(self) -> None:
        """On each shard, every partition of ``t_local`` becomes what the copy holds (EXCHANGE TABLES
        would swap a replicated table for an unreplicated one): atomic per partition, not per table."""
        for shard in self.store.shards:
            current = self.store.on_shard(shard).partitions(self.like_local.split(".")[-1])
            self._replace_on(shard, current)


ClusterStore.stage_type = ClusterStage


def connect_cluster(dsn: str, cluster: str, http_port: int = 0, *, create_database: bool = True) -> ClusterStore:
    """Open the cluster ``cluster`` through the node in ``dsn`` (a server DSN)."""
    from ingest.store import _http_client

    target = parse_dsn(dsn)
    if target.embedded:
        raise StoreError(f"store.cluster = {cluster!r} needs a ClickHouse server DSN (http(s)://user@any-node:8123/db); "
                         f"{target} is an embedded store, which is one node")
    schema = ClusterSchema(cluster, target.database)
    client = _http_client(target, use_database=False)
    if create_database:
        client.command(f"CREATE DATABASE IF NOT EXISTS {target.database} {schema.on()}")
    client.database = target.database
    node = Store(target, client)
    rows = node.rows(sql("store/cluster_shards"), {"c": cluster})
    if not rows:
        raise StoreError(f"store.cluster = {cluster!r}: {target} lists no such cluster in system.clusters "
                         "(check remote_servers on that node)")
    shards = shards_from(rows, http_port or target.port)

    def open_shard(shard: Shard) -> Store:
        where: StoreTarget = replace(target, host=shard.host, port=shard.port)
        return Store(where, _http_client(where))
    return ClusterStore(node, cluster, shards, open_shard)


def plan_cluster(store: ClusterStore | Store, cluster: str = "", shards: list[Shard] | None = None):
    """A ``ClusterStore`` that plans: its node and shard handles are ``PlanStore``s sharing one
    ``Plan``. From a live ``ClusterStore``, reads go to its node and shards; from a single-node
    ``store`` (no cluster to read, as in tests), reads go to that store and ``shards`` are given."""
    from ingest.plan import Plan, PlanStore

    plan = Plan()
    if isinstance(store, ClusterStore):
        node = PlanStore(store.node, where=f"node {store.target.host}:{store.target.port}", plan=plan)
        return ClusterStore(node, store.cluster, store.shards,
                            lambda s: PlanStore(store.on_shard(s), where=str(s), plan=plan), store.schema)
    db = store.target.database
    node = PlanStore(store, where="node", plan=plan)
    return ClusterStore(node, cluster, shards or [], lambda s: PlanStore(store, where=str(s), plan=plan, delocalize=db))
