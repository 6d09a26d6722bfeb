"""Bringing a store to this code's schema: migrations plus settings that come from config."""
from __future__ import annotations

import logging
import re

from ingest.migrations import migrate

log = logging.getLogger(__name__)


def prepare(store, raw_retention_days: int | None = None) -> list[str]:
    """Apply pending migrations and the configured raw-data retention; return what was applied."""
    applied = migrate(store)
    if raw_retention_days:
        set_retention(store, raw_retention_days)
    return applied


def set_retention(store, days: int) -> None:
    ddl = store.scalar(
        "SELECT create_table_query FROM system.tables WHERE database = currentDatabase() AND name = 'gpu_samples'"
    ) or ""
    current = re.search(r"TTL toDateTime\(ts\) \+ (?:INTERVAL|toIntervalDay\()\s*(\d+)", ddl)
    if current and int(current.group(1)) == days:
        return
    log.info("setting gpu_samples raw retention to %d days", days)
    store.command(f"ALTER TABLE gpu_samples MODIFY TTL toDateTime(ts) + INTERVAL {int(days)} DAY")
