"""Bringing a store to this code's schema: migrations, views, and settings that come from config."""
from __future__ import annotations

import logging
import re

from ingest.migrations import apply_views, migrate
from ingest.store import Store, connect

log = logging.getLogger(__name__)


def open_store(dsn: str, raw_retention_days: int | None = None, cluster: str = "", cluster_http_port: int = 0) -> Store:
    """Connect to the store at ``dsn`` and bring its schema up to date: the one way every
    command, the platform and an agent writing to a server open a store. With ``cluster``, the
    store is that ClickHouse cluster (``ingest/cluster_store.py``) and the schema its variant."""
    if cluster:
        from ingest.cluster_store import connect_cluster

        store = connect_cluster(dsn, cluster, cluster_http_port)
    else:
        store = connect(dsn)
    applied = prepare(store, raw_retention_days)
    if applied:
        log.info("applied migrations to %s: %s", store.target, ", ".join(applied))
    return store


def prepare(store, raw_retention_days: int | None = None) -> list[str]:
    """Apply pending migrations, the views and the configured raw-data retention, and drop staging
    tables a killed process left behind; return the migrations applied.

    The embedded store is held by one process at a time, so every staging table found when it
    opens is a dead one's. A server is shared with other writers, whose staging tables may be live:
    only those over a day old are dropped there."""
    applied = migrate(store)
    apply_views(store)
    store.drop_stale_stages(0 if store.target.embedded else 86_400)
    if raw_retention_days:
        set_retention(store, raw_retention_days)
    return applied


def set_retention(store, days: int) -> None:
    local = getattr(store, "local_name", lambda t: t)("gpu_samples")     # a cluster: the TTL is on gpu_samples_local
    ddl = store.scalar(
        "SELECT create_table_query FROM system.tables WHERE database = currentDatabase() AND name = {t:String}", {"t": local}
    ) or ""
    current = re.search(r"TTL toDateTime\(ts\) \+ (?:INTERVAL|toIntervalDay\()\s*(\d+)", ddl)
    if current and int(current.group(1)) == days:
        return
    log.info("setting gpu_samples raw retention to %d days", days)
    store.command(f"ALTER TABLE gpu_samples MODIFY TTL toDateTime(ts) + INTERVAL {int(days)} DAY")
