"""The cluster variant of the schema (``ingest/cluster.py``, ``gpuledger schema --cluster``):
generated from the same ``sql/`` migrations, every statement parses in ClickHouse, and no table
or view of the single-node schema is left out.

chDB cannot run ON CLUSTER or Replicated engines (no Keeper), so each statement is parsed by
ClickHouse itself (``formatQuery``), and the generated tables are also *executed* with the
cluster parts taken off again (plain engines, a Merge table standing in for Distributed) to
check they have exactly the single-node columns and that every view still compiles over them.
"""
from __future__ import annotations

import re

import pytest

from base.errors import SchemaError
from ingest.cluster import ClusterSchema, cluster_schema, render

CLUSTER, DB = "gpu_fleet", "gl"


def statements(schema_sections):
    return [s for _, stmts in schema_sections for s in stmts]


def formatted(store, sql: str) -> str:
    try:
        return store.scalar("SELECT formatQuery({q:String})", {"q": sql})
    except Exception as exc:
        raise AssertionError(f"ClickHouse cannot parse generated DDL:\n{sql}\n--> {str(exc).splitlines()[0]}") from None


@pytest.fixture(scope="module")
def generated():
    return cluster_schema(CLUSTER, DB)


def single_node_objects(store) -> dict[str, str]:
    rows = store.rows("SELECT name, engine FROM system.tables WHERE database = currentDatabase() AND name NOT LIKE '\\_%'")
    return dict(rows)


def test_every_generated_statement_parses(store, generated):
    schema, sections = generated
    texts = [formatted(store, s) for s in statements(sections)]
    assert len(texts) > 60
    for text in texts:
        if text.startswith("CREATE") or text.startswith("ALTER") or text.startswith("GRANT"):
            assert f"ON CLUSTER {CLUSTER}" in text, text[:200]


def test_no_table_or_view_is_left_out(store, generated):
    schema, sections = generated
    single = single_node_objects(store)
    created: dict[str, str] = {}
    for text in (formatted(store, s) for s in statements(sections)):
        m = re.match(rf"CREATE (?:OR REPLACE )?(TABLE|VIEW|MATERIALIZED VIEW) (?:IF NOT EXISTS )?{DB}\.(\w+) ON CLUSTER {CLUSTER}", text)
        if m:
            created[m.group(2)] = text
        dropped = re.match(rf"DROP TABLE IF EXISTS {DB}\.(\w+) ON CLUSTER", text)
        if dropped:                                     # a table rebuilt under a new name, then exchanged
            created.pop(dropped.group(1), None)
    views = {n for n, e in single.items() if e == "View"}
    everywhere = set(schema.everywhere)                 # alert state: replicated to every node, not sharded
    assert everywhere == {"alert_state", "alert_events", "alert_notifications", "alert_delivery_attempts", "alert_silences"}
    tables = {n for n, e in single.items() if e.endswith("MergeTree")} - everywhere
    derived = {n for n, e in single.items() if e == "MaterializedView"}      # each shard's rows into its local table
    assert views | tables | derived | everywhere == set(single), f"unexpected engines: {single}"
    missing = sorted(n for n in tables if n not in created or f"{n}_local" not in created)
    missing += sorted(v for v in views | derived | everywhere if v not in created)
    assert missing == [], f"left out of the cluster schema: {missing}"
    assert set(created) == tables | views | derived | everywhere | {f"{t}_local" for t in tables}, \
        sorted(set(created) ^ (tables | views | derived))
    for table in everywhere:
        assert re.search(rf"ENGINE = Replicated{single[table]}\('/clickhouse/tables/all/{{database}}/{{table}}', "
                         r"'\{shard\}_\{replica\}'", created[table]), created[table]
        assert "Distributed" not in created[table]
    for view in derived:
        assert re.search(rf" TO {DB}\.\w+_local\s+AS SELECT\s.*\sFROM {DB}\.\w+_local\b", created[view], re.S), created[view]
    host_tables = {t for (t,) in store.rows("SELECT table FROM system.columns WHERE database = currentDatabase() "
                                            "AND name = 'host'")}
    for table in tables:
        engine = single[table]
        local, dist = created[f"{table}_local"], created[table]
        assert re.search(rf"ENGINE = Replicated{engine}\('/clickhouse/tables/{{shard}}/{{database}}/{{table}}', '{{replica}}'", local), local
        key = re.search(rf"ENGINE = Distributed\({CLUSTER}, {DB}, {table}_local, (.+)\)$", dist, re.S)
        assert key, dist
        if table in host_tables:
            assert key.group(1) == "cityHash64(host)", (table, key.group(1))
        else:
            assert "host" not in key.group(1) and key.group(1).startswith("cityHash64("), (table, key.group(1))
        assert "non_replicated_deduplication_window" not in local
    assert {"gpu_samples", "gpu_processes", "gpu_health_events", "gpu_minute", "idle_windows"} <= host_tables
    assert "replicated_deduplication_window = 10000" in created["gpu_samples_local"]
    assert sorted(schema.tables) == sorted(tables) and sorted(schema.views) == sorted(views | derived)


