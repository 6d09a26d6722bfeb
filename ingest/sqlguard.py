"""The one policy for SQL that people type: what a reader or an admin may run against the store.

    canonical = check_query(store, sql, READER)     # or ADMIN; raises QueryRefused
    check_reader_query(store, sql)                  # the same, for READER

``store`` is any connected ``Store`` (it is used to parse, never to run ``sql``); the answer is
the statement as ClickHouse itself formats it (one line, no comments), which is what a reader's
query should then run. ``QueryRefused`` (a ``QueryError``) says in one line what was refused and
why. ``gpuledger query`` uses it today; a ClickHouse-compatible HTTP SQL endpoint with reader and
admin roles is meant to call the same function before it runs anything.

How: ClickHouse's own parser does the reading, so comments, case and quoting change nothing.
``formatQuerySingleLine`` parses the text as a query parameter (so it never runs) and refuses
more than one statement; ``EXPLAIN AST`` of that canonical text gives the tree inspected here.

* READER: one SELECT / WITH / SHOW / DESCRIBE / EXISTS / EXPLAIN statement over the store's own
  database and the catalog tables in ``READER_CATALOG`` (what BI tools read to list tables and
  columns: names and types, no data, no other user's queries); table functions only from ``TABLE_FUNCTIONS`` (numbers, values, ...); no query
  settings (``SETTINGS`` / ``SET`` could lift ``readonly`` or the limits).
* ADMIN (``gpuledger query --write``): the reader's statements plus INSERT, CREATE, ALTER, DROP,
  TRUNCATE, RENAME / EXCHANGE, OPTIMIZE, DELETE, UPDATE, UNDROP on tables; settings allowed.
* Both: never ``INTO OUTFILE`` / ``FROM INFILE``, never a function or engine that reads or writes
  files, URLs or other servers (``FILE_ACCESS``: file, url, s3, remote, mysql, executable, ...),
  never dictionaries (their sources do the same) or a table on a ``disk(...)`` of its own, never
  SYSTEM / ATTACH / KILL / GRANT / BACKUP.
"""
from __future__ import annotations

import re

from base.errors import QueryRefused, first_line

READER, ADMIN = "reader", "admin"

# first keyword of the canonical statement -> roles that may run it
STATEMENTS = {
    **dict.fromkeys(("SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXISTS", "EXPLAIN", "("), (READER, ADMIN)),
    **dict.fromkeys(("INSERT", "CREATE", "ALTER", "DROP", "TRUNCATE", "RENAME", "EXCHANGE", "OPTIMIZE",
                     "DELETE", "UPDATE", "UNDROP"), (ADMIN,)),
}
# the parser's node for the whole statement -> roles (checked again on the tree)
TOP_NODES = {
    **dict.fromkeys(("SelectWithUnionQuery", "SelectIntersectExceptQuery", "DescribeQuery", "Explain"), (READER, ADMIN)),
    **dict.fromkeys(("InsertQuery", "CreateQuery", "AlterQuery", "DropQuery", "TruncateQuery", "RenameQuery",
                     "OptimizeQuery", "DeleteQuery", "UpdateQuery", "UndropQuery"), (ADMIN,)),
}
READER_TOP_PREFIXES = ("Show", "Exists")
# table functions that compute rows and touch nothing outside the query
TABLE_FUNCTIONS = frozenset({"numbers", "numbers_mt", "zeros", "zeros_mt", "values", "generate_series",
                             "generateseries", "generaterandom", "null", "view"})
# system tables a reader may read: the catalog BI tools browse (Grafana, Metabase, DBeaver) and the
# settings clickhouse-connect reads on connect; never query_log, processes, users, grants, ...
READER_CATALOG = frozenset(f"system.{t}" for t in (
    "tables", "columns", "databases", "functions", "settings", "data_type_families", "table_engines",
    "table_functions", "formats", "one", "time_zones", "collations", "keywords"))
# functions, table functions and table/database engines that reach files, URLs, programs or servers
FILE_ACCESS = frozenset("""
file filecluster url urlcluster s3 s3cluster gcs oss cosn hdfs hdfscluster azureblobstorage azureblobstoragecluster
remote remotesecure cluster clusterallreplicas mysql postgresql materializedpostgresql materializedmysql jdbc odbc
executable executablepool input iceberg icebergs3 icebergazure iceberghdfs iceberglocal icebergcluster deltalake
deltalakecluster deltalakes3 deltalakeazure hudi hudicluster hive mongodb redis sqlite kafka rabbitmq nats
filelog s3queue azurequeue distributed dictionary dictget fuzzjson fuzzquery loop ytsaurus arrowflight
prometheusquery timeseriesdata
""".split())

