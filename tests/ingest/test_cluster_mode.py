"""The platform on a ClickHouse cluster (``store.cluster``, ``--cluster``; ``ingest/cluster_store.py``)
and the statement plan (``ingest/plan.py``, ``gpuledger rollup --dry-run``).

No ClickHouse server can run here, so a cluster is *planned*: ``ingest/rollup/run.py`` runs
unchanged against a ``ClusterStore`` whose node and shard handles record statements instead of
running them and read from an embedded store holding the same data. Every planned statement is
parsed by ClickHouse (``formatQuery``), and the per-shard fills are executed (as SELECTs) on the
embedded store to prove each row is derived on exactly one shard.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from base.errors import ConfigError, StoreError
from ingest.cluster import cluster_schema
from ingest.cluster_store import ClusterStore, plan_cluster, shards_from
from ingest.plan import PlanStore
from ingest.rollup.replace import partition_id

CLUSTER = "gpu_fleet"
SHARDS = shards_from([(1, 1, "ch-a"), (2, 2, "ch-b")], 8123)      # weights 1 and 2: slots [0,1) and [1,3)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from gpuledger import config as configuration
    from gpuledger.demo import write_simulation

    files = write_simulation(tmp_path_factory.mktemp("fleet"), gpus=16, days=1, interval_s=600, seed=3,
                             progress=lambda m: None)
    return files, configuration.load(str(files["config"]), env={})


@pytest.fixture
def loaded(store, fleet):
    from ingest.billing.load import ingest_billing
    from ingest.samples import ingest_samples

    files, cfg = fleet
    ingest_samples(store, files["samples"], progress=lambda m: None)
    ingest_billing(store, files["billing"], progress=lambda m: None)
    day = store.scalar("SELECT max(toDate(ts)) FROM gpu_samples")
    return store, cfg, day


def parse(store, sql: str) -> str:
    try:
        return store.scalar("SELECT formatQuery({q:String})", {"q": sql})
    except Exception as exc:
        raise AssertionError(f"ClickHouse cannot parse a planned statement:\n{sql[:2000]}\n--> {str(exc).splitlines()[0]}") from None


def cluster_plan(store, cfg, day):
    from ingest.rollup.run import rollup

    planner = plan_cluster(store, CLUSTER, SHARDS)
    report = rollup(planner, cfg, since=day, until=day, force=True, progress=lambda m: None)
    assert report.days == [day]
    return planner.node.plan.steps


def fills(steps, table: str):
    """The per-shard fills of ``table``'s staging copy: {shard label: [sql, ...]}."""
    out: dict[str, list[str]] = {}
    for step in steps:
        if re.match(rf"INSERT INTO \w+\._stage_{table}_[0-9a-f]{{12}}_local ", step.sql):
            out.setdefault(step.where, []).append(step)
    return out