def declustered(sql: str) -> str:
    """The generated statement with the cluster parts removed, so chDB can execute it."""
    sql = sql.replace(f" ON CLUSTER {CLUSTER}", "")
    sql = re.sub(r"ENGINE = Replicated(\w+)\('[^']*', '(?:\{shard\}_)?\{replica\}'(?:, )?", r"ENGINE = \1(", sql)
    sql = re.sub(rf"ENGINE = Distributed\({CLUSTER}, (\w+), (\w+), .*\)$", r"ENGINE = Merge(\1, '^\2$')", sql, flags=re.S)
    # a Merge table takes no INSERT: through one shard's Distributed table is into its _local one
    sql = re.sub(r"^INSERT INTO (\S+) (.*) SETTINGS insert_distributed_sync = 1$", r"INSERT INTO \1_local \2", sql, flags=re.S)
    return sql


def test_local_tables_have_the_single_node_columns_and_views_compile(store, generated):
    _, sections = generated
    single_db = store.target.database
    store.command(f"DROP DATABASE IF EXISTS {DB}")
    try:
        for sql in statements(sections):
            if sql.startswith(("CREATE SETTINGS PROFILE", "CREATE ROLE", "GRANT", "REVOKE")):
                continue                                           # access entities: parsed above
            store.command(declustered(sql))
        columns = "SELECT table, name, type, default_kind, default_expression, compression_codec FROM system.columns " \
                  "WHERE database = {d:String} ORDER BY table, position"
        single = {}
        for table, *rest in store.rows(columns, {"d": single_db}):
            single.setdefault(table, []).append(tuple(rest))
        cluster = {}
        for table, *rest in store.rows(columns, {"d": DB}):
            cluster.setdefault(table, []).append(tuple(rest))
        engines = dict(store.rows("SELECT name, engine FROM system.tables WHERE database = {d:String}", {"d": single_db}))
        for table, cols in single.items():
            if table.startswith("_"):
                continue
            if engines[table].endswith("MergeTree") and f"{table}_local" not in cluster:   # replicated everywhere
                assert cluster[table] == cols, table
            elif engines[table].endswith("MergeTree"):
                assert cluster[f"{table}_local"] == cols, table
                keys = "SELECT sorting_key, partition_key, primary_key FROM system.tables WHERE database = {d:String} AND name = {t:String}"
                assert store.rows(keys, {"d": DB, "t": f"{table}_local"}) == store.rows(keys, {"d": single_db, "t": table})
            assert [c[:2] for c in cluster[table]] == [c[:2] for c in cols], table   # reads see the same columns
        for (view,) in store.rows("SELECT name FROM system.tables WHERE database = {d:String} AND engine = 'View'", {"d": DB}):
            store.rows(f"SELECT * FROM {DB}.{view} LIMIT 0")
    finally:
        store.command(f"DROP DATABASE IF EXISTS {DB}")


