"""Shared fixtures: one embedded ClickHouse per test session, a fresh database per test.

chDB hosts one engine directory per process, so every test that needs a store must use the
``store`` fixture (or ``store_dsn``) here rather than opening its own directory.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
_counter = itertools.count()


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("chdb")


@pytest.fixture
def store_dsn(store_dir, request) -> str:
    """DSN of a fresh, empty database in the session's embedded store."""
    return f"chdb://{store_dir}?database=t{next(_counter)}_{request.node.name[:40].replace('[', '_').replace(']', '').replace('-', '_')}"


@pytest.fixture
def store(store_dsn):
    """A migrated store in a fresh database."""
    from ingest.schema import prepare
    from ingest.store import connect

    handle = connect(store_dsn)
    prepare(handle)
    yield handle
    handle.command(f"DROP DATABASE IF EXISTS `{handle.target.database}`")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    assert SHARED_DATA.is_dir(), f"expected the project's shared sample data at {SHARED_DATA}"
    return SHARED_DATA
