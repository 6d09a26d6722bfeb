"""sql/README.md cannot drift: every view is documented, and every example runs on demo data."""
import re

import pytest

from tests.helpers import ROOT

DOC = (ROOT / "sql" / "README.md").read_text()
EXAMPLES = re.findall(r"```sql\n(.*?)```", DOC, re.S)


def test_every_view_is_documented(demo):
    views = [r[0] for r in demo.store.rows(
        "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine = 'View' ORDER BY name")]
    assert views, "no views"
    assert [v for v in views if f"`{v}`" not in DOC] == []


def test_documented_view_columns_are_the_real_ones(demo):
    for view, columns in re.findall(r"^\| `(v_\w+)` \| [^|]+ \| `([^|]+)` \|", DOC, re.M):
        real = demo.store.columns(view)
        documented = [c.strip(" `") for c in columns.split(",")]
        assert documented == real, view


@pytest.mark.parametrize("sql", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_examples_run_and_return_rows(demo, sql):
    rows = demo.store.read_only().rows(sql)
    assert rows, sql


def test_readonly_role_parses(demo):
    from base.sqlfiles import split_statements, text

    for statement in split_statements(text("roles/readonly")):
        assert demo.store.scalar("SELECT formatQuery({q:String})", {"q": statement})
