"""The cluster variant of the schema, generated from the same ``sql/`` migrations and views.

``cluster_schema(cluster, database)`` reads every numbered migration and view (plus the
``schema_migrations`` table and the read-only role) and rewrites each statement for a
ClickHouse cluster of shards × replicas:

* a ``*MergeTree`` table ``t`` becomes ``t_local`` — ``Replicated*MergeTree`` with the
  replication path ``/clickhouse/tables/{shard}/{database}/{table}`` and ``'{replica}'``
  (server macros) — plus ``t``, a ``Distributed`` table over every shard's ``t_local``. Reads
  and writes use ``t``, so every query, view and loader keeps its table names;
* the sharding key is ``cityHash64(host)`` where the table has a ``host`` column: all rows of a
  host (its samples, processes, rollups, idle windows) live on one shard, so an agent's batch
  lands whole on one shard and its ``insert_deduplication_token`` still deduplicates a replay.
  Other tables are sharded by a hash of the key that groups rows which must meet:
  ``billing_line_items`` by (ProviderName, BillingAccountId) — the unit a bill load replaces —
  and every other table by its ``ORDER BY`` key, which is what ``Replacing*`` versions share;
* ``non_replicated_deduplication_window`` becomes ``replicated_deduplication_window``;
* views get ``ON CLUSTER`` and keep reading the ``Distributed`` names; a materialized view is
  made per shard (``TO t_local``, reading the sources' ``_local`` tables, so it fires where the
  rows land) — with an inner engine it is replicated and gets its own ``Distributed`` table;
* ``ALTER TABLE`` of columns is applied to both ``t_local`` and ``t``; other alterations
  (TTL, settings, indexes, partitions) to ``t_local`` only; ``DROP`` to both;
* a table rebuilt under a new name (``INSERT INTO t SELECT * FROM u``, ``EXCHANGE TABLES``)
  copies through the ``Distributed`` tables and exchanges the ``_local`` ones (a replica keeps
  the Keeper path it was created with, under the name it now has); a table filled from another
  (``INSERT INTO t SELECT … FROM u … GROUP BY …``) reads and writes the ``Distributed`` ones too;
* roles, profiles and grants get ``ON CLUSTER`` and the chosen database;
* the alert engine's state (``REPLICATED_EVERYWHERE``: alert state, events, the notification
  outbox, delivery attempts, silences) is not sharded: it is one ``Replicated*MergeTree`` table
  under its plain name whose replicas are *every* node (Keeper path without ``{shard}``), so the
  platform reads and writes it on the node it is connected to with no fan-out, a write is
  visible to the next read on that node (the engine never sends a notification twice because it
  reads what it just wrote), and any node that survives has all of it.

A statement this module does not know how to make cluster-wide raises ``SchemaError``
instead of being passed through or left out. Nothing here talks to ClickHouse.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from base.errors import SchemaError
from base.sqlfiles import SQL_DIR, migration_files, split_statements, view_files

MERGE_TREE_ENGINES = {
    "MergeTree", "ReplacingMergeTree", "SummingMergeTree", "AggregatingMergeTree", "CollapsingMergeTree",
    "VersionedCollapsingMergeTree", "GraphiteMergeTree", "CoalescingMergeTree",
}
REPLICATION_PATH = "/clickhouse/tables/{shard}/{database}/{table}"
LOCAL_SUFFIX = "_local"
# Tables without a host column whose rows must meet on one shard by something other than their
# ORDER BY key: a bill load replaces whole (month, provider, account) partitions.
SHARDING_OVERRIDES = {"billing_line_items": "cityHash64(ProviderName, BillingAccountId)"}
# Small tables the alert engine reads back right after writing: replicated to every node, not sharded.
REPLICATED_EVERYWHERE = {"alert_state", "alert_events", "alert_notifications", "alert_delivery_attempts",
                         "alert_silences"}
EVERYWHERE_PATH = "/clickhouse/tables/all/{database}/{table}"
EVERYWHERE_REPLICA = "{shard}_{replica}"   # unique across the whole cluster, not only within a shard
HOST_KEY = "cityHash64(host)"
COLUMN_ALTERS = ("ADD COLUMN", "DROP COLUMN", "MODIFY COLUMN", "RENAME COLUMN", "COMMENT COLUMN", "CLEAR COLUMN")
_IDENT = r"`[^`]+`|[A-Za-z_][A-Za-z0-9_]*"
_NAME = rf"(?:(?:{_IDENT})\.)?(?:{_IDENT})"


@dataclass
class ShardedTable:
    name: str
    engine: str
    sharding_key: str
    local_engine: str = ""       # the single-node ENGINE clause (a staging copy of t_local uses it)

    @property
    def by_host(self) -> bool:
        """Every row of a host lives on one shard: a shard can derive this table from its own rows."""
        return self.sharding_key == HOST_KEY


@dataclass
class ClusterSchema:
    """Rewrites statements in migration order; remembers which tables it sharded."""

    cluster: str
    database: str = "gpuledger"
    tables: dict[str, ShardedTable] = field(default_factory=dict)   # name -> sharded table
    views: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)                  # non-MergeTree tables
    everywhere: list[str] = field(default_factory=list)              # replicated to every node

    def __post_init__(self):
        for what, value in (("cluster", self.cluster), ("database", self.database)):
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value or ""):
                raise SchemaError(f"{what} name {value!r} must be letters, digits and _ (not starting with a digit)")

    # ---- names ---------------------------------------------------------------------
    def on(self) -> str:
        return f"ON CLUSTER {self.cluster}"

    def qualified(self, name: str) -> str:
        return f"{self.database}.{_bare(name)}"

    def local(self, name: str) -> str:
        return f"{self.database}.{_bare(name)}{LOCAL_SUFFIX}"

    # ---- one statement -------------------------------------------------------------
    def rewrite(self, statement: str) -> list[str]:
        """The cluster statements for one single-node statement (in the order to run them)."""
        text = statement.strip().rstrip(";").strip()
        head = " ".join(text.split()[:4]).upper()
        if re.match(r"CREATE (OR REPLACE )?TABLE", head):
            return self._create_table(text)
        if re.match(r"CREATE MATERIALIZED VIEW", head):
            return self._create_materialized_view(text)
        if re.match(r"CREATE (OR REPLACE )?VIEW", head):
            return [self._create_view(text)]
        if head.startswith("ALTER TABLE"):
            return self._alter(text)
        if re.match(r"DROP (TABLE|VIEW)", head):
            return self._drop(text)
        if re.match(r"(TRUNCATE|OPTIMIZE) TABLE", head):
            return [self._local_only(text)]
        if head.startswith("INSERT INTO"):
            return [self._copy(text)]
        if head.startswith("EXCHANGE TABLES"):
            return [self._exchange(text)]
        if re.match(r"CREATE (SETTINGS PROFILE|ROLE|USER|ROW POLICY|QUOTA)", head):
            return [self._access(text)]
        if head.startswith("GRANT") or head.startswith("REVOKE"):
            return [self._grant(text)]
        raise SchemaError(
            f"don't know how to make this statement cluster-wide: {_first_line(text)!r}. Write migrations as "
            "CREATE TABLE / VIEW / MATERIALIZED VIEW, ALTER TABLE, DROP, INSERT INTO t SELECT … FROM u or "
            "EXCHANGE TABLES, or extend ingest/cluster.py")

    def _create_table(self, text: str) -> list[str]:
        m = re.match(rf"CREATE\s+(OR\s+REPLACE\s+)?TABLE\s+(IF\s+NOT\s+EXISTS\s+)?({_NAME})\s*", text, re.I | re.S)
        name = _bare(m.group(3))
        rest = text[m.end():]
        if not rest.startswith("("):
            raise SchemaError(f"table {name}: expected a column list after the name (CREATE TABLE ... AS is not supported)")
        close = _matching(rest, 0)
        columns, tail = rest[:close + 1], rest[close + 1:].strip()
        em = re.match(r"ENGINE\s*=\s*(\w+)\s*", tail, re.I)
        if not em:
            raise SchemaError(f"table {name}: no ENGINE clause")
        engine, after = em.group(1), tail[em.end():]
        args = ""
        if after.startswith("("):
            end = _matching(after, 0)
            args, after = after[1:end].strip(), after[end + 1:]
        create = "CREATE OR REPLACE TABLE" if m.group(1) else "CREATE TABLE IF NOT EXISTS"
        if engine.startswith("Replicated") or engine not in MERGE_TREE_ENGINES:
            self.others.append(name)
            return [f"{create} {self.qualified(name)} {self.on()}\n{columns}\nENGINE = {engine}"
                    f"{f'({args})' if args else ''}{_tail(after)}"]
        if name in REPLICATED_EVERYWHERE:
            everywhere_args = ", ".join([f"'{EVERYWHERE_PATH}'", f"'{EVERYWHERE_REPLICA}'"] + ([args] if args else []))
            if name not in self.everywhere:
                self.everywhere.append(name)
            return [f"{create} {self.qualified(name)} {self.on()}\n{columns}\n"
                    f"ENGINE = Replicated{engine}({everywhere_args}){_tail(after)}"]
        key = self._sharding_key(name, columns, after)
        replicated_args = ", ".join([f"'{REPLICATION_PATH}'", "'{replica}'"] + ([args] if args else []))
        self.tables[name] = ShardedTable(name, engine, key, f"{engine}{f'({args})' if args else ''}{_tail(after, False)}")
        return [
            f"{create} {self.local(name)} {self.on()}\n{columns}\n"
            f"ENGINE = Replicated{engine}({replicated_args}){_tail(after)}",
            f"{create} {self.qualified(name)} {self.on()} AS {self.local(name)}\n"
            f"ENGINE = Distributed({self.cluster}, {self.database}, {_bare(name)}{LOCAL_SUFFIX}, {key})",
        ]

    def _sharding_key(self, name: str, columns: str, tail: str) -> str:
        if name in SHARDING_OVERRIDES:
            return SHARDING_OVERRIDES[name]
        if "host" in column_names(columns):
            return HOST_KEY
        order = _clause(tail, "ORDER BY")
        if not order or order.strip("() ") in ("", "tuple"):
            return "rand()"
        inner = order[1:-1] if order.startswith("(") and _matching(order, 0) == len(order) - 1 else order
        return f"cityHash64({inner})"

    def _create_view(self, text: str) -> str:
        m = re.match(rf"CREATE\s+(OR\s+REPLACE\s+)?VIEW\s+(IF\s+NOT\s+EXISTS\s+)?({_NAME})\s+AS\b", text, re.I | re.S)
        if not m:
            raise SchemaError(f"cannot read the view definition: {_first_line(text)!r}")
        name = _bare(m.group(3))
        if name not in self.views:              # a later migration may redefine a view (OR REPLACE)
            self.views.append(name)
        create = "CREATE OR REPLACE VIEW" if m.group(1) else "CREATE VIEW IF NOT EXISTS"
        return f"{create} {self.qualified(name)} {self.on()} AS{text[m.end():]}"

    def _create_materialized_view(self, text: str) -> list[str]:
        m = re.match(rf"CREATE\s+MATERIALIZED\s+VIEW\s+(IF\s+NOT\s+EXISTS\s+)?({_NAME})\s*", text, re.I | re.S)
        name, rest = _bare(m.group(2)), text[m.end():]
        split = re.search(r"\bAS\s+(SELECT|WITH)\b", rest, re.I)
        if not split:
            raise SchemaError(f"materialized view {name}: expected AS SELECT")
        head, select = rest[:split.start()].strip(), self._sources_to_local(rest[split.start() + 2:].strip())
        to = re.match(rf"TO\s+({_NAME})\s*(.*)$", head, re.I | re.S)
        if to:
            target = _bare(to.group(1))
            if target not in self.tables:
                raise SchemaError(f"materialized view {name} writes to {target}, which is not a sharded table "
                                         "created earlier in the migrations")
            self.views.append(name)
            return [f"CREATE MATERIALIZED VIEW IF NOT EXISTS {self.qualified(name)} {self.on()} TO {self.local(target)}"
                    f"{' ' + to.group(2) if to.group(2) else ''}\nAS {select}"]
        em = re.match(r"ENGINE\s*=\s*(\w+)\s*", head, re.I)
        if not em or em.group(1) not in MERGE_TREE_ENGINES:
            raise SchemaError(f"materialized view {name}: use TO <table> or a MergeTree-family ENGINE")
        engine, after = em.group(1), head[em.end():]
        args = ""
        if after.startswith("("):
            end = _matching(after, 0)
            args, after = after[1:end].strip(), after[end + 1:]
        populate = bool(re.search(r"\bPOPULATE\b", after, re.I))
        after = re.sub(r"\bPOPULATE\b", "", after, flags=re.I).strip()
        key = self._sharding_key(name, "", after)
        replicated_args = ", ".join([f"'{REPLICATION_PATH}'", "'{replica}'"] + ([args] if args else []))
        self.tables[name] = ShardedTable(name, engine, key)
        return [
            f"CREATE MATERIALIZED VIEW IF NOT EXISTS {self.local(name)} {self.on()}\n"
            f"ENGINE = Replicated{engine}({replicated_args}){_tail(' ' + after if after else '')}"
            f"{' POPULATE' if populate else ''}\nAS {select}",
            f"CREATE TABLE IF NOT EXISTS {self.qualified(name)} {self.on()} AS {self.local(name)}\n"
            f"ENGINE = Distributed({self.cluster}, {self.database}, {name}{LOCAL_SUFFIX}, {key})",
        ]

    def _sources_to_local(self, select: str) -> str:
        """Point FROM / JOIN at the shard-local tables (a materialized view fires per shard)."""
        def swap(m):
            name = _bare(m.group(2))
            return f"{m.group(1)}{self.local(name)}" if name in self.tables else m.group(0)
        return re.sub(rf"(\b(?:FROM|JOIN)\s+)({_NAME})", swap, select, flags=re.I)

    def _alter(self, text: str) -> list[str]:
        m = re.match(rf"ALTER\s+TABLE\s+({_NAME})\s+(.*)$", text, re.I | re.S)
        name, ops = _bare(m.group(1)), m.group(2).strip()
        if name not in self.tables:
            return [f"ALTER TABLE {self.qualified(name)} {self.on()} {ops}"]
        kinds = [any(op.strip().upper().startswith(k) for k in COLUMN_ALTERS) for op in _top_level_split(ops)]
        local = f"ALTER TABLE {self.local(name)} {self.on()} {ops}"
        if all(kinds):
            return [local, f"ALTER TABLE {self.qualified(name)} {self.on()} {ops}"]
        if any(kinds):
            raise SchemaError(f"ALTER TABLE {name} mixes column changes with other changes; split it in two "
                                     "statements (columns go to both the local and the Distributed table)")
        setting = re.fullmatch(r"MODIFY\s+SETTING\s+(.+)", ops, re.I | re.S)
        if setting:                      # staging copies of t_local are created with these settings too
            table = self.tables[name]
            joiner = ", " if re.search(r"\bSETTINGS\b", table.local_engine, re.I) else "\nSETTINGS "
            table.local_engine += joiner + setting.group(1).strip()
        return [local]

    def _drop(self, text: str) -> list[str]:
        m = re.match(rf"DROP\s+(TABLE|VIEW)\s+(IF\s+EXISTS\s+)?({_NAME})\s*(.*)$", text, re.I | re.S)
        kind, name, tail = m.group(1).upper(), _bare(m.group(3)), m.group(4).strip()
        out = [f"DROP {kind} IF EXISTS {self.qualified(name)} {self.on()}{' ' + tail if tail else ''}"]
        # a table this schema has not created (a rebuild's copy left by a migration stopped half-way)
        # may still be sharded
        if name in self.tables or (kind == "TABLE" and m.group(2)):
            out.append(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} IF EXISTS {self.local(name)} {self.on()}"
                       f"{' ' + tail if tail else ''}")
            self.tables.pop(name, None)
        return out

    def _copy(self, text: str) -> str:
        """``INSERT INTO t SELECT … FROM u [WHERE …] [GROUP BY …]`` (a table rebuilt under a new
        name, or filled from another): one table read through its Distributed table (an aggregation
        is merged across shards), each row written to its shard, all before the statement returns."""
        m = re.fullmatch(rf"INSERT\s+INTO\s+({_NAME})\s+(SELECT\s.+?)\s+FROM\s+({_NAME})((?:\s+(?:WHERE|GROUP\s+BY)\s.*)?)",
                         text, re.I | re.S)
        if not m or re.search(r"\b(FROM|JOIN|SETTINGS)\b", m.group(2) + m.group(4), re.I):
            raise SchemaError(f"don't know how to make this INSERT cluster-wide: {_first_line(text)!r} "
                              "(only INSERT INTO t SELECT … FROM u, reading one table, is)")
        return (f"INSERT INTO {self.qualified(m.group(1))} {m.group(2)} FROM {self.qualified(m.group(3))}{m.group(4)} "
                "SETTINGS insert_distributed_sync = 1")

    def _exchange(self, text: str) -> str:
        """``EXCHANGE TABLES a AND b``: of sharded tables, their ``_local`` tables (each Distributed
        table reads the ``_local`` of its own name, so it now reads the other's rows), and each name
        takes the other's engine for its staging copies."""
        m = re.fullmatch(rf"EXCHANGE\s+TABLES\s+({_NAME})\s+AND\s+({_NAME})", text, re.I | re.S)
        if not m:
            raise SchemaError(f"cannot read {_first_line(text)!r}: expected EXCHANGE TABLES a AND b")
        a, b = _bare(m.group(1)), _bare(m.group(2))
        if (a in self.tables) != (b in self.tables):
            raise SchemaError(f"EXCHANGE TABLES {a} AND {b}: one is sharded and the other not")
        if a not in self.tables:
            return f"EXCHANGE TABLES {self.qualified(a)} AND {self.qualified(b)} {self.on()}"
        self.tables[a], self.tables[b] = replace(self.tables[b], name=a), replace(self.tables[a], name=b)
        return f"EXCHANGE TABLES {self.local(a)} AND {self.local(b)} {self.on()}"

    def _local_only(self, text: str) -> str:
        m = re.match(rf"(TRUNCATE|OPTIMIZE)\s+TABLE\s+(IF\s+EXISTS\s+)?({_NAME})\s*(.*)$", text, re.I | re.S)
        name = _bare(m.group(3))
        target = self.local(name) if name in self.tables else self.qualified(name)
        return f"{m.group(1).upper()} TABLE {m.group(2) or ''}{target} {self.on()}{' ' + m.group(4) if m.group(4) else ''}"

    def _access(self, text: str) -> str:
        m = re.match(r"(CREATE\s+(?:SETTINGS\s+PROFILE|ROLE|USER|ROW\s+POLICY|QUOTA)\s+(?:(?:IF\s+NOT\s+EXISTS|OR\s+REPLACE)\s+)?"
                     rf"(?:{_IDENT}))", text, re.I | re.S)
        return f"{m.group(1)} {self.on()}{self._database_grants(text[m.end():])}"

    def _grant(self, text: str) -> str:
        m = re.match(r"(GRANT|REVOKE)\s+", text, re.I)
        return f"{m.group(1).upper()} {self.on()} {self._database_grants(text[m.end():])}"

    def _database_grants(self, text: str) -> str:
        return re.sub(r"\bgpuledger\.\*", f"{self.database}.*", text)


def cluster_schema(cluster: str, database: str = "gpuledger", sql_dir: Path = SQL_DIR,
                   include_roles: bool = True) -> tuple[ClusterSchema, list[tuple[str, list[str]]]]:
    """Every migration's statements, rewritten: ``(schema, [(source name, statements), ...])``."""
    from ingest.migrations import MIGRATIONS_TABLE

    schema = ClusterSchema(cluster, database)
    out = [("database", [f"CREATE DATABASE IF NOT EXISTS {database} {schema.on()}"]),
           ("ingest/migrations.py (schema_migrations)", schema.rewrite(MIGRATIONS_TABLE))]
    for _version, _name, path in migration_files(sql_dir / "migrations"):
        out.append((f"migrations/{path.name}", [s for stmt in split_statements(path.read_text()) for s in schema.rewrite(stmt)]))
    out.append(("views/", [s for _name, stmt in view_files(sql_dir / "views") for s in schema.rewrite(stmt)]))
    roles = sql_dir / "roles" / "readonly.sql"
    if include_roles and roles.exists():
        out.append(("roles/readonly.sql", [s for stmt in split_statements(roles.read_text()) for s in schema.rewrite(stmt)]))
    return schema, out


def single_node_schema(database: str = "gpuledger", sql_dir: Path = SQL_DIR) -> list[tuple[str, list[str]]]:
    """The migrations as they are applied to one server or an embedded store."""
    from ingest.migrations import MIGRATIONS_TABLE

    out = [("database", [f"CREATE DATABASE IF NOT EXISTS {database}"]),
           ("ingest/migrations.py (schema_migrations)", [MIGRATIONS_TABLE.strip()])]
    for _version, _name, path in migration_files(sql_dir / "migrations"):
        out.append((f"migrations/{path.name}", split_statements(path.read_text())))
    out.append(("views/", [stmt for _name, stmt in view_files(sql_dir / "views")]))
    return out


def render(sections: list[tuple[str, list[str]]], header: str = "") -> str:
    """SQL text for ``clickhouse-client --multiquery``: each section under a comment."""
    lines = [f"-- {line}" if line else "--" for line in header.splitlines()] + ([""] if header else [])
    for source, statements in sections:
        lines.append(f"-- from {source}")
        lines += ["\n".join(line.rstrip() for line in s.strip().splitlines()) + ";\n" for s in statements]
    return "\n".join(lines)


def column_names(columns: str) -> list[str]:
    """Column names of a ``( ... )`` column list (indexes, constraints and projections skipped)."""
    body = columns.strip()[1:-1]
    names = []
    for item in _top_level_split(body):
        word = item.split(None, 1)[0] if item.split() else ""
        if word.upper() in ("INDEX", "CONSTRAINT", "PROJECTION", "PRIMARY"):
            continue
        names.append(word.strip("`"))
    return [n for n in names if n]


def _tail(tail: str, replicated: bool = True) -> str:
    if replicated:
        tail = re.sub(r"\bnon_replicated_deduplication_window\b", "replicated_deduplication_window", tail)
    return "\n" + tail.strip() if tail.strip() else ""


def _clause(tail: str, keyword: str) -> str:
    m = re.search(rf"\b{keyword}\s+", tail, re.I)
    if not m:
        return ""
    rest = tail[m.end():]
    if rest.startswith("("):
        return rest[:_matching(rest, 0) + 1]
    return re.match(r"[^\s]+", rest).group(0)


def _bare(name: str) -> str:
    return name.split(".")[-1].strip("`")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:120]


def _matching(text: str, start: int) -> int:
    """Index of the parenthesis closing the one at ``start`` (quotes and comments respected)."""
    depth, i, quote = 0, start, None
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise SchemaError(f"unbalanced parentheses in {_first_line(text)!r}")


def _top_level_split(text: str) -> list[str]:
    """Split on commas outside parentheses, quotes and comments."""
    parts, depth, quote, current, i = [], 0, None, [], 0
    while i < len(text):
        ch = text[i]
        if quote:
            current.append(ch)
            if ch == "\\" and i + 1 < len(text):
                current.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
            current.append(ch)
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif ch in "([":
            depth += 1
            current.append(ch)
        elif ch in ")]":
            depth -= 1
            current.append(ch)
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current).strip())
    return [p for p in parts if p]
