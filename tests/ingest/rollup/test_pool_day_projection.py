"""gpu_cost_day keeps its sums per day, environment, pool, model, team, held and whole GPU in an
aggregate projection (sql/migrations/019_pool_day_projection.sql): the partitions the derivation
swaps in carry it, the pool heatmap and the Placement page's usage are answered from it, and their
numbers are the ones the rows give."""
from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from dashboard import queries
from dashboard.filters import parse

PROJECTED = ["util_heatmap_pool_day", "placement_usage"]


def test_the_table_and_its_staging_copies_have_the_projection(store):
    create = "SELECT create_table_query FROM system.tables WHERE database = currentDatabase() AND name = {t:String}"
    assert "PROJECTION pool_day" in store.scalar(create, {"t": "gpu_cost_day"})
    with store.staging("gpu_cost_day") as stage:          # what the derivation swaps a month in from
        assert "PROJECTION pool_day" in store.scalar(create, {"t": stage.name})


def test_every_derived_part_carries_the_projection(demo):
    parts = demo.store.rows("SELECT name FROM system.parts WHERE database = currentDatabase() "
                            "AND table = 'gpu_cost_day' AND active ORDER BY name")
    projected = demo.store.rows("SELECT parent_name FROM system.projection_parts WHERE database = currentDatabase() "
                                "AND table = 'gpu_cost_day' AND name = 'pool_day' AND active ORDER BY parent_name")
    assert parts and projected == parts


@pytest.mark.parametrize("name", PROJECTED)
def test_pool_queries_read_the_projection_and_give_the_rows_numbers(demo, name):
    f = parse({"range": "30d"}, (demo.end - timedelta(hours=1)).date() + timedelta(days=1))
    text, params = queries.query_sql(name), f.params()
    # force_optimize_projection: the engine refuses the query unless a projection answers it
    used = demo.store.client.query_df(text, parameters=params, settings={"force_optimize_projection": 1})
    rows = demo.store.client.query_df(text, parameters=params, settings={"optimize_use_projections": 0})
    assert len(used) > 10
    keys = [c for c in used.columns if not pd.api.types.is_float_dtype(used[c])]
    used, rows = (df.sort_values(keys).reset_index(drop=True) for df in (used, rows))
    pd.testing.assert_frame_equal(used, rows, check_exact=False, rtol=1e-9)
