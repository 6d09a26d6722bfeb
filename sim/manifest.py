"""The manifest of planted problems, and the natural idle windows beside them: exactly what a
test of the platform should find.

Times are ISO 8601 UTC strings; windows are ``[start, end)`` (a sample at ``ts`` belongs to the
window when ``start <= ts < end``). Idle windows get one entry per GPU entity.

``natural_idle_windows`` lists the idle windows of the natural waste patterns (see
``sim.workloads``) as the platform derives them: cut to the simulated history, on the sample
grid (a window starts at its first idle sample and ends at the first sample after it), and only
those lasting at least ``MIN_IDLE_S`` (the default minimum length of an idle window). None is on
an entity of a planted idle window, so the planted windows stay the only idle time on their GPUs.
"""
from __future__ import annotations

from datetime import datetime

from . import catalog
from .billing import billing_lines
from .catalog import INSTANCE_TYPES, MODELS
from .fleet import Entity, Fleet
from .planted import HEALTH_ECC_UNCORRECTED, HEALTH_XIDS, health_event, overlays, planted_windows
from .timeline import Timeline, Window, iso, resolve_window
from .workloads import MODE_IDLE, Job

IDLE_KINDS = ("idle_allocated", "idle_unallocated", "idle_cloud_unused")
NATURAL_KINDS = ("notebook_overnight", "left_running")
MIN_IDLE_S = 15 * 60


def planted_problems(fleet: Fleet, days: int = 30, interval_s: int = 60,
                     end: datetime | None = None) -> list[dict]:
    """Every planted problem of the simulated window, as plain JSON-able dicts with ``kind``."""
    window = resolve_window(days, interval_s, end)
    windows = planted_windows(fleet, window)
    out = []
    for w in windows:
        if w.kind in IDLE_KINDS:
            out.extend(_idle_entry(fleet, w, k) for k in w.entities)
    residency = next(w for w in windows if w.kind == "residency_violation")
    out.append(_residency(fleet, residency))
    lines = billing_lines(fleet, days, end)
    out.append(_untagged(fleet, lines))
    out.append(_drift(fleet))
    out.append(_health(fleet, window))
    out.append(_overrun(fleet, lines, window))
    return out


def natural_idle_windows(fleet: Fleet, days: int = 30, interval_s: int = 60,
                         end: datetime | None = None) -> list[dict]:
    """The idle windows of the natural waste patterns in the simulated window, one entry per GPU
    entity: ``notebook_overnight`` (allocated to the notebook's owner) and ``left_running``
    (a cloud instance up after its job, unallocated), ordered by start, host and GPU."""
    window = resolve_window(days, interval_s, end)
    timeline = Timeline(fleet, window.start, window.end, overlays(planted_windows(fleet, window)))
    out = []
    for job in timeline.jobs[:timeline.generated]:
        if job.mode == MODE_IDLE:
            span = ("notebook_overnight", job.start, job.end)
        elif job.idle_tail_s:
            span = ("left_running", job.end, job.end + job.idle_tail_s)
        else:
            continue
        kind, start, stop = span
        start = _on_grid(max(start, window.start), interval_s)
        stop = _on_grid(min(stop, window.end), interval_s)
        if stop - start >= MIN_IDLE_S:
            out.extend(_natural_entry(fleet, kind, job, k, start, stop) for k in job.entities)
    return sorted(out, key=lambda w: (w["start"], w["host"], w["gpu_uuid"], w["mig_instance"]))


