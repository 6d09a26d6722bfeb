"""Workload patterns: what fills each lane during one week.

Every generator takes a lane, the week ``[t0, t1)`` in epoch seconds and a generator seeded by
(fleet seed, lane, week), and returns jobs. On-prem lanes are always held: jobs follow each
other with scheduling gaps of one to eight minutes (never at a week edge), so unheld on-prem
capacity never lasts 15 minutes outside the planted windows. Cloud lanes run only during their
jobs: the instance starts with the job and stops after it, unless the job leaves it running
(``Job.idle_tail_s``).

Utilization modes (see ``frames``): FLAT follows the Helios allocation ratio, DIURNAL a daily
cycle in the host's local time (low at 04:00, high at 16:00), ACTIVE the Philly active-node
ratio, IDLE stays at 0-2 %. Every mode but IDLE is clipped to at least 10 %, well above the 5 %
idle threshold.

Natural waste, as a real fleet wastes (public traces put it at tens of percent of GPU spend),
drawn from the same seeded generators and kept off the entities of the planted idle windows
(``PlantTargets.idle_entities``), so a planted window is the only idle time on its GPU:

==================  ============================================================  ===========
pattern             what                                                          shows as
==================  ============================================================  ===========
notebook overnight  half the lane-weeks of each 1g.10gb MIG slice hold a          allocated
                    data-science Jupyter server from a weekday morning to a       idle
                    later weekday evening: used (ACTIVE) from 08:30-10:00 to      windows
                    17:00-20:00 local, IDLE every night between; 30 % of the
                    sessions that end on a Friday stay IDLE over the weekend
inference trough    every other cloud inference service keeps a replica up day    unused
                    and night, DIURNAL from 12-18 % at 04:00 local to 52-73 % at
                    16:00; MIG inference runs from 10-20 % to 50-75 %
half-used training  20 % of pre-training and 25 % of fine-tuning jobs run at      unused
                    40-60 % (input- or communication-bound)
left running        30 % of cloud fine-tuning jobs and 20 % of regulated-data     unallocated
                    sessions leave their instance up, unheld at 0 %, for 2-12     idle
                    whole hours after the job (billed, so the cost is real)       windows
==================  ============================================================  ===========

``sim.natural_idle_windows`` lists the idle windows these patterns make; together with the
planted ones they are every idle window of the history.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import ids
from .catalog import NOTEBOOK_TEAM, TEAMS
from .fleet import Fleet, Lane

HOUR = 3600
DAY = 86400
MODE_FLAT, MODE_DIURNAL, MODE_ACTIVE, MODE_IDLE = 0, 1, 2, 3
GAP_S = (60, 480)
SLURM_LAYOUTS = ((4, 4), (4, 2, 2), (2, 2, 2, 2), (4, 2, 1, 1))
NOTEBOOK_SHARE = 0.5        # of the lane-weeks of an eligible 1g.10gb MIG slice
NOTEBOOK_WEEKEND = 0.3      # of the sessions ending on Friday: left idle until Monday
HALF_USED_PRETRAIN = 0.2    # of pre-training jobs, at 40-60 %
HALF_USED_FINETUNE = 0.25   # of fine-tuning jobs, at 40-60 %
LEFT_RUNNING_FINETUNE = 0.3  # of fine-tuning jobs whose instance stays up afterwards
LEFT_RUNNING_REGULATED = 0.2  # of regulated-data sessions whose instance stays up afterwards
LEFT_RUNNING_HOURS = (2, 12)
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
    idle_tail_s: int = 0  # a cloud instance left running, unheld, this long after ``end``


def lane_week_jobs(fleet: Fleet, lane_no: int, t0: int, t1: int) -> list[Job]:
    """The jobs of lane ``lane_no`` during the week starting at ``t0``."""
    lane = fleet.lanes[lane_no]
    rng = np.random.default_rng([fleet.seed, 2, lane_no, t0 // DAY])
    return GENERATORS[lane.kind](fleet, lane, t0, t1, rng)


def make_job(fleet: Fleet, entities, start, end, team, prefix, rng, *, mode,
             base, amp=0.0, mem_frac=0.8, mem_ratio=0.5, user=None, idle_tail_s=0) -> Job:
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
               _IMAGES[team], mode, float(base), float(amp), float(mem_frac), float(mem_ratio),
               idle_tail_s=int(idle_tail_s))


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
    """Steady pre-training on whole DGX hosts: day-long jobs, 80-95 % busy, some half-used."""
    sigma = fleet.shapes.runtime_sigma
    return [make_job(fleet, lane.entities, s, e, "research", "pretrain", rng,
                     mode=MODE_FLAT, base=_training_load(rng, HALF_USED_PRETRAIN, 80, 95),
                     mem_frac=rng.uniform(0.75, 0.95), mem_ratio=rng.uniform(0.45, 0.7))
            for s, e in back_to_back(t0, t1, rng, 20 * HOUR, 4 * HOUR, 72 * HOUR, sigma)]


def _training_load(rng, half_used: float, lo: float, hi: float) -> float:
    """How hard a training job drives its GPUs: ``lo``-``hi`` %, or 40-60 % for the
    ``half_used`` share of jobs that wait on input or communication."""
    if rng.random() < half_used:
        return rng.uniform(40, 60)
    return rng.uniform(lo, hi)


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
    """Inference deployments on large MIG slices: days long, diurnal load from a night trough."""
    return [make_job(fleet, lane.entities, s, e, "search-inference", "ranker-serving", rng,
                     mode=MODE_DIURNAL, base=rng.uniform(10, 20), amp=rng.uniform(40, 55),
                     mem_frac=rng.uniform(0.5, 0.8), mem_ratio=rng.uniform(0.3, 0.5))
            for s, e in back_to_back(t0, t1, rng, 3 * DAY, DAY, 7 * DAY, 0.5, gap=(60, 180))]


def mig_dev(fleet, lane, t0, t1, rng) -> list[Job]:
    """Experiments on 1g slices; in some weeks a notebook session that idles overnight."""
    if rng.random() < NOTEBOOK_SHARE and not _carries_planted_idle(fleet, lane):
        return notebook_week(fleet, lane, t0, t1, rng)
    return experiments(fleet, lane, t0, t1, rng)


def experiments(fleet, lane, t0, t1, rng) -> list[Job]:
    """Back-to-back data-science experiments, half an hour to ten hours each."""
    return [make_job(fleet, lane.entities, s, e, NOTEBOOK_TEAM, "exp", rng,
                     mode=MODE_ACTIVE, base=rng.uniform(25, 60), mem_frac=rng.uniform(0.3, 0.9),
                     mem_ratio=rng.uniform(0.3, 0.6))
            for s, e in back_to_back(t0, t1, rng, 3 * HOUR, 0.5 * HOUR, 10 * HOUR,
                                     fleet.shapes.runtime_sigma)]


def notebook_week(fleet, lane, t0, t1, rng) -> list[Job]:
    """A Jupyter server held from a weekday morning to a later weekday evening (local time):
    used during the day, idle (0-2 %, memory held) every night between, sometimes left idle
    over the weekend; experiments before and after it. One job id throughout, so each night is
    one allocated idle window of the notebook's owner."""
    offset = fleet.entities[lane.entities[0]].utc_offset_h
    first, last = sorted(int(d) for d in rng.integers(0, 5, size=2))
    days = [(_local(t0, day, offset, rng, 510, 600), _local(t0, day, offset, rng, 1020, 1200))
            for day in range(first, last + 1)]
    weekend = last == 4 and rng.random() < NOTEBOOK_WEEKEND
    notebook = make_job(fleet, lane.entities, days[0][0], days[-1][1], NOTEBOOK_TEAM, "jupyter",
                        rng, mode=MODE_ACTIVE, base=rng.uniform(15, 45),
                        mem_frac=rng.uniform(0.3, 0.6), mem_ratio=rng.uniform(0.3, 0.6))
    session = []
    for n, (on, off) in enumerate(days):
        session.append(replace(notebook, start=on, end=off))
        night_end = days[n + 1][0] if n + 1 < len(days) else (t1 if weekend else off)
        if night_end > off:
            session.append(replace(notebook, start=off, end=night_end, mode=MODE_IDLE, base=1.0))
    before = experiments(fleet, lane, t0, session[0].start, rng)
    after = experiments(fleet, lane, session[-1].end, t1, rng)
    return before + session + after


