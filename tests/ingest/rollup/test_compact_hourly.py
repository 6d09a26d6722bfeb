"""The hourly rollups the GPU page reads one GPU of keep a day's part in one file up to 256 MiB
(sql/migrations/018_compact_hourly_parts.sql), and so do the staging copies the derivation swaps
days in from (on a cluster: tests/ingest/test_cluster.py)."""
from __future__ import annotations

import pytest

WIDE_FROM = 268435456


def create_query(store, table: str) -> str:
    return store.scalar("SELECT create_table_query FROM system.tables WHERE database = currentDatabase() "
                        "AND name = {t:String}", {"t": table})


@pytest.mark.parametrize("table", ["gpu_hour", "gpu_cost_hour"])
def test_hourly_rollups_and_their_stages_keep_parts_compact_up_to_256_mib(store, table):
    assert f"min_bytes_for_wide_part = {WIDE_FROM}" in create_query(store, table)
    with store.staging(table) as stage:                  # what the derivation swaps a day in from
        assert f"min_bytes_for_wide_part = {WIDE_FROM}" in create_query(store, stage.name)


def test_other_tables_keep_the_default(store):
    assert "min_bytes_for_wide_part" not in create_query(store, "gpu_minute")