def _on_grid(t: int, interval_s: int) -> int:
    """The first sample time at or after ``t``."""
    return -(-t // interval_s) * interval_s


def _natural_entry(fleet: Fleet, kind: str, job: Job, k: int, start: int, stop: int) -> dict:
    e = fleet.entities[k]
    entry = {"kind": kind, **_where(fleet, e), "start": iso(start), "end": iso(stop),
             "minutes": (stop - start) // 60, "util_below_pct": 5.0}
    if kind == "notebook_overnight":
        entry.update({"idle_kind": "allocated", "team": job.team, "user": job.user,
                      "job_id": job.job_id, "k8s_namespace": job.k8s_namespace,
                      "k8s_pod": job.k8s_pod})
        return entry
    inst = fleet.instances[e.instance]
    price = INSTANCE_TYPES[inst.instance_type].price_hour
    entry.update({"idle_kind": "unallocated", "team": "", "user": "", "job_id": "",
                  "k8s_namespace": "", "k8s_pod": "", "provider": inst.provider,
                  "instance_team": inst.team, "after_job_id": job.job_id,
                  "instance_cost_usd": round(price * (stop - start) / 3600, 4)})
    return entry


def _where(fleet: Fleet, e: Entity) -> dict:
    pool = fleet.pool(e.pool)
    inst = fleet.instances[e.instance] if e.instance >= 0 else None
    return {"host": e.host, "gpu_uuid": e.gpu_uuid, "gpu_index": e.gpu_index,
            "mig_instance": e.mig_instance, "mig_profile": e.mig_profile, "pool": pool.name,
            "environment": pool.environment, "region": pool.region,
            "instance_id": inst.instance_id if inst else "",
            "instance_type": inst.instance_type if inst else "", "model": MODELS[e.model].name}


def _idle_entry(fleet: Fleet, w, k: int) -> dict:
    e = fleet.entities[k]
    entry = {"kind": w.kind, **_where(fleet, e), "start": iso(w.start), "end": iso(w.end),
             "minutes": (w.end - w.start) // 60, "util_below_pct": 5.0}
    owner = w.job
    entry.update({"team": owner.team if owner else "", "user": owner.user if owner else "",
                  "job_id": owner.job_id if owner else "",
                  "k8s_namespace": owner.k8s_namespace if owner else "",
                  "k8s_pod": owner.k8s_pod if owner else ""})
    if w.kind == "idle_cloud_unused":
        inst = fleet.instances[e.instance]
        price = INSTANCE_TYPES[inst.instance_type].price_hour
        entry.update({"provider": inst.provider,
                      "instance_cost_usd": round(price * (w.end - w.start) / 3600, 4)})
    return entry


def _residency(fleet: Fleet, w) -> dict:
    inst = fleet.instances[fleet.plant.residency_instance]
    team = fleet.team(catalog.REGULATED_TEAM)
    return {"kind": "residency_violation", "team": team.name, "provider": inst.provider,
            "environment": inst.provider, "region": inst.region, "instance_id": inst.instance_id,
            "host": inst.host, "start": iso(w.start), "end": iso(w.end),
            "job_id": w.job.job_id, "user": w.job.user, "allowed": [dict(a) for a in team.allowed]}


def _untagged(fleet: Fleet, billing: dict[str, list[dict]]) -> dict:
    inst = fleet.instances[fleet.plant.untagged_instance]
    lines = [ln for ln in billing[inst.provider]
             if ln["ResourceId"] == inst.instance_id]
    return {"kind": "untagged_instance", "provider": inst.provider, "region": inst.region,
            "instance_id": inst.instance_id, "instance_type": inst.instance_type,
            "host": inst.host, "team_in_samples": inst.team, "tags": dict(inst.tags),
            "billed_hours": len(lines),
            "effective_cost_usd": round(sum(ln["EffectiveCost"] for ln in lines), 4)}


def _drift(fleet: Fleet) -> dict:
    host = fleet.host(fleet.plant.drift_host)
    return {"kind": "driver_drift", "host": host.name, "pool": host.pool,
            "expected_driver": catalog.BASELINE_DRIVER, "expected_cuda": catalog.BASELINE_CUDA,
            "actual_driver": host.driver, "actual_cuda": host.cuda,
            "gpu_uuids": sorted({e.gpu_uuid for e in fleet.entities if e.host == host.name})}


def _health(fleet: Fleet, window: Window) -> dict:
    k, t = health_event(fleet, window)
    e = fleet.entities[k]
    return {"kind": "gpu_health", **_where(fleet, e), "ts": iso(t),
            "xids": [{"ts": iso(t + n * window.interval_s), "xid": code}
                     for n, code in enumerate(HEALTH_XIDS)],
            "ecc_uncorrected_volatile": HEALTH_ECC_UNCORRECTED}


def _overrun(fleet: Fleet, billing: dict[str, list[dict]], window: Window) -> dict:
    team = fleet.team(fleet.plant.overrun_team)
    spend = 0.0
    for lines in billing.values():
        spend += sum(ln["EffectiveCost"] for ln in lines if f'"team": "{team.name}"' in ln["Tags"])
    return {"kind": "budget_overrun", "team": team.name, "budget_usd": team.budget_usd,
            "window_start": iso(window.start), "window_end": iso(window.end),
            "cloud_effective_cost_usd": round(spend, 2),
            "note": "cloud spend alone (EffectiveCost of team-tagged lines) exceeds the monthly "
                    "budget over a 30-day window; on-prem attribution only adds to it"}
