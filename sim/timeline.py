"""Who holds which GPU entity when: jobs laid out as per-entity segments, looked up vectorized.

A segment is ``[start, end)`` on one entity with a state (OFF: cloud instance stopped, no
samples; UNHELD: running, nothing holds it; HELD: a job holds it) and a job row. Normal
workloads are generated per absolute week (Monday 00:00 UTC), so an instant looks the same
whatever window it is simulated in; a job that leaves its cloud instance running adds an UNHELD
segment after it; planted problems are then carved in.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from .fleet import Fleet
from .workloads import Job, lane_week_jobs

OFF, UNHELD, HELD = 0, 1, 2
WEEK = 7 * 86400
MONDAY_EPOCH = 4 * 86400  # 1970-01-05 00:00 UTC was a Monday
JOB_FIELDS = ("team", "user", "job_id", "k8s_namespace", "k8s_pod", "slurm_account", "image")


@dataclass(frozen=True)
class Window:
    """The simulated history ``[start, end)`` in epoch seconds, sampled every ``interval_s``."""

    start: int
    end: int
    days: int
    interval_s: int


def resolve_window(days: int, interval_s: int, end: datetime | None) -> Window:
    """Validate arguments; ``end`` defaults to the current hour and is floored to the hour."""
    if days < 1:
        raise ValueError(f"days={days}: simulate at least one day")
    if interval_s < 1 or 3600 % interval_s:
        raise ValueError(f"interval_s={interval_s}: must divide 3600 (e.g. 15, 60, 300)")
    if end is None:
        end = datetime.now(timezone.utc)
    if end.tzinfo is None:
        end = end.replace(tzinfo=timezone.utc)
    end_s = int(end.timestamp()) // 3600 * 3600
    return Window(end_s - days * 86400, end_s, days, interval_s)


def week_starts(t0: int, t1: int) -> range:
    """Starts of the absolute weeks that overlap ``[t0, t1)``."""
    first = (t0 - MONDAY_EPOCH) // WEEK * WEEK + MONDAY_EPOCH
    return range(first, t1, WEEK)


@dataclass(frozen=True)
class Overlay:
    """A planted change: on ``entities`` during ``[start, end)``, set ``state`` (and ``job``)."""

    entities: tuple[int, ...]
    start: int
    end: int
    state: int
    job: Job | None = None


class Timeline:
    """Segments of every entity over whole weeks, sorted by (entity, start)."""

    def __init__(self, fleet: Fleet, t0: int, t1: int, overlays: list[Overlay] = ()):
        weeks = week_starts(t0, t1)
        self.origin, self.stop = weeks[0], weeks[-1] + WEEK
        self.jobs: list[Job] = []
        per_entity: list[list[list[int]]] = [[] for _ in fleet.entities]
        for week in weeks:
            for lane_no in range(len(fleet.lanes)):
                for job in lane_week_jobs(fleet, lane_no, week, week + WEEK):
                    self._place(per_entity, job, HELD)
        self.generated = len(self.jobs)  # jobs[:generated] are the workloads', the rest planted
        cloud = [e.instance >= 0 for e in fleet.entities]
        per_entity = [_fill_gaps(segs, self.origin, self.stop, OFF if c else UNHELD)
                      for segs, c in zip(per_entity, cloud)]
        for ov in overlays:
            job_no = self._add_job(ov.job) if ov.job is not None else -1
            for k in ov.entities:
                per_entity[k] = _carve(per_entity[k], ov.start, ov.end, ov.state, job_no,
                                       absorb_gaps=not cloud[k])
        self._freeze(per_entity)

    def _add_job(self, job: Job) -> int:
        self.jobs.append(job)
        return len(self.jobs) - 1

    def _place(self, per_entity, job: Job, state: int) -> None:
        job_no = self._add_job(job)
        for k in job.entities:
            per_entity[k].append([job.start, job.end, state, job_no])
            if job.idle_tail_s:
                per_entity[k].append([job.end, job.end + job.idle_tail_s, UNHELD, -1])

    def _freeze(self, per_entity) -> None:
        rows = [(k, *seg) for k, segs in enumerate(per_entity) for seg in segs]
        table = np.array(rows, dtype=np.int64).reshape(-1, 5)
        self.entity, self.start, self.end = table[:, 0], table[:, 1], table[:, 2]
        self.state, self.job = table[:, 3].astype(np.int8), table[:, 4]
        self.span = self.stop - self.origin + 1
        self.keys = self.entity * self.span + (self.start - self.origin)
        self.job_columns = {f: np.array([getattr(j, f) for j in self.jobs] + [""], dtype=object)
                            for f in JOB_FIELDS}
        for f in ("mode", "base", "amp", "mem_frac", "mem_ratio", "procs"):
            self.job_columns[f] = np.array([getattr(j, f) for j in self.jobs] + [0])

    def lookup(self, entity: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Segment row for each (entity, epoch second) pair."""
        keys = entity.astype(np.int64) * self.span + (ts - self.origin)
        return np.searchsorted(self.keys, keys, side="right") - 1

    def runs(self, entity: int, t0: int, t1: int) -> list[tuple[int, int]]:
        """Spans of ``[t0, t1)`` where ``entity`` is not OFF, adjacent spans merged."""
        rows = np.nonzero((self.entity == entity) & (self.state != OFF)
                          & (self.end > t0) & (self.start < t1))[0]
        spans: list[tuple[int, int]] = []
        for r in rows:
            s, e = max(int(self.start[r]), t0), min(int(self.end[r]), t1)
            if spans and spans[-1][1] == s:
                spans[-1] = (spans[-1][0], e)
            else:
                spans.append((s, e))
        return spans


def _fill_gaps(segs: list[list[int]], t0: int, t1: int, state: int) -> list[list[int]]:
    """Sorted segments covering ``[t0, t1)`` exactly, gaps filled with ``state``."""
    out, t = [], t0
    for s, e, st, job in sorted(segs):
        if s > t:
            out.append([t, s, state, -1])
        if e > max(s, t):
            out.append([max(s, t), e, st, job])
            t = e
    if t < t1:
        out.append([t, t1, state, -1])
    return out


def _carve(segs, start, end, state, job_no, absorb_gaps: bool) -> list[list[int]]:
    """Replace ``[start, end)`` with one segment. With ``absorb_gaps``, an UNHELD gap right
    before or after it is given to the job beyond the gap, so the planted window's edges are
    exactly ``start`` and ``end``."""
    before = [[s, min(e, start), st, j] for s, e, st, j in segs if s < start]
    after = [[max(s, end), e, st, j] for s, e, st, j in segs if e > end]
    if absorb_gaps:
        if len(before) >= 2 and before[-1][2] == UNHELD and before[-2][2] == HELD:
            before[-1][2:] = before[-2][2:]
        if len(after) >= 2 and after[0][2] == UNHELD and after[1][2] == HELD:
            after[0][2:] = after[1][2:]
    return before + [[start, end, state, job_no]] + after


def utc(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, timezone.utc)


def iso(ts: int) -> str:
    """``2024-05-01T13:00:00Z``."""
    return utc(ts).strftime("%Y-%m-%dT%H:%M:%SZ")


def day_starts(t0: int, t1: int) -> list[int]:
    """UTC midnights splitting ``[t0, t1)`` into calendar days (first and last may be partial)."""
    first = t0 // 86400 * 86400
    return [max(d, t0) for d in range(first, t1, 86400)]

