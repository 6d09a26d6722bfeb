"""Faults: real gpuledger processes SIGKILLed mid-work and restarted — nothing lost, nothing
doubled — and the agent's spool on a disk that fills up.

* ``gpuledger ingest samples`` killed mid-load, run again: every file stored exactly once;
* ``gpuledger rollup`` killed mid-derivation (and again mid-idle-windows), run again: the
  derived tables equal a clean ``rollup --force`` of the same days, and no day's rows double;
* processes SIGKILLed inside a staging table: the next start drops every one they left;
* ``gpuledger up`` killed while 3 agents push, restarted: every round stored exactly once;
* the spool on a 1 MB tmpfs: past ``spool_max_mb`` the oldest batches are dropped, counted,
  logged and exported, the agent goes on, and what was kept arrives exactly once; with a limit
  larger than the disk, the same must hold when the disk itself is full.
"""
from __future__ import annotations

import logging
import re
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers import T0, TOKEN, Proc, agent_batch, free_port, gpuledger, query, start_up, up_config

END = datetime(2026, 2, 20, tzinfo=timezone.utc)
DAYS = 6


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """A small simulated fleet: one Parquet file per day, FOCUS bills, and its config."""
    from gpuledger.demo import write_simulation

    work = tmp_path_factory.mktemp("sim")
    files = write_simulation(work, gpus=16, days=DAYS, interval_s=60, seed=11, end=END, progress=lambda m: None)
    rows = sum(pq.read_metadata(p).num_rows for p in files["samples"])
    return {"dir": work, "samples": work / "samples", "billing": work / "billing", "config": files["config"],
            "files": len(files["samples"]), "rows": rows}


def sample_counts(store: Path) -> dict:
    [row] = query(store, "SELECT count() AS n, uniqExact(host, gpu_uuid, mig_instance, ts) AS distinct_rows, "
                         "(SELECT uniqExact(sha256) FROM ingested_files) AS files, "
                         "(SELECT count() FROM system.tables WHERE database = currentDatabase() AND name LIKE '\\_stage%') AS stages "
                         "FROM gpu_samples")
    return row


def test_ingest_samples_killed_mid_load_then_run_again_stores_every_file_once(tmp_path, sim):
    store = tmp_path / "store"
    kills = []
    for new_files in (1, 2):                         # SIGKILL while loading the next file, twice
        proc = gpuledger(store, "ingest", "samples", str(sim["samples"]))
        proc.wait_for(" rows", n=new_files, timeout_s=120)
        time.sleep(0.15)
        proc.kill()
        kills.append(proc.count(" rows"))
    final = gpuledger(store, "ingest", "samples", str(sim["samples"]))
    assert final.finish(300) == 0, final.tail()
    again = gpuledger(store, "ingest", "samples", str(sim["samples"]))          # a re-run changes nothing
    assert again.finish(300) == 0 and f"0 rows from 0 file(s); {sim['files']} already loaded" in again.tail()
    counts = sample_counts(store)
    lost, doubled = sim["rows"] - counts["distinct_rows"], counts["n"] - counts["distinct_rows"]
    print(f"\ningest samples: killed after {kills} files loaded, run to the end: {sim['files']} files, "
          f"{sim['rows']:,} rows expected, {counts['n']:,} stored: rows lost = {lost}, rows doubled = {doubled}; "
          f"{counts['stages']} staging tables left by the kills")
    assert lost == 0 and doubled == 0
    assert counts["files"] == sim["files"]


DERIVED = {
    "gpu_minute": ("toDate(minute)", "host, gpu_uuid, mig_instance, minute, team, user, job_id, k8s_namespace, k8s_pod, slurm_account"),
    "gpu_hour": ("toDate(hour)", "host, gpu_uuid, mig_instance, hour, team, user, job_id, k8s_namespace, k8s_pod, slurm_account"),
    "gpu_cost_hour": ("toDate(hour)", "host, gpu_uuid, mig_instance, hour, team, user, job_id"),
    "team_spend_day": ("day", "day, team, environment, cost_kind, currency"),
    "idle_windows": ("toDate(start)", "host, gpu_uuid, mig_instance, start"),
}


