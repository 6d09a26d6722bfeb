"""The one SQL loader: placeholders filled or refused, migrations named, views ordered."""
from __future__ import annotations

import pytest

from base.errors import SqlFileError
from base.sqlfiles import PLACEHOLDER, SQL_DIR, fill, migration_files, sql, text, view_files


def test_a_placeholder_is_filled_and_a_left_one_refused():
    assert fill("SELECT __A__ + __B__", "t", a="1", b="2") == "SELECT 1 + 2"
    with pytest.raises(SqlFileError, match=r"sql/t\.sql: placeholder\(s\) left unfilled: __B__"):
        fill("SELECT __A__ + __B__", "t", a="1")
    with pytest.raises(SqlFileError, match="no placeholder for __C__"):
        fill("SELECT __A__", "t", a="1", c="3")


def test_every_placeholder_in_sql_is_one_the_code_fills():
    """Each file with placeholders, filled the way its caller fills it, leaves none behind."""
    share = text("rollup/entity_share")
    fills = {"rollup/cost": {"team_rules": "''", "entity_share": share}, "rollup/line_hours": {"entity_share": share},
             "rollup/spend": {"bill_lines": "SELECT 1"},
             "rollup/bill_line_team": {"team_rules": "''"}, "rollup/showback": {"bill_lines": "SELECT 1"},
             "rollup/compliance_residency": {"allowed": "0"}, "alerts/compliance": {"policy": "residency"},
             "billing/load_periods": {"stage": "s"}, "billing/load_totals": {"stage": "s"},
             "billing/azure_views": {"stage": "s"}, "billing/line_keys": {"stage": "s"}, "rollup/idle_changed": {"stage": "`s`"},
             # ingest/rollup/run.py sample_parts: gpu_samples, or the split hosts' merged rows
             "rollup/minute": {"samples": "gpu_samples"}, "rollup/idle_segments": {"samples": text("rollup/split_samples")}}
    for path in sorted(SQL_DIR.rglob("*.sql")):
        name = str(path.relative_to(SQL_DIR).with_suffix(""))
        if name.startswith("queries/") and PLACEHOLDER.search(text(name)):
            from dashboard.queries import query_sql  # fills the window's rows, daily or hourly

            assert not [d for d in (True, False) if PLACEHOLDER.search(query_sql(name.split("/", 1)[1], d))], name
            continue
        if PLACEHOLDER.search(text(name)):
            assert name in fills, f"{name} has placeholders no test knows how its caller fills"
            assert not PLACEHOLDER.search(sql(name, **fills[name]))


def test_a_missing_file_names_itself():
    with pytest.raises(SqlFileError, match="no SQL file .*nowhere.sql"):
        sql("rollup/nowhere")


def test_migrations_must_be_numbered_once(tmp_path):
    (tmp_path / "001_a.sql").write_text("SELECT 1")
    (tmp_path / "002_b.sql").write_text("SELECT 1")
    assert [(v, n) for v, n, _ in migration_files(tmp_path)] == [(1, "a"), (2, "b")]
    (tmp_path / "002_c.sql").write_text("SELECT 1")
    with pytest.raises(SqlFileError, match="two migrations numbered 002"):
        migration_files(tmp_path)
    (tmp_path / "002_c.sql").unlink()
    (tmp_path / "3_d.sql").write_text("SELECT 1")
    with pytest.raises(SqlFileError, match="NNN_name.sql"):
        migration_files(tmp_path)


def test_views_come_after_the_views_they_read(tmp_path):
    (tmp_path / "v_a.sql").write_text("CREATE OR REPLACE VIEW v_a AS SELECT * FROM v_c")
    (tmp_path / "v_b.sql").write_text("-- reads a table\nCREATE OR REPLACE VIEW v_b AS SELECT 1")
    (tmp_path / "v_c.sql").write_text("CREATE OR REPLACE VIEW v_c AS SELECT * FROM v_b")
    assert [name for name, _ in view_files(tmp_path)] == ["v_b", "v_c", "v_a"]
    (tmp_path / "v_b.sql").write_text("CREATE OR REPLACE VIEW v_b AS SELECT * FROM v_a")
    with pytest.raises(SqlFileError, match="cycle"):
        view_files(tmp_path)
    (tmp_path / "v_b.sql").write_text("CREATE OR REPLACE VIEW v_other AS SELECT 1")
    with pytest.raises(SqlFileError, match="expected one CREATE OR REPLACE VIEW v_b"):
        view_files(tmp_path)
