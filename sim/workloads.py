"""Workload patterns: what fills each lane during one week.

Every generator takes a lane, the week ``[t0, t1)`` in epoch seconds and a generator seeded by
(fleet seed, lane, week), and returns jobs. On-prem lanes are always held: jobs follow each
other with scheduling gaps of one to eight minutes (never at a week edge), so unheld capacity
outside the planted windows never lasts 15 minutes. Cloud lanes run only during their jobs: the
instance starts with the job and stops after it.

Utilization modes (see ``frames``): FLAT follows the Helios allocation ratio, DIURNAL a daily
cycle in the host's local time, ACTIVE the Philly active-node ratio, IDLE stays at 0-2 %.
Every mode but IDLE is clipped to at least 10 %, well above the 5 % idle threshold.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import ids
from .catalog import TEAMS
from .fleet import Fleet

HOUR = 3600
DAY = 86400
MODE_FLAT, MODE_DIURNAL, MODE_ACTIVE, MODE_IDLE = 0, 1, 2, 3
GAP_S = (60, 480)
SLURM_LAYOUTS = ((4, 4), (4, 2, 2), (2, 2, 2, 2), (4, 2, 1, 1))
_IMAGES = {t.name: t.image for t in TEAMS}
_USERS = {t.name: t.users for t in TEAMS}


@dataclass(frozen=True)
class Job:
    """A workload holding some GPU entities during ``[start, end)``; field names follow the
    owner columns of ``gpu_samples``."""

    start: int
    end: int
    entities: tuple[int, ...]
    team: str
    user: str
    job_id: str
    k8s_namespace: str
    k8s_pod: str
    slurm_account: str
    image: str
    mode: int
    base: float
    amp: float
    mem_frac: float
    mem_ratio: float
    procs: int = 1


def lane_week_jobs(fleet: Fleet, lane_no: int, t0: int, t1: int) -> list[Job]:
    """The jobs of lane ``lane_no`` during the week starting at ``t0``."""
    lane = fleet.lanes[lane_no]
    rng = np.random.default_rng([fleet.seed, 2, lane_no, t0 // DAY])
    return GENERATORS[lane.kind](fleet, lane, t0, t1, rng)


def make_job(fleet: Fleet, entities, start, end, team, prefix, rng, *, mode,
             base, amp=0.0, mem_frac=0.8, mem_ratio=0.5, user=None) -> Job:
    """A job with owner fields in the style of the scheduler of the entities' pool."""
    scheduler = fleet.pool(fleet.entities[entities[0]].pool).scheduler
    user = user or str(rng.choice(_USERS[team]))
    if scheduler == "slurm":
        job_id = str(int(rng.integers(1_000_000, 9_999_999)))
        namespace = pod = ""
        account = team
    else:
        job_id = f"{prefix}-{ids.hex_digits(rng, 6)}"
        namespace, pod = (team, f"{job_id}-0") if scheduler == "k8s" else ("", "")
        account = ""
    return Job(int(start), int(end), tuple(entities), team, user, job_id, namespace, pod, account,
               _IMAGES[team], mode, float(base), float(amp), float(mem_frac), float(mem_ratio))


def back_to_back(t0: int, t1: int, rng, median_s: float, lo_s: float, hi_s: float,
                 sigma: float, gap=GAP_S) -> list[tuple[int, int]]:
    """Job spans filling ``[t0, t1)``: lognormal lengths, short gaps between (none at t0)."""
    spans, t = [], t0
    while t < t1:
        length = float(np.clip(median_s * np.exp(sigma * rng.standard_normal()), lo_s, hi_s))
        end = min(t + int(length), t1)
        spans.append((t, end))
        t = end + int(rng.integers(gap[0], gap[1] + 1))
    return spans


def baseline(fleet, lane, t0, t1, rng) -> list[Job]:
    """Steady pre-training on whole DGX hosts: day-long jobs, 80-95 % busy."""
    sigma = fleet.shapes.runtime_sigma
    return [make_job(fleet, lane.entities, s, e, "research", "pretrain", rng,
                     mode=MODE_FLAT, base=rng.uniform(80, 95), mem_frac=rng.uniform(0.75, 0.95),
                     mem_ratio=rng.uniform(0.45, 0.7))
            for s, e in back_to_back(t0, t1, rng, 20 * HOUR, 4 * HOUR, 72 * HOUR, sigma)]


def slurm(fleet, lane, t0, t1, rng) -> list[Job]:
    """Mixed Slurm jobs: one whole-host job at a time with the Helios share of >= 8-GPU jobs,
    otherwise smaller jobs side by side; experimentation and regulated work share the host."""
    if rng.random() < fleet.shapes.frac_ge8:
        sizes = (len(lane.entities),)
    else:
        sizes = SLURM_LAYOUTS[int(rng.integers(len(SLURM_LAYOUTS)))]
    jobs, first = [], 0
    for size in sizes:
        group = lane.entities[first:first + size]
        first += size
        for s, e in back_to_back(t0, t1, rng, 2.5 * HOUR, 0.5 * HOUR, 24 * HOUR,
                                 fleet.shapes.runtime_sigma):
            team = "applied-ml" if rng.random() < 0.65 else "clinical-ai"
            jobs.append(make_job(fleet, group, s, e, team, "sbatch", rng, mode=MODE_ACTIVE,
                                 base=rng.uniform(40, 92), mem_frac=rng.uniform(0.3, 0.9),
                                 mem_ratio=rng.uniform(0.3, 0.7)))
    return jobs