def derived_state(store: Path) -> dict:
    """Per table and day: rows, distinct keys, and a checksum of the numbers."""
    parts = []
    for table, (day, key) in DERIVED.items():
        value = "sum(cost)" if table == "team_spend_day" else "sum(duration_s)" if table == "idle_windows" else \
            "sum(cost_usd)" if table == "gpu_cost_hour" else "sum(covered_s)"
        parts.append(f"SELECT '{table}' AS t, toString({day}) AS d, count() AS n, uniqExact({key}) AS k, "
                     f"round({value}, 3) AS v FROM {table} GROUP BY d")
    rows = query(store, " UNION ALL ".join(parts))
    return {(r["t"], r["d"]): (int(r["n"]), int(r["k"]), float(r["v"])) for r in rows}


def test_rollup_killed_mid_derivation_then_run_again_matches_a_clean_derivation(tmp_path, sim):
    store = tmp_path / "store"
    for what in ("samples", "billing"):
        load = gpuledger(store, "ingest", what, str(sim[what]), config=sim["config"])
        assert load.finish(300) == 0, load.tail()
    span = ["--since", (END - timedelta(days=DAYS + 1)).date().isoformat(), "--until", END.date().isoformat()]
    first = gpuledger(store, "rollup", *span, config=sim["config"])
    first.wait_for("derived 20", n=2, timeout_s=180)                  # two days done, the third under way
    first.kill()
    second = gpuledger(store, "rollup", *span, config=sim["config"])
    second.wait_for("] derived", timeout_s=180)
    total = int(re.search(r"\[\d+/(\d+)\] derived", next(line for line in second.lines if "] derived" in line)).group(1))
    second.wait_for(f"[{total}/{total}] derived", timeout_s=180)
    time.sleep(0.2)                                                    # into idle windows / compliance
    running = second.p.poll() is None
    second.kill()
    third = gpuledger(store, "rollup", *span, config=sim["config"])
    assert third.finish(300) == 0, third.tail()
    recovered = derived_state(store)
    clean = gpuledger(store, "rollup", *span, "--force", config=sim["config"])
    assert clean.finish(300) == 0, clean.tail()
    reference = derived_state(store)
    doubled = {k: v for k, v in recovered.items() if v[0] != v[1]}
    differs = {k: (recovered.get(k), reference.get(k)) for k in set(recovered) | set(reference)
               if recovered.get(k) != reference.get(k)}
    lost = sum(max(0, ref[0] - recovered.get(k, (0,))[0]) for k, ref in reference.items())
    extra = sum(max(0, rec[0] - reference.get(k, (0,))[0]) for k, rec in recovered.items())
    print(f"\nrollup: killed mid-day, then {'mid-idle-windows' if running else 'after it had finished'}, run again; vs a clean --force derivation of "
          f"{len(reference)} table-days: rows lost = {lost}, rows doubled = {extra + sum(v[0] - v[1] for v in doubled.values())}")
    assert not doubled, f"days whose derived rows double: {sorted(doubled)[:10]}"
    assert not differs, f"table-days that differ from a clean derivation (recovered, clean): {sorted(differs.items())[:10]}"


STAGES = ("from ingest.store import connect, STAGE_PREFIX; s = connect('chdb://{store}'); "
          "print('stages', s.scalar(\"SELECT count() FROM system.tables WHERE database = currentDatabase() "
          "AND startsWith(name, '\" + STAGE_PREFIX + \"')\"))")


def staging_tables(store: Path) -> int:
    """Staging tables in the store, counted without opening it the usual way (which sweeps them)."""
    proc = Proc(["-c", STAGES.format(store=store)])
    proc.wait_for("stages ", prefix=True, timeout_s=60)
    return int(next(line for line in proc.lines if line.startswith("stages ")).split()[1])