def test_cluster_rollup_plan_stages_on_local_tables_and_swaps_per_shard(loaded):
    store, cfg, day = loaded
    db = store.target.database
    steps = cluster_plan(store, cfg, day)
    for step in steps:
        parse(store, step.sql)
    texts = [s.sql for s in steps]
    shard_labels = {str(s) for s in SHARDS}
    assert {s.where for s in steps} == {"node"} | shard_labels

    # staging copies beside t_local on every node, a Distributed table over them, both dropped
    creates = [t for t in texts if t.startswith("CREATE TABLE")]
    assert creates and all(f"ON CLUSTER {CLUSTER}" in t for t in creates)
    assert any(re.match(rf"CREATE TABLE {db}\._stage_gpu_minute_\w+_local ON CLUSTER {CLUSTER} AS {db}\.gpu_minute_local\n"
                        r"ENGINE = MergeTree\nPARTITION BY toDate\(minute\)", t) for t in creates), creates[:2]
    assert any(re.search(rf"ENGINE = Distributed\({CLUSTER}, {db}, _stage_gpu_minute_\w+_local, cityHash64\(host\)\)", t)
               for t in creates)
    assert sum(t.startswith("DROP TABLE IF EXISTS") and f"ON CLUSTER {CLUSTER} SYNC" in t for t in texts) == len(creates)

    # the swap: REPLACE PARTITION on t_local, on each shard's replica that filled the copy
    for table in ("gpu_minute", "gpu_hour", "gpu_cost_hour", "team_spend_day", "showback_focus_day"):
        swaps = [s for s in steps if re.fullmatch(rf"ALTER TABLE {db}\.{table}_local REPLACE PARTITION ID "
                                                  rf"'{partition_id(table, day)}' "
                                                  rf"FROM {db}\._stage_{table}_\w+_local", s.sql)]
        assert sorted(s.where for s in swaps) == sorted(shard_labels), table
    assert not any(re.search(r"(REPLACE|ATTACH|DROP) PARTITION", t) and not re.match(rf"ALTER TABLE {db}\.\w+_local ", t)
                   for t in texts)
    # compliance findings: no EXCHANGE of a replicated table; every partition replaced per shard
    assert not any("EXCHANGE" in t for t in texts)
    assert [s.where for s in steps if re.match(rf"ALTER TABLE {db}\.compliance_findings_local REPLACE PARTITION", s.sql)] \
        == [str(s) for s in SHARDS]

    # other writes: through the Distributed names; config snapshots truncated on every shard's t_local
    inserts = [t for t in texts if t.startswith("INSERT INTO") and "_stage_" not in t.split("(")[0]]
    assert {t.split()[2] for t in inserts} == {"config_pools", "config_teams", "config_list_prices", "derivation_state"}
    assert f"TRUNCATE TABLE {db}.config_pools_local ON CLUSTER {CLUSTER}" in texts


def test_plans_hold_no_session_settings(loaded):
    # the derivation's handles share an embedded store's cores (Store.sharing_cores: SET max_threads);
    # a plan, single-node or cluster, records the derivation's statements only
    store, _, _ = loaded
    cluster, single = plan_cluster(store, CLUSTER, SHARDS), PlanStore(store)
    for handle in (cluster, single):
        with handle.sharing_cores(2):
            pass
    assert cluster.node.plan.steps == [] and single.plan.steps == []


def test_each_shard_derives_its_own_gpus_and_reads_small_tables_whole(loaded):
    store, cfg, day = loaded
    db = store.target.database
    steps = cluster_plan(store, cfg, day)
    minute = fills(steps, "gpu_minute")
    assert sorted(minute) == sorted(str(s) for s in SHARDS)
    for (step,) in minute.values():
        assert f"FROM {db}.gpu_samples_local" in step.sql and not re.search(r"FROM gpu_samples\b", step.sql)
    for steps_of_shard in fills(steps, "gpu_cost_hour").values():
        text = steps_of_shard[0].sql
        assert f"{db}.gpu_hour_local" in text                                  # sharded by host: this shard's rows
        assert re.search(r"\bconfig_pools\b", text) and "config_pools_local" not in text   # small: read whole
        assert "billing_line_items_local" not in text
    for steps_of_shard in fills(steps, "team_spend_day").values():               # not sharded by host: all inputs whole
        kept, computed = steps_of_shard                 # by month: the month's other days copied, then the day
        assert "_partition_id" in kept.sql
        assert "_local" not in computed.sql.split(") SELECT", 1)[1].rsplit(") WHERE", 1)[0]

    # executed on the embedded store (which holds every shard's rows): each row is kept by exactly one shard
    def shard_rows(step) -> int:
        select = re.sub(r"^INSERT INTO \S+ \([^)]*\) ", "", step.sql)
        select = re.sub(rf"\b{db}\.(\w+)_local\b", r"\1", select)
        return int(store.scalar(f"SELECT count() FROM ({select})", step.parameters))

    for table in ("gpu_minute", "team_spend_day"):
        per_shard = [shard_rows(steps_[-1]) for steps_ in fills(steps, table).values()]   # the day's own fill
        whole = _single_node_rows(store, cfg, table, day)
        assert sum(per_shard) == whole > 0, (table, per_shard, whole)
        assert table != "gpu_minute" or min(per_shard) > 0, per_shard     # 16 GPUs: both shards hold some


