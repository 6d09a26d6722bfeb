"""When the planted problems happen inside a window, and the overlays that put them there.

Each timed problem sits at a fixed fraction of the window, on whole hours, so any window of
one day or more holds all of them:

======================  ==================================================  ========  =====
kind                    what                                                at        hours
======================  ==================================================  ========  =====
idle_allocated          a notebook holds 2 DGX H100 GPUs at 0-2 %           0.30      6
idle_allocated          a notebook holds a 1g.10gb MIG slice at 0-2 %       0.55      5
idle_unallocated        2 Slurm A100 GPUs nobody holds                      0.45      4
idle_cloud_unused       g5.xlarge: 3 h of work, then 5 h running unused     0.62      3 + 5
residency_violation     the regulated team runs on GCP us-east4             0.40      6
gpu_health              XID 48 (double-bit ECC) then XID 63 on one GPU      0.70      -
======================  ==================================================  ========  =====
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .catalog import NOTEBOOK_TEAM, REGULATED_TEAM
from .fleet import Fleet
from .timeline import HELD, UNHELD, Overlay, Window
from .workloads import MODE_ACTIVE, MODE_IDLE, Job, make_job

HOUR = 3600
HEALTH_XIDS = (48, 63)
HEALTH_ECC_UNCORRECTED = 2


@dataclass(frozen=True)
class PlantedWindow:
    """A timed planted problem on some entities during ``[start, end)``."""

    kind: str
    entities: tuple[int, ...]
    start: int
    end: int
    state: int
    job: Job | None = None
    lead_in: tuple[int, Job] | None = field(default=None)  # (start, job) before the window


def place(window: Window, fraction: float, hours: int) -> tuple[int, int]:
    """Whole-hour span of ``hours`` starting at ``fraction`` of the window."""
    total = window.days * 24
    start = window.start + int(fraction * (total - hours)) * HOUR
    return start, start + hours * HOUR


def planted_windows(fleet: Fleet, window: Window) -> list[PlantedWindow]:
    """The timed problems of ``fleet`` in ``window``."""
    rng = np.random.default_rng([fleet.seed, 3, window.end // HOUR])
    plant = fleet.plant
    out = []
    s, e = place(window, 0.30, 6)
    out.append(PlantedWindow("idle_allocated", plant.notebook_entities, s, e, HELD,
                             _notebook(fleet, plant.notebook_entities, s, e, rng)))
    s, e = place(window, 0.55, 5)
    mig = (plant.mig_notebook_entity,)
    out.append(PlantedWindow("idle_allocated", mig, s, e, HELD, _notebook(fleet, mig, s, e, rng)))
    s, e = place(window, 0.45, 4)
    out.append(PlantedWindow("idle_unallocated", plant.unallocated_entities, s, e, UNHELD))
    s, e = place(window, 0.62, 8)
    unused = _instance_entities(fleet, plant.cloud_unused_instance)
    work = make_job(fleet, unused, s, s + 3 * HOUR, NOTEBOOK_TEAM, "exp", rng, mode=MODE_ACTIVE,
                    base=55.0, mem_frac=0.6, mem_ratio=0.4)
    out.append(PlantedWindow("idle_cloud_unused", unused, s + 3 * HOUR, e, UNHELD,
                             lead_in=(s, work)))
    s, e = place(window, 0.40, 6)
    foreign = _instance_entities(fleet, plant.residency_instance)
    out.append(PlantedWindow("residency_violation", foreign, s, e, HELD,
                             make_job(fleet, foreign, s, e, REGULATED_TEAM, "cohort", rng,
                                      mode=MODE_ACTIVE, base=60.0, mem_frac=0.7,
                                      mem_ratio=0.45)))
    return out


def overlays(windows: list[PlantedWindow]) -> list[Overlay]:
    """The timeline changes that put ``windows`` in place."""
    out = []
    for w in windows:
        if w.lead_in is not None:
            start, job = w.lead_in
            out.append(Overlay(w.entities, start, w.start, HELD, job))
        out.append(Overlay(w.entities, w.start, w.end, w.state, w.job))
    return out


def health_event(fleet: Fleet, window: Window) -> tuple[int, int]:
    """(entity, epoch second of the first XID), on the sample grid."""
    t = window.start + int(0.70 * window.days * 24) * HOUR + 17 * 60
    t = min(t, window.end - 2 * window.interval_s)
    t = window.start + (t - window.start) // window.interval_s * window.interval_s
    return fleet.plant.health_entity, t


def _notebook(fleet: Fleet, entities, start, end, rng) -> Job:
    """A Jupyter kernel that holds GPUs and memory and does nothing."""
    return make_job(fleet, entities, start, end, NOTEBOOK_TEAM, "jupyter", rng, mode=MODE_IDLE,
                    base=1.0, mem_frac=0.35, mem_ratio=0.5)


def _instance_entities(fleet: Fleet, instance: int) -> tuple[int, ...]:
    return tuple(k for k, e in enumerate(fleet.entities) if e.instance == instance)