def test_staging_tables_left_by_a_killed_rollup_are_swept_at_the_next_start(tmp_path):
    store = tmp_path / "store"
    init = gpuledger(store, "init")
    assert init.finish(120) == 0, init.tail()
    for table in ("gpu_hour", "idle_windows", "compliance_findings"):   # killed inside Store.staging
        killed = Proc(["-c", "import os, signal; from ingest.store import connect; "
                             f"s = connect('chdb://{store}'); "
                             f"cm = s.staging('{table}'); cm.__enter__(); print('staged', flush=True); "
                             "os.kill(os.getpid(), signal.SIGKILL)"])
        killed.wait_for("staged", timeout_s=120)
        assert killed.finish(60) == -9, killed.tail()
    left = staging_tables(store)
    start = gpuledger(store, "rollup")
    assert start.finish(300) == 0, start.tail()
    after = staging_tables(store)
    print(f"\nstaging tables left by 3 processes SIGKILLed mid-stage: {left}; after the next start: {after}")
    assert left == 3 and after == 0


def test_up_killed_mid_ingest_then_restarted_stores_every_round_once(tmp_path):
    store, config = tmp_path / "store", up_config(tmp_path / "gpuledger.toml")
    port = free_port()
    agents, rounds = 3, 60
    platform, url = start_up(store, config, port=port)
    senders = [Proc(["-m", "tests.agent_proc", str(tmp_path / f"spool{a}"), url, "0", str(rounds), "--agent", str(a),
                     "--every", "0.05"]) for a in range(agents)]
    try:
        deadline = time.monotonic() + 60
        while sum(s.count("sent ", prefix=True) for s in senders) < agents * rounds // 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        stored_before_kill = sum(s.count("sent ", prefix=True) for s in senders)
        platform.kill()                                               # mid-ingest: requests in flight
        time.sleep(1.0)                                               # agents spool and retry meanwhile
        platform, _ = start_up(store, config, port=port)
        for s in senders:
            s.wait_for("drained", timeout_s=180, prefix=True)
            assert s.finish(30) == 0, s.tail()
    finally:
        for s in senders:
            if s.p.poll() is None:
                s.kill()
        platform.stop()
    [counts] = query(store, "SELECT count() AS n, uniqExact(host, gpu_uuid, ts) AS distinct_rows FROM gpu_samples")
    expected = agents * rounds * 8
    lost, doubled = expected - counts["distinct_rows"], counts["n"] - counts["distinct_rows"]
    print(f"\nup killed mid-ingest after {stored_before_kill} of {agents * rounds} batches, restarted: {expected} rows "
          f"expected, {counts['n']} stored: rows lost = {lost}, rows doubled = {doubled}")
    assert lost == 0 and doubled == 0


# ---- the spool on a small disk ----------------------------------------------------------------

SHIPPERS: list = []


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MB tmpfs (root can mount one); otherwise a plain directory (the limit is then all we test)."""
    path = tmp_path / "disk"
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)],
                             capture_output=True).returncode == 0
    yield path, mounted
    while SHIPPERS:
        SHIPPERS.pop().stop(drain_s=0)
    if mounted:
        subprocess.run(["umount", "-l", str(path)], check=False)


def run_agent_against_a_dead_platform(spool_dir: Path, max_mb: float, rounds: int, caplog):
    """The collector composition with a fake 8-GPU node, pushing to a port nobody listens on."""
    import gzip

    from collector.batches import Batch
    from collector.shipper import PushDestination, Shipper
    from collector.spool import Spool

    spool = Spool(spool_dir, max_bytes=int(max_mb * 1024 * 1024))
    shipper = Shipper(spool, PushDestination(f"http://127.0.0.1:{free_port()}", "t", timeout_s=1),
                      min_backoff_s=0.05, max_backoff_s=0.1).start()
    SHIPPERS.append(shipper)
    errors = 0
    with caplog.at_level(logging.WARNING):
        for r in range(rounds):
            try:
                spool.append(Batch.from_json(gzip.decompress(agent_batch(7, r)[1])))
            except OSError:
                errors += 1                      # the agent logs and counts these as round errors
            shipper.wake()
    return spool, shipper, errors


def exported(spool, shipper) -> dict:
    from prometheus_client import generate_latest

    from collector.agent import Agent

    agent = Agent(None, unavailable="test: no NVML")
    agent.add_source(spool.collect)
    agent.add_source(shipper.collect)
    text = generate_latest(agent.registry).decode()
    return {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line and not line.startswith("#")}


def deliver_and_count(tmp_path, spool, shipper) -> dict:
    """Start a platform, point the spool's shipper at it, drain, and count what it stored."""
    from collector.shipper import PushDestination

    shipper.stop(drain_s=0)
    store = tmp_path / "store"
    proc, url = start_up(store, up_config(tmp_path / "gpuledger.toml"))
    try:
        shipper.destination = PushDestination(url, TOKEN, timeout_s=10)
        shipper._stop.clear()
        shipper.start()
        deadline = time.monotonic() + 120
        while len(spool) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(spool) == 0, f"{len(spool)} batches never left the spool"
        shipper.stop(drain_s=0)
    finally:
        proc.stop()
    [row] = query(store, "SELECT count() AS n, uniqExact(host, gpu_uuid, ts) AS distinct_rows, "
                         "toUnixTimestamp(min(ts)) AS first, toUnixTimestamp(max(ts)) AS last FROM gpu_samples")
    return row


