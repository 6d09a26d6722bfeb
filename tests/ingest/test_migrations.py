import re
import shutil

import pytest

from base.errors import MigrationError
from base.sqlfiles import MIGRATIONS_DIR, migration_files, split_statements
from ingest.migrations import REWRITTEN, apply_views, migrate, schema_version


def test_every_migration_applies_once(store):
    assert migrate(store) == []  # the fixture already migrated
    tables = {r[0] for r in store.rows("SHOW TABLES")}
    assert {"gpu_samples", "ingested_files", "schema_migrations"} <= tables
    assert schema_version(store) == migration_files()[-1][0]
    assert store.scalar("SELECT count() FROM schema_migrations") == len(migration_files())


def test_store_newer_than_code_is_refused(store):
    store.client.insert("schema_migrations", [[999, "from_the_future", "x"]], column_names=["version", "name", "checksum"])
    with pytest.raises(MigrationError, match="schema version 999, newer than this gpuledger knows"):
        migrate(store)


def test_edited_migration_is_refused(store, tmp_path):
    copy = tmp_path / "sql"
    shutil.copytree(MIGRATIONS_DIR, copy)
    first = sorted(copy.glob("001_*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited\n")
    with pytest.raises(MigrationError, match=f"{first.name} was edited after it was applied"):
        migrate(store, sql_dir=copy)


def test_new_migration_file_is_applied_in_order(store, tmp_path):
    copy = tmp_path / "sql"
    shutil.copytree(MIGRATIONS_DIR, copy)
    nxt = migration_files()[-1][0] + 1
    (copy / f"{nxt:03d}_extra.sql").write_text("CREATE TABLE extra (a UInt8) ENGINE = Memory;\nINSERT INTO extra VALUES (1);")
    assert migrate(store, sql_dir=copy) == [f"{nxt:03d}_extra.sql"]
    assert migrate(store, sql_dir=copy) == []
    assert store.scalar("SELECT count() FROM extra") == 1


def test_a_store_migrated_before_the_views_moved_out_is_accepted(store):
    """Migrations 002, 006 and 008 lost their views to sql/views/; the checksums stores recorded
    for their earlier text still match, any other text does not."""
    for version, digest in REWRITTEN.items():
        store.insert("schema_migrations", [[version, "old", digest]], ["version", "name", "checksum"])
    assert migrate(store) == []
    store.insert("schema_migrations", [[6, "old", "0" * 64]], ["version", "name", "checksum"])
    with pytest.raises(MigrationError, match="006_views.sql was edited"):
        migrate(store)


def test_migrations_hold_tables_only_and_every_view_is_applied(store):
    for _version, _name, path in migration_files():
        assert not re.search(r"CREATE\s+(OR\s+REPLACE\s+)?VIEW", path.read_text(), re.I), f"{path.name} defines a view"
    views = {r[0] for r in store.rows("SELECT name FROM system.tables WHERE database = currentDatabase() AND engine = 'View'")}
    assert views == {p.stem for p in (MIGRATIONS_DIR.parent / "views").glob("*.sql")}


def test_a_view_is_replaced_from_its_file_at_every_run(store):
    store.command("CREATE OR REPLACE VIEW v_team_spend AS SELECT 1 AS stale")
    apply_views(store)
    assert "stale" not in store.scalar("SELECT create_table_query FROM system.tables "
                                       "WHERE database = currentDatabase() AND name = 'v_team_spend'")


def test_split_statements_ignores_semicolons_in_strings_and_comments():
    text = "SELECT ';' -- a; comment\n;/* x; */ SELECT 2; ;"
    assert split_statements(text) == ["SELECT ';'", "SELECT 2"]