_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`|\"(?:[^\"\\]|\\.)*\"|\w+|\S")


def check_reader_query(store, sql: str) -> str:
    """``check_query`` for a reader: the canonical statement, or ``QueryRefused``."""
    return check_query(store, sql, READER)


def check_query(store, sql: str, role: str = READER) -> str:
    """Refuse ``sql`` (``QueryRefused``) unless ``role`` may run it; return it canonical."""
    canonical = _canonical(store, sql)
    tokens = [t.upper() for t in _TOKENS.findall(canonical)]
    first = tokens[0] if tokens else ""
    if role not in STATEMENTS.get(first, ()):
        allowed = sorted(k for k, roles in STATEMENTS.items() if role in roles and k != "(")
        _refuse(f"{first or 'an empty'} statements are not allowed for {_who(role)} (allowed: {', '.join(allowed)})")
    for a, b in zip(tokens, tokens[1:]):
        if (a, b) in (("INTO", "OUTFILE"), ("FROM", "INFILE")):
            _refuse(f"{a} {b} reads or writes a file on the machine that runs the store; "
                    "print the result (--format csv) and redirect it instead")
        if (a, b) == ("DISK", "("):      # a table setting, not a function node in the tree
            _refuse("disk(...) puts a table's data in any directory; use the store's own disks")
    nodes = _tree(store, canonical)
    top = nodes[0][1] if nodes else ""
    if role not in TOP_NODES.get(top, ()) and not (top.startswith(READER_TOP_PREFIXES)):
        _refuse(f"a {top or 'statement'} is not allowed for {_who(role)}")
    for kind, name, parent in ((n[1], n[2], n[3]) for n in nodes):
        low = name.lower()
        if kind.startswith("Function") and low in FILE_ACCESS:
            _refuse(f"{name}() reads or writes files, URLs, programs or other servers")
        if kind == "Function" and parent in ("TableExpression", "CreateQuery") and low not in TABLE_FUNCTIONS:
            _refuse(f"table function {name}() is not allowed (allowed: {', '.join(sorted(TABLE_FUNCTIONS))})")
        if kind == "Dictionary":
            _refuse("dictionaries are not allowed (their sources read files, URLs or other servers)")
        if role == READER and kind == "Set":
            _refuse("query settings (SETTINGS / SET) are not allowed for a reader: they could lift "
                    "readonly or the time and memory limits")
        if role == READER and kind == "TableIdentifier" and "." in name and name.split(".")[0] != store.target.database \
                and name.lower() not in READER_CATALOG:
            _refuse(f"{name} is outside the store's database {store.target.database}; "
                    "a reader reads only its tables and views")
    return canonical


def _canonical(store, sql: str) -> str:
    try:
        return store.client.query("SELECT formatQuerySingleLine({q:String})", parameters={"q": sql}).result_rows[0][0]
    except Exception as exc:
        text = str(exc)
        if "Multi-statements" in text:
            _refuse("more than one statement; run one statement at a time")
        if "DB::Exception" in text:
            _refuse(f"it cannot be parsed: {first_line(exc).split('DB::Exception: ')[-1]}")
        raise


def _tree(store, canonical: str) -> list[tuple[int, str, str, str]]:
    """(depth, node kind, name, parent kind) for every node of ``EXPLAIN AST canonical``."""
    try:
        lines = [r[0] for r in store.client.query(f"EXPLAIN AST {canonical}").result_rows]
    except Exception as exc:
        if "DB::Exception" in str(exc):
            _refuse(f"it cannot be checked: {first_line(exc).split('DB::Exception: ')[-1]}")
        raise
    out: list[tuple[int, str, str, str]] = []
    stack: list[str] = []
    for line in lines:
        depth = len(line) - len(line.lstrip(" "))
        words = line.split()
        if not words:
            continue
        kind = words[0]
        name = words[1] if len(words) > 1 and not words[1].startswith("(") else ""
        del stack[depth:]
        out.append((depth, kind, name, stack[-1] if stack else ""))
        stack.append(kind)
    return out


def _who(role: str) -> str:
    return "a reader (gpuledger query without --write)" if role == READER else "an admin"


def _refuse(why: str):
    raise QueryRefused(f"query refused: {why}")