def test_spool_limit_on_a_small_disk_drops_the_oldest_counted_logged_exported(tmp_path, small_disk, caplog):
    disk, mounted = small_disk
    rounds = 600                                        # ~1.5 MB of batches for a 0.5 MB spool
    spool, shipper, errors = run_agent_against_a_dead_platform(disk / "spool", 0.5, rounds, caplog)
    metrics = exported(spool, shipper)
    used = sum(p.stat().st_size for p in (disk / "spool").iterdir())
    dropped_logs = [r for r in caplog.records if "dropped batch" in r.getMessage()]
    print(f"\nspool limit 0.5 MB on a {'1 MB tmpfs' if mounted else 'plain directory'}: {rounds} rounds, "
          f"{spool.stats.dropped_batches} oldest batches dropped ({spool.stats.dropped_rows} rows), "
          f"{len(spool)} kept, {used / 1e6:.2f} MB on disk, {errors} append errors")
    assert errors == 0 and shipper._thread.is_alive()
    assert spool.stats.dropped_batches > 0 and spool.stats.dropped_rows == 8 * spool.stats.dropped_batches
    assert len(spool) + spool.stats.dropped_batches == rounds
    assert len(dropped_logs) == spool.stats.dropped_batches
    assert metrics["gpuledger_spool_dropped_batches_total"] == spool.stats.dropped_batches
    assert metrics["gpuledger_spool_dropped_rows_total"] == spool.stats.dropped_rows
    assert used <= spool.max_bytes + 2 * spool.segment_bytes
    kept = len(spool)
    stored = deliver_and_count(tmp_path, spool, shipper)
    assert stored["n"] == stored["distinct_rows"] == 8 * kept              # nothing doubled, nothing else lost
    first_kept = spool.stats.dropped_batches                                # the oldest went, the newest stayed
    assert stored["first"] == int(T0.timestamp()) + 10 * first_kept
    assert stored["last"] == int(T0.timestamp()) + 10 * (rounds - 1)


def test_spool_on_a_full_disk_goes_on_and_drops_the_oldest(tmp_path, small_disk, caplog):
    disk, mounted = small_disk
    limit_mb = 64 if mounted else 0.5                   # larger than the 1 MB disk: the disk fills first
    rounds = 700
    spool, shipper, errors = run_agent_against_a_dead_platform(disk / "spool", limit_mb, rounds, caplog)
    alive = shipper._thread.is_alive()
    print(f"\nspool limit {limit_mb} MB on a {'1 MB tmpfs (disk full)' if mounted else 'plain directory'}: "
          f"{rounds} rounds, {errors} rounds could not be spooled, {spool.stats.dropped_batches} dropped, "
          f"{len(spool)} kept, shipper {'running' if alive else 'DEAD'}")
    assert alive, "the shipper thread died on the full disk"
    assert errors == 0, f"{errors} rounds were refused by the full disk instead of the oldest being dropped"
    assert spool.stats.dropped_batches > 0 and len(spool) + spool.stats.dropped_batches == rounds
    kept = len(spool)
    stored = deliver_and_count(tmp_path, spool, shipper)
    assert stored["n"] == stored["distinct_rows"] == 8 * kept
