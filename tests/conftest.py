"""Fixtures for every folder: one embedded ClickHouse per test session, a fresh database per test,
the project's shared sample data, the demo fleet, a quiet progress callback. (Shared helpers that
are not fixtures are in ``tests/helpers.py``.)

chDB hosts one engine directory per process, so every test that needs a store must use the
``store`` fixture (or ``store_dsn``) here rather than opening its own directory.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.helpers import ROOT

SHARED_DATA = ROOT.parent / "shared" / "data"
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


@pytest.fixture
def quiet():
    """A progress callback that keeps the lines instead of printing them."""
    lines: list[str] = []
    return lines.append


@pytest.fixture(scope="session")
def demo(store_dir, tmp_path_factory):
    """The default demo fleet (64 GPUs × 30 days at 60 s), loaded through the real ingest paths
    and derived, in its own database; shared by every test that reads demo data.

    Yields a namespace with ``store``, ``cfg`` (the demo's config), ``planted`` (the simulator's
    manifest of planted problems), ``end`` and ``files``.
    """
    from types import SimpleNamespace

    from gpuledger import config as configuration
    from gpuledger.demo import live_rounds, load_queues, write_simulation
    from ingest.billing.load import ingest_billing
    from ingest.rollup.run import rollup
    from ingest.samples import ingest_samples
    from ingest.schema import prepare
    from ingest.store import connect

    work = tmp_path_factory.mktemp("demo")
    files = write_simulation(work, gpus=64, days=30, interval_s=60, seed=7, progress=lambda m: None)
    cfg = configuration.load(str(files["config"]), env={})
    store = connect(f"chdb://{store_dir}?database=demo_data")
    prepare(store)
    ingest_samples(store, files["samples"], progress=lambda m: None)
    ingest_billing(store, files["billing"], progress=lambda m: None)
    live_rounds(store, files["fleet"], files["end"], 60, progress=lambda m: None)
    load_queues(store, files["fleet"], 30, files["end"], cfg.queues)
    rollup(store, cfg, progress=lambda m: None, now=files["end"])
    yield SimpleNamespace(store=store, cfg=cfg, planted=files["planted"], end=files["end"], files=files)