def _single_node_rows(store, cfg, table, day) -> int:
    """How many rows the single-node derivation of ``table`` for ``day`` yields (planned, then counted)."""
    from ingest.rollup.run import rollup

    planner = PlanStore(store)
    rollup(planner, cfg, since=day, until=day, force=True, progress=lambda m: None)
    *_, step = [s for s in planner.plan.steps if re.match(rf"INSERT INTO `_stage_{table}_[0-9a-f]{{12}}` ", s.sql)]
    select = re.sub(r"^INSERT INTO \S+ \([^)]*\) ", "", step.sql)
    return int(store.scalar(f"SELECT count() FROM ({select})", step.parameters))


def test_rollup_dry_run_prints_the_single_node_plan_and_writes_nothing(loaded):
    from gpuledger.cli import parser
    from gpuledger.cli.common import Console

    store, cfg, day = loaded
    out: list[str] = []
    args = parser().parse_args(["rollup", "--dry-run"])
    assert args.func.run(args, cfg, store, Console(out=out.append, err=lambda t: None)) == 0
    text = "".join(out)
    pid = day.strftime("%Y%m%d")
    assert text.startswith(f"-- gpuledger rollup --dry-run: the statements deriving {day} would run (single node)")
    assert re.search(rf"ALTER TABLE `gpu_minute` REPLACE PARTITION ID '{pid}' FROM `_stage_gpu_minute_\w+`;", text)
    assert re.search(r"EXCHANGE TABLES `_stage_compliance_findings_\w+` AND `compliance_findings`;", text)
    assert "ON CLUSTER" not in text and "-- parameters: day = " in text
    order = [text.index(f"`{t}` REPLACE PARTITION") for t in ("gpu_minute", "gpu_hour", "gpu_cost_hour", "gpu_waste_hour")]
    assert order == sorted(order)
    from base.sqlfiles import split_statements

    statements = split_statements(text)
    assert len(statements) > 40
    for sql in statements:
        parse(store, sql)
    assert store.scalar("SELECT count() FROM gpu_minute") == 0                    # nothing was written
    assert store.scalar("SELECT count() FROM derivation_state") == 0
    assert store.scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() "
                        "AND startsWith(name, '_stage_')") == 0


def recording_cluster(database: str = "gl") -> ClusterStore:
    from ingest.store import StoreTarget

    target = StoreTarget("http", database, host="ch-a", port=8123)
    node = PlanStore(None, target=target, where="node")
    return ClusterStore(node, CLUSTER, SHARDS, lambda s: PlanStore(None, target=target, where=str(s), plan=node.plan))


def test_init_with_store_cluster_applies_what_schema_cluster_prints(monkeypatch, tmp_path, capsys):
    from base.sqlfiles import split_statements
    from gpuledger.cli import main

    recorder = recording_cluster("gl")
    seen = {}

    def fake_connect(dsn, cluster, http_port=0, **_):
        seen.update(dsn=dsn, cluster=cluster, http_port=http_port)
        return recorder

    monkeypatch.setattr("ingest.cluster_store.connect_cluster", fake_connect)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPULEDGER_CONFIG", raising=False)
    Path("gpuledger.toml").write_text('[store]\ndsn = "http://gl@ch-a:8123/gl"\ncluster = "gpu_fleet"\ncluster_http_port = 8124\n')
    assert main(["init"]) == 0
    assert seen == {"dsn": "http://gl@ch-a:8123/gl", "cluster": CLUSTER, "http_port": 8124}
    assert "(cluster gpu_fleet, 2 shards) is at schema version 0" in capsys.readouterr().out

    ddl = [s.sql for s in recorder.node.plan.steps if not s.sql.startswith("INSERT INTO schema_migrations ")]
    assert main(["schema", "--database", "gl"]) == 0                 # store.cluster: the cluster variant
    printed = split_statements(capsys.readouterr().out)
    _, sections = cluster_schema(CLUSTER, "gl", include_roles=False)
    expected = [s for source, stmts in sections if source != "database" for s in stmts]
    assert printed[0].startswith("CREATE DATABASE IF NOT EXISTS gl ON CLUSTER gpu_fleet")
    def same(s):
        return "\n".join(line.rstrip() for line in s.strip().splitlines())     # as render() prints it
    assert [p for p in printed[1:] if not p.startswith(("CREATE SETTINGS PROFILE", "CREATE ROLE", "GRANT", "REVOKE"))] == \
        [same(e) for e in expected]
    # init: the schema_migrations table on every open, then every migration and view, then the TTL on t_local
    assert ddl[:len(expected)] == expected
    assert ddl[len(expected)] == "ALTER TABLE gl.gpu_samples_local ON CLUSTER gpu_fleet MODIFY TTL toDateTime(ts) + INTERVAL 400 DAY"
    assert ddl[len(expected) + 1:] == expected[:2]            # schema_version() makes sure schema_migrations exists
    recorded = [s.sql for s in recorder.node.plan.steps if s.sql.startswith("INSERT INTO schema_migrations ")]
    assert len(recorded) == len([s for s, _ in sections if s.startswith("migrations/0")])   # one per migration
    assert {s.where for s in recorder.node.plan.steps} == {"node"}