def mig_inference(fleet, lane, t0, t1, rng) -> list[Job]:
    """Inference deployments on large MIG slices: days long, diurnal load."""
    return [make_job(fleet, lane.entities, s, e, "search-inference", "ranker-serving", rng,
                     mode=MODE_DIURNAL, base=rng.uniform(25, 40), amp=rng.uniform(20, 35),
                     mem_frac=rng.uniform(0.5, 0.8), mem_ratio=rng.uniform(0.3, 0.5))
            for s, e in back_to_back(t0, t1, rng, 3 * DAY, DAY, 7 * DAY, 0.5, gap=(60, 180))]


def mig_dev(fleet, lane, t0, t1, rng) -> list[Job]:
    """Experiments and active notebooks on 1g slices."""
    return [make_job(fleet, lane.entities, s, e, "data-science", "exp", rng,
                     mode=MODE_ACTIVE, base=rng.uniform(25, 60), mem_frac=rng.uniform(0.3, 0.9),
                     mem_ratio=rng.uniform(0.3, 0.6))
            for s, e in back_to_back(t0, t1, rng, 3 * HOUR, 0.5 * HOUR, 10 * HOUR,
                                     fleet.shapes.runtime_sigma)]


def finetune(fleet, lane, t0, t1, rng) -> list[Job]:
    """Cloud fine-tuning bursts: 1-3 per week, 6-40 h each, starting where on-prem demand
    queues (Helios pending GPUs by hour of week)."""
    weights = fleet.shapes.pending_week[(t0 // HOUR + np.arange(168)) % 168]
    weights = weights / weights.sum()
    busy = np.zeros(168, dtype=bool)
    jobs = []
    for _ in range(int(rng.integers(1, 4))):
        hours = int(rng.integers(6, 41))
        start_h = int(rng.choice(168, p=weights))
        end_h = min(start_h + hours, 168)
        if busy[max(0, start_h - 1):end_h + 1].any():
            continue
        busy[start_h:end_h] = True
        jobs.append(make_job(fleet, lane.entities, t0 + start_h * HOUR, t0 + end_h * HOUR,
                             "llm-finetune", "ft", rng, mode=MODE_FLAT, base=rng.uniform(75, 95),
                             mem_frac=rng.uniform(0.8, 0.95), mem_ratio=rng.uniform(0.5, 0.75)))
    return sorted(jobs, key=lambda j: j.start)


def inference(fleet, lane, t0, t1, rng) -> list[Job]:
    """Cloud inference scaled with the day: up 07:00-21:00 local time, every day."""
    inst = fleet.instances[lane.instance]
    offset = fleet.entities[lane.entities[0]].utc_offset_h
    jobs = []
    for day in range(7):
        start = t0 + day * DAY + (7 - offset) * HOUR
        start, end = max(start, t0), min(start + 14 * HOUR, t1)
        if end - start >= HOUR:
            jobs.append(make_job(fleet, lane.entities, start, end, inst.team, "serving", rng,
                                 mode=MODE_DIURNAL, base=rng.uniform(25, 35),
                                 amp=rng.uniform(25, 35), mem_frac=rng.uniform(0.5, 0.8),
                                 mem_ratio=rng.uniform(0.3, 0.5)))
    return jobs


def regulated(fleet, lane, t0, t1, rng) -> list[Job]:
    """Regulated-data experiments in the one allowed cloud region: most weekdays, office hours."""
    inst = fleet.instances[lane.instance]
    offset = fleet.entities[lane.entities[0]].utc_offset_h
    jobs = []
    for day in range(5):
        if rng.random() < 0.7:
            start = max(t0, t0 + day * DAY + (8 - offset) * HOUR)
            jobs.append(make_job(fleet, lane.entities, start, min(start + 10 * HOUR, t1),
                                 inst.team, "cohort", rng, mode=MODE_ACTIVE,
                                 base=rng.uniform(40, 85), mem_frac=rng.uniform(0.4, 0.9),
                                 mem_ratio=rng.uniform(0.3, 0.6)))
    return jobs


def planted_only(fleet, lane, t0, t1, rng) -> list[Job]:
    """Instances that run only inside their planted problem."""
    return []


GENERATORS = {
    "baseline": baseline,
    "slurm": slurm,
    "mig_inference": mig_inference,
    "mig_dev": mig_dev,
    "finetune": finetune,
    "inference": inference,
    "regulated": regulated,
    "planted": planted_only,
}
