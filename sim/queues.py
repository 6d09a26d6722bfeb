"""The demo's scheduler queues: jobs that wait for the on-prem pools' GPUs, read every ``every_s``.

Waiting demand follows Helios' pending GPUs by hour of week (``TraceShapes.pending_week``): in
an hour whose weight is ``w`` (the week's mean is 1), jobs arrive at ``ARRIVALS_PER_HOUR`` × w
per on-prem pool and wait ``WAIT_HOURS[pool]`` × w on average (exponential; the H100 pool, the
one the simulated teams crowd, waits longest), asking for 1, 2, 4 or 8 GPUs. The teams are the
on-prem teams (research and applied-ml ask most). Slurm pools are read as Slurm, the others as
Kubernetes. Deterministic for a fleet's seed.
"""
from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from collector.queues import PendingJob

ARRIVALS_PER_HOUR = 0.5
WAIT_HOURS = {"dgx-h100": 0.8}            # other pools: DEFAULT_WAIT_HOURS
DEFAULT_WAIT_HOURS = 0.1
TEAMS = ("research", "research", "applied-ml", "applied-ml", "clinical-ai", "data-science")
GPU_ASKS = (1, 2, 4, 8)
HOUR = 3600


def queue_reads(fleet, days: int, end: datetime, every_s: int = 600) -> list[tuple[str, str, datetime, list[PendingJob]]]:
    """(scheduler, cluster, read time, the jobs pending then) for every read over ``days`` before ``end``."""
    rng = np.random.default_rng([fleet.seed, 6])
    t1 = int(end.timestamp()) // every_s * every_s
    t0 = t1 - days * 86400
    weights = fleet.shapes.pending_week / fleet.shapes.pending_week.mean()
    reads = []
    for pool in (p for p in fleet.pools if p.environment == "onprem"):
        scheduler = "slurm" if pool.scheduler == "slurm" else "kubernetes"
        jobs = []                                  # (submitted, leaves, PendingJob)
        for hour in range(t0 // HOUR, t1 // HOUR):
            w = float(weights[hour % 168])
            for _ in range(int(rng.poisson(ARRIVALS_PER_HOUR * w))):
                submitted = hour * HOUR + int(rng.integers(0, HOUR))
                wait = int(rng.exponential(WAIT_HOURS.get(pool.name, DEFAULT_WAIT_HOURS) * w) * HOUR)
                team = TEAMS[int(rng.integers(0, len(TEAMS)))]
                job_id = f"{pool.name}-{len(jobs) + 1}" if scheduler == "slurm" else f"{team}/{pool.name}-train-{len(jobs) + 1}"
                jobs.append((submitted, submitted + wait, PendingJob(
                    scheduler, job_id, pool.name, team, "", float(GPU_ASKS[int(rng.integers(0, 4))]), "",
                    "Resources" if scheduler == "slurm" else "Unschedulable",
                    datetime.fromtimestamp(submitted, timezone.utc))))
        for t in range(t0 + every_s, t1 + 1, every_s):
            waiting = [job for submitted, leaves, job in jobs if submitted <= t < leaves]
            reads.append((scheduler, pool.cluster, datetime.fromtimestamp(t, timezone.utc), waiting))
    return reads

