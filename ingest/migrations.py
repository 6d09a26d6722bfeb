"""Numbered, recorded, append-only schema migrations from ``sql/NNN_name.sql``.

``migrate(store)`` applies, in order, every migration the store has not recorded in
``schema_migrations``; it is idempotent, refuses a store whose schema is newer than this code,
and refuses a recorded migration whose file has since been edited (add a new one instead).
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

from gpuledger.errors import MigrationError
from ingest.sqlfiles import SQL_DIR, migration_files, split_statements

log = logging.getLogger(__name__)

MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations
(
    version    UInt32,
    name       String,
    checksum   String,
    applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(applied_at)
ORDER BY version
"""


def checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def applied(store) -> dict[int, tuple[str, str]]:
    """version -> (name, checksum) of what the store has recorded."""
    store.command(MIGRATIONS_TABLE)
    rows = store.rows("SELECT version, argMax(name, applied_at), argMax(checksum, applied_at) FROM schema_migrations GROUP BY version")
    return {int(v): (name, digest) for v, name, digest in rows}


def pending(store, sql_dir: Path = SQL_DIR) -> list[tuple[int, str, Path]]:
    """Migrations to apply, after checking the store is not ahead of or diverged from the code."""
    files = migration_files(sql_dir)
    done = applied(store)
    known = {v for v, _, _ in files}
    newest_code = max(known, default=0)
    ahead = sorted(v for v in done if v not in known)
    if ahead:
        raise MigrationError(
            f"the store {store.target} has schema version {max(ahead)}, newer than this gpuledger knows "
            f"(up to {newest_code}). Upgrade gpuledger before using this store."
        )
    for version, _, path in files:
        if version in done and done[version][1] != checksum(path):
            raise MigrationError(
                f"migration {path.name} was edited after it was applied to {store.target}. Applied "
                "migrations are never edited: restore the file and add a new numbered migration."
            )
    return [(v, name, path) for v, name, path in files if v not in done]


def migrate(store, sql_dir: Path = SQL_DIR, transform: Callable[[str], str] = lambda s: s) -> list[str]:
    """Apply pending migrations; return the names applied (empty when up to date)."""
    done = []
    for version, name, path in pending(store, sql_dir):
        log.info("applying migration %03d_%s", version, name)
        for statement in split_statements(path.read_text()):
            try:
                store.command(transform(statement))
            except Exception as exc:
                raise MigrationError(f"migration {path.name} failed on {store.target}: {exc}") from exc
        store.client.insert(
            "schema_migrations", [[version, name, checksum(path)]], column_names=["version", "name", "checksum"]
        )
        done.append(path.name)
    return done


def schema_version(store) -> int:
    return max(applied(store), default=0)