def _local(t0: int, day: int, offset_h: int, rng, lo_min: int, hi_min: int) -> int:
    """Epoch second of a whole minute between ``lo_min`` and ``hi_min`` after local midnight
    of weekday ``day`` of the week starting at ``t0``."""
    return t0 + day * DAY - offset_h * HOUR + 60 * int(rng.integers(lo_min, hi_min + 1))


def _carries_planted_idle(fleet: Fleet, lane: Lane) -> bool:
    return not fleet.plant.idle_entities().isdisjoint(lane.entities)


def finetune(fleet, lane, t0, t1, rng) -> list[Job]:
    """Cloud fine-tuning bursts: 1-3 per week, 6-40 h each, starting where on-prem demand
    queues (Helios pending GPUs by hour of week); some half-used, some leave the instance
    running for hours after they end."""
    weights = fleet.shapes.pending_week[(t0 // HOUR + np.arange(168)) % 168]
    weights = weights / weights.sum()
    busy = np.zeros(168, dtype=bool)
    jobs = []
    for _ in range(int(rng.integers(1, 4))):
        hours = int(rng.integers(6, 41))
        start_h = int(rng.choice(168, p=weights))
        end_h = min(start_h + hours, 168)
        stop_h = min(end_h + _left_running_hours(rng, LEFT_RUNNING_FINETUNE), 168)
        if busy[max(0, start_h - 1):stop_h + 1].any():
            continue
        busy[start_h:stop_h] = True
        jobs.append(make_job(fleet, lane.entities, t0 + start_h * HOUR, t0 + end_h * HOUR,
                             "llm-finetune", "ft", rng, mode=MODE_FLAT,
                             base=_training_load(rng, HALF_USED_FINETUNE, 75, 95),
                             mem_frac=rng.uniform(0.8, 0.95), mem_ratio=rng.uniform(0.5, 0.75),
                             idle_tail_s=(stop_h - end_h) * HOUR))
    return sorted(jobs, key=lambda j: j.start)


def _left_running_hours(rng, share: float) -> int:
    """Whole hours an instance stays up after its job: 0, or 2-12 for ``share`` of jobs."""
    if rng.random() < share:
        return int(rng.integers(LEFT_RUNNING_HOURS[0], LEFT_RUNNING_HOURS[1] + 1))
    return 0


def inference(fleet, lane, t0, t1, rng) -> list[Job]:
    """Cloud inference: every other service (in fleet order) keeps a replica up day and night
    through its night trough; the others scale to zero outside 07:00-21:00 local time."""
    inst = fleet.instances[lane.instance]
    if always_on(fleet, lane):
        return [make_job(fleet, lane.entities, t0, t1, inst.team, "serving", rng,
                         mode=MODE_DIURNAL, base=rng.uniform(12, 18), amp=rng.uniform(40, 55),
                         mem_frac=rng.uniform(0.5, 0.8), mem_ratio=rng.uniform(0.3, 0.5))]
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


def always_on(fleet: Fleet, lane: Lane) -> bool:
    """Whether a cloud inference lane keeps a replica up around the clock."""
    serving = [other for other in fleet.lanes if other.kind == "inference"]
    return serving.index(lane) % 2 == 0


def regulated(fleet, lane, t0, t1, rng) -> list[Job]:
    """Regulated-data experiments in the one allowed cloud region: most weekdays, office hours;
    now and then the instance is left running into the night."""
    inst = fleet.instances[lane.instance]
    offset = fleet.entities[lane.entities[0]].utc_offset_h
    jobs = []
    for day in range(5):
        if rng.random() < 0.7:
            start = max(t0, t0 + day * DAY + (8 - offset) * HOUR)
            end = min(start + 10 * HOUR, t1)
            stop = min(end + _left_running_hours(rng, LEFT_RUNNING_REGULATED) * HOUR, t1)
            jobs.append(make_job(fleet, lane.entities, start, end,
                                 inst.team, "cohort", rng, mode=MODE_ACTIVE,
                                 base=rng.uniform(40, 85), mem_frac=rng.uniform(0.4, 0.9),
                                 mem_ratio=rng.uniform(0.3, 0.6), idle_tail_s=stop - end))
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
