"""The demo's simulated queues (sim/queues.py) and their trip through the store to Placement."""
from __future__ import annotations

from datetime import timedelta

from sim.queues import queue_reads
from tests.sim.conftest import END


def test_reads_every_interval_of_every_on_prem_pool_with_the_jobs_waiting_then(fleet):
    reads = queue_reads(fleet, 2, END, every_s=600)
    pools = {p.name: p for p in fleet.pools if p.environment == "onprem"}
    # one read per pool every 10 minutes over the 2 days, Slurm pools read as Slurm
    assert len(reads) == len(pools) * 2 * 144
    assert {(s, c) for s, c, _, _ in reads} == {("slurm" if p.scheduler == "slurm" else "kubernetes", p.cluster)
                                                for p in pools.values()}
    assert {ts for _, _, ts, _ in reads} == {END - timedelta(seconds=600 * k) for k in range(288)}
    jobs = [j for _, _, ts, waiting in reads for j in waiting]
    assert jobs and all(j.pool in pools and j.gpus in (1, 2, 4, 8) for j in jobs)
    # a job is read only while it waits: after its submission, at consecutive reads
    seen: dict[str, list] = {}
    for _, _, ts, waiting in reads:
        for j in waiting:
            assert j.submitted <= ts
            seen.setdefault(j.job_id, []).append(ts)
    assert all(max(t) - min(t) == timedelta(seconds=600 * (len(t) - 1)) for t in seen.values())
    assert queue_reads(fleet, 2, END, every_s=600) == reads                       # deterministic


def test_the_crowded_pool_waits_longest(fleet):
    waits: dict[str, list[float]] = {}
    first: dict[str, tuple] = {}
    for _, _, ts, waiting in queue_reads(fleet, 14, END, every_s=600):
        for j in waiting:
            first.setdefault(j.job_id, (j.pool, j.submitted))
            waits.setdefault(j.job_id, []).append((ts - j.submitted).total_seconds())
    by_pool: dict[str, list[float]] = {}
    for job_id, w in waits.items():
        by_pool.setdefault(first[job_id][0], []).append(max(w))
    mean = {pool: sum(w) / len(w) for pool, w in by_pool.items()}
    assert max(mean, key=mean.get) == "dgx-h100"
