"""The finance read-only role (sql/roles/readonly.sql), the compose file's reader user
(deploy/clickhouse/users.d/gpuledger-reader.xml) and sql/README.md's list of what they may read
agree with each other and with a migrated store: only documented views and the tables behind
them, no alert or state table, and limits a query cannot raise.

chDB refuses CREATE ROLE / CREATE SETTINGS PROFILE (the embedded engine has no access control),
so the statements are parsed here, not run."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from base.sqlfiles import split_statements, text
from tests.helpers import ROOT

STATEMENTS = split_statements(text("roles/readonly"))
GRANTED = [m for s in STATEMENTS for m in re.findall(r"^GRANT SELECT ON gpuledger\.(\w+) TO gpuledger_reader$", s.strip())]
NEVER = ("alert_", "derivation_state", "ingested_files", "billing_loads", "schema_migrations")
README = (ROOT / "sql" / "README.md").read_text()
USERS = ET.parse(ROOT / "deploy" / "clickhouse" / "users.d" / "gpuledger-reader.xml").getroot()


def profile_settings() -> dict[str, tuple[str, str]]:
    """name -> (value, modifier) of the CREATE SETTINGS PROFILE statement."""
    [create] = [s for s in STATEMENTS if "SETTINGS PROFILE" in s and s.lstrip().startswith("CREATE SETTINGS")]
    body = create.split(" SETTINGS", 1)[1]
    return {n: (v.strip("'"), mod) for n, v, mod in re.findall(r"(\w+)\s*=\s*('[^']*'|[\w.]+)\s*(CONST|READONLY)?", body)}


def documented() -> set[str]:
    section = README.split("## Read-only access", 1)[1].split("\n#", 1)[0]
    lines = re.findall(r"^- (?:views|tables): (.*)$", section, re.M)
    return {name for line in lines for name in re.findall(r"`(\w+)`", line)}


def test_every_statement_is_a_profile_role_revoke_or_select_grant():
    kinds = [s.split()[0] + " " + s.split()[1] for s in STATEMENTS]
    assert kinds[:3] == ["CREATE SETTINGS", "CREATE ROLE", "REVOKE ALL"]
    assert len(GRANTED) == len(STATEMENTS) - 3 and len(set(GRANTED)) == len(GRANTED)


def test_grants_are_the_documented_list_and_real_objects_no_secrets(store):
    real = dict(store.rows("SELECT name, engine FROM system.tables WHERE database = currentDatabase()"))
    assert set(GRANTED) == documented()
    assert [g for g in GRANTED if g not in real] == []
    assert [g for g in GRANTED if g.startswith(NEVER)] == []
    assert {n for n, engine in real.items() if engine == "View"} <= set(GRANTED)          # every view is for finance
    # a view reads with its invoker's rights: each granted view may name granted tables only
    queries = dict(store.rows("SELECT name, create_table_query FROM system.tables WHERE database = currentDatabase() "
                              "AND engine = 'View'"))
    for view, query in queries.items():
        read = {t for t in real if t != view and re.search(rf"\b{t}\b", query)}
        assert read <= set(GRANTED), (view, read - set(GRANTED))
    assert {"alert_delivery_attempts", "alert_notifications", "alert_state"} <= set(real) - set(GRANTED)


def test_profile_limits_cannot_be_raised():
    settings = profile_settings()
    assert {"readonly", "max_execution_time", "max_memory_usage", "max_result_rows"} <= set(settings)
    assert settings["readonly"][0] in ("1", "2")
    assert {n: mod for n, (_, mod) in settings.items() if mod not in ("CONST", "READONLY")} == {}


def test_reader_user_has_the_roles_rights():
    reader = USERS.find("users/reader")
    profile = USERS.find(f"profiles/{reader.findtext('profile')}")
    settings = {e.tag: e.text for e in profile if e.tag != "constraints"}
    assert settings == {n: v for n, (v, _) in profile_settings().items()}
    constraints = profile.find("constraints")
    assert sorted(c.tag for c in constraints) == sorted(settings)
    assert all(c.find("readonly") is not None or c.find("const") is not None for c in constraints)
    assert [q.text for q in reader.findall("grants/query")] == [f"GRANT SELECT ON gpuledger.{g}" for g in GRANTED]


def test_statements_parse(store):
    for statement in STATEMENTS:
        assert store.scalar("SELECT formatQuery({q:String})", {"q": statement})