def test_alters_drops_and_materialized_views_follow_the_rules(store):
    schema = ClusterSchema(CLUSTER, DB)
    schema.rewrite("CREATE TABLE IF NOT EXISTS gpu_samples (ts DateTime, host String, v Float64) "
                   "ENGINE = MergeTree PARTITION BY toDate(ts) ORDER BY (host, ts)")
    schema.rewrite("CREATE TABLE IF NOT EXISTS per_host_day (day Date, host String, n UInt64) "
                   "ENGINE = SummingMergeTree ORDER BY (host, day)")
    add = schema.rewrite("ALTER TABLE gpu_samples ADD COLUMN IF NOT EXISTS w Float32 AFTER v, ADD COLUMN x UInt8")
    assert [a.split(" ON CLUSTER")[0] for a in add] == [f"ALTER TABLE {DB}.gpu_samples_local", f"ALTER TABLE {DB}.gpu_samples"]
    ttl = schema.rewrite("ALTER TABLE gpu_samples MODIFY TTL ts + INTERVAL 30 DAY")
    assert ttl == [f"ALTER TABLE {DB}.gpu_samples_local ON CLUSTER {CLUSTER} MODIFY TTL ts + INTERVAL 30 DAY"]
    with pytest.raises(SchemaError, match="split it"):
        schema.rewrite("ALTER TABLE gpu_samples ADD COLUMN y UInt8, MODIFY TTL ts + INTERVAL 1 DAY")
    # a setting reaches t_local and the engine clause its staging copies are created with
    setting = schema.rewrite("ALTER TABLE gpu_samples MODIFY SETTING min_bytes_for_wide_part = 268435456")
    assert setting == [f"ALTER TABLE {DB}.gpu_samples_local ON CLUSTER {CLUSTER} MODIFY SETTING min_bytes_for_wide_part = 268435456"]
    assert schema.tables["gpu_samples"].local_engine.endswith("\nSETTINGS min_bytes_for_wide_part = 268435456")
    schema.rewrite("ALTER TABLE gpu_samples MODIFY SETTING ttl_only_drop_parts = 1")
    assert schema.tables["gpu_samples"].local_engine.endswith(
        "SETTINGS min_bytes_for_wide_part = 268435456, ttl_only_drop_parts = 1")
    mv = schema.rewrite("CREATE MATERIALIZED VIEW IF NOT EXISTS per_host_day_mv TO per_host_day AS "
                        "SELECT toDate(ts) AS day, host, count() AS n FROM gpu_samples GROUP BY day, host")
    assert len(mv) == 1 and f"TO {DB}.per_host_day_local" in mv[0] and f"FROM {DB}.gpu_samples_local" in mv[0]
    inner = schema.rewrite("CREATE MATERIALIZED VIEW hourly ENGINE = AggregatingMergeTree ORDER BY (host, h) "
                           "AS SELECT host, toStartOfHour(ts) AS h, avgState(v) AS v FROM gpu_samples GROUP BY host, h")
    assert "ReplicatedAggregatingMergeTree(" in inner[0] and f"FROM {DB}.gpu_samples_local" in inner[0]
    assert "Distributed(" in inner[1] and "cityHash64(host, h)" in inner[1]
    drop = schema.rewrite("DROP TABLE IF EXISTS per_host_day")
    assert [d.split(" ON CLUSTER")[0] for d in drop] == [f"DROP TABLE IF EXISTS {DB}.per_host_day",
                                                         f"DROP TABLE IF EXISTS {DB}.per_host_day_local"]
    trunc = schema.rewrite("TRUNCATE TABLE gpu_samples")
    assert trunc == [f"TRUNCATE TABLE {DB}.gpu_samples_local ON CLUSTER {CLUSTER}"]
    for sql in add + ttl + mv + inner + drop + trunc:
        formatted(store, sql)
    with pytest.raises(SchemaError, match="cluster-wide"):
        schema.rewrite("INSERT INTO gpu_samples VALUES (now(), 'h', 1)")
    filled = schema.rewrite("INSERT INTO gpu_hour SELECT host, sum(x) FROM gpu_minute WHERE held GROUP BY host")
    assert filled == [f"INSERT INTO {DB}.gpu_hour SELECT host, sum(x) FROM {DB}.gpu_minute WHERE held GROUP BY host "
                      "SETTINGS insert_distributed_sync = 1"]
    for two_tables in ("INSERT INTO gpu_hour SELECT * FROM gpu_minute JOIN gpu_samples USING host",
                       "INSERT INTO gpu_hour SELECT * FROM (SELECT * FROM gpu_minute)",
                       "INSERT INTO gpu_hour SELECT (SELECT 1 FROM gpu_samples) FROM gpu_minute"):
        with pytest.raises(SchemaError, match="cluster-wide"):
            schema.rewrite(two_tables)
    with pytest.raises(SchemaError, match="cluster name"):
        ClusterSchema("bad-name")


def test_render_is_what_clickhouse_client_runs(store, generated):
    from base.sqlfiles import split_statements

    _, sections = generated
    text = render(sections, "header line")
    again = split_statements(text)
    assert len(again) == len(statements(sections))
    for sql in again:
        formatted(store, sql)
