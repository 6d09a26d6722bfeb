import shutil

import pytest

from gpuledger.errors import MigrationError
from ingest.migrations import migrate, schema_version
from ingest.sqlfiles import SQL_DIR, migration_files, split_statements


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
    shutil.copytree(SQL_DIR, copy)
    first = sorted(copy.glob("001_*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited\n")
    with pytest.raises(MigrationError, match=f"{first.name} was edited after it was applied"):
        migrate(store, sql_dir=copy)


def test_new_migration_file_is_applied_in_order(store, tmp_path):
    copy = tmp_path / "sql"
    shutil.copytree(SQL_DIR, copy)
    nxt = migration_files()[-1][0] + 1
    (copy / f"{nxt:03d}_extra.sql").write_text("CREATE TABLE extra (a UInt8) ENGINE = Memory;\nINSERT INTO extra VALUES (1);")
    assert migrate(store, sql_dir=copy) == [f"{nxt:03d}_extra.sql"]
    assert migrate(store, sql_dir=copy) == []
    assert store.scalar("SELECT count() FROM extra") == 1


def test_split_statements_ignores_semicolons_in_strings_and_comments():
    text = "SELECT ';' -- a; comment\n;/* x; */ SELECT 2; ;"
    assert split_statements(text) == ["SELECT ';'", "SELECT 2"]