def test_alert_state_is_replicated_to_every_node_not_sharded():
    schema, sections = cluster_schema(CLUSTER, "gl")
    texts = [s for _, stmts in sections for s in stmts]
    for table in ("alert_state", "alert_notifications", "alert_silences"):
        assert table not in schema.tables and table in schema.everywhere
        (create,) = [t for t in texts if re.match(rf"CREATE TABLE IF NOT EXISTS gl\.{table}\b", t)]
        assert "'/clickhouse/tables/all/{database}/{table}', '{shard}_{replica}'" in create
        assert not any(f"gl.{table}_local" in t for t in texts)
    store = recording_cluster()
    store.insert("alert_silences", [[1]], ["id"])
    assert store.node.plan.steps[-1].sql.startswith("INSERT INTO alert_silences ")
    with pytest.raises(StoreError, match="only sharded tables"):
        with store.staging("alert_state"):
            pass


def test_bad_cluster_config_names_the_key(tmp_path, monkeypatch):
    from gpuledger import config as configuration
    from gpuledger.cli import main
    from ingest.schema import open_store

    bad = tmp_path / "bad.toml"
    bad.write_text('[store]\ncluster = "gpu-fleet"\n')
    with pytest.raises(ConfigError, match=r"store\.cluster"):
        configuration.load(str(bad), env={})
    with pytest.raises(ConfigError, match=r"store\.cluster_http_port"):
        bad.write_text('[store]\ncluster = "c1"\ncluster_http_port = 70000\n')
        configuration.load(str(bad), env={})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPULEDGER_CONFIG", raising=False)
    assert main(["--cluster", "no-dashes", "schema"]) == 2
    with pytest.raises(StoreError, match=r"store\.cluster = 'c1' needs a ClickHouse server DSN"):
        open_store(f"chdb://{tmp_path}/x", cluster="c1")


def test_shard_slots_follow_the_weights():
    assert [s.slots for s in SHARDS] == [(0, 1), (1, 3)]
    store = recording_cluster()
    assert store.shard_filter(SHARDS[1], "cityHash64(host)") == "(cityHash64(host)) % 3 >= 1 AND (cityHash64(host)) % 3 < 3"
    assert store.localize("SELECT * FROM gpu_samples AS s JOIN `gpu_hour` h ON 1 JOIN config_pools p ON 1 "
                          "WHERE x IN (SELECT y FROM gl.idle_windows) AND trim(TRAILING '/' FROM lower(z))") == \
        ("SELECT * FROM gl.gpu_samples_local AS s JOIN gl.gpu_hour_local h ON 1 JOIN config_pools p ON 1 "
         "WHERE x IN (SELECT y FROM gl.idle_windows_local) AND trim(TRAILING '/' FROM lower(z))")
