"""Numbered, recorded, append-only schema migrations from ``sql/migrations/NNN_name.sql``, and
the views from ``sql/views/``.

``migrate(store)`` applies, in order, every migration the store has not recorded in
``schema_migrations``; it is idempotent, refuses a store whose schema is newer than this code,
and refuses a recorded migration whose file has since been edited (add a new one instead).
``apply_views(store)`` then (re)creates every view, so a view is changed by editing its file.
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

from base.errors import MigrationError
from base.sqlfiles import MIGRATIONS_DIR, migration_files, split_statements, sql, view_files

log = logging.getLogger(__name__)

MIGRATIONS_TABLE = split_statements(sql("store/schema_migrations"))[0]


# Migrations rewritten once, when their views moved to sql/views/ (tables unchanged): the
# checksums a store migrated before that recorded for them are still theirs.
REWRITTEN = {
    2: "a2a1c1b9f9750f567ae0c925169bdb2cae60a7d2589d8b6cb9afd38c7ba59b0a",
    6: "db45903cbf7c98e47bb286eb166dbf27b2bdf34eaad07acdb822e89b518ab36f",
    8: "a89a2b35462fd3be6de7678844b52b10889a956e983f1f6b38e78de64c8baabc",
}


def checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def applied(store) -> dict[int, tuple[str, str]]:
    """version -> (name, checksum) of what the store has recorded."""
    store.command(MIGRATIONS_TABLE)
    rows = store.rows("SELECT version, argMax(name, applied_at), argMax(checksum, applied_at) FROM schema_migrations GROUP BY version")
    return {int(v): (name, digest) for v, name, digest in rows}


def pending(store, sql_dir: Path = MIGRATIONS_DIR) -> list[tuple[int, str, Path]]:
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
        if version in done and done[version][1] not in (checksum(path), REWRITTEN.get(version)):
            raise MigrationError(
                f"migration {path.name} was edited after it was applied to {store.target}. Applied "
                "migrations are never edited: restore the file and add a new numbered migration."
            )
    return [(v, name, path) for v, name, path in files if v not in done]


def migrate(store, sql_dir: Path = MIGRATIONS_DIR, transform: Callable[[str], str] = lambda s: s) -> list[str]:
    """Apply pending migrations; return the names applied (empty when up to date)."""
    done = []
    for version, name, path in pending(store, sql_dir):
        log.info("applying migration %03d_%s", version, name)
        for statement in split_statements(path.read_text()):
            try:
                store.command(transform(statement))
            except Exception as exc:
                raise MigrationError(f"migration {path.name} failed on {store.target}: {exc}") from exc
        store.insert(
            "schema_migrations", [[version, name, checksum(path)]], ["version", "name", "checksum"]
        )
        done.append(path.name)
    return done


def schema_version(store) -> int:
    return max(applied(store), default=0)


def apply_views(store, transform: Callable[[str], str] = lambda s: s) -> None:
    """Create or replace every view of ``sql/views/``, each after the views it reads."""
    for name, statement in view_files():
        try:
            store.command(transform(statement))
        except Exception as exc:
            raise MigrationError(f"view {name} (sql/views/{name}.sql) failed on {store.target}: {exc}") from exc
