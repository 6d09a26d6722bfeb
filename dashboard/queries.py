"""The dashboard's data: plain functions, store + Filters -> DataFrame.

Each runs one named query from ``sql/queries/`` with the filters as bound parameters (never as
SQL text), so the same numbers come out of ``clickhouse-client`` with the same parameters. They
read views and rollups only: what needs no hourly resolution reads the daily rollup
``gpu_cost_day`` (ranges are whole UTC days, see dashboard/filters.py, so a day filter selects
exactly the hours an hour filter would), hourly demand reads ``team_demand_hour``.
Importable and testable without Dash.

Given the dashboard's reader (dashboard/reader.py) instead of a plain store, results are cached
per data version: emptied when a derivation finishes; alert state (written by the alerts job as it
evaluates) is kept RECENT_S seconds; silences, which the Alerts page writes, are read every time.
"""
from __future__ import annotations

from datetime import datetime

import pandas as pd

from base.sqlfiles import sql as sql_text
from dashboard.filters import MAX_VALUE, Filters
from dashboard.focus import NO_FOCUS, Focus
from dashboard.reader import RECENT_S, cached

# What "no data yet" means for each source: the table that is empty before anything is derived.
SOURCES = {"gpu_cost_hour": "GPU-hour costs", "gpu_hour": "hourly rollups", "gpu_cost_day": "daily GPU costs",
           "team_demand_hour": "hourly team demand", "idle_windows": "idle windows", "gpu_waste_day": "daily waste",
           "team_spend_day": "team spend", "compliance_findings": "compliance findings",
           "alert_state": "alert state", "alert_events": "alert history", "alert_silences": "silences",
           "queue_pending_hour": "queue readings (GPU jobs and pods pending)"}
# Written by the alerts job and the queue readers on their own schedules, not by a derivation:
# kept only RECENT_S seconds.
RECENT = frozenset({"alerts", "alert_history", "alert_counts", "queue_pressure"})


def run(store, name: str, f: Filters, **extra) -> pd.DataFrame:
    return named(store, name, {**f.params(), **extra})


def named(store, name: str, params: dict) -> pd.DataFrame:
    """The rows of ``sql/queries/<name>.sql`` with ``params`` (cached when ``store`` is a reader)."""
    return cached(store, name, params, lambda: store.query_df(sql_text(f"queries/{name}"), params),
                  RECENT_S if name in RECENT else None)


def fleet(store, f: Filters) -> pd.DataFrame:
    return run(store, "fleet", f)


def idle_summary(store, f: Filters) -> pd.DataFrame:
    return run(store, "idle_summary", f)


def budget(store, f: Filters) -> pd.DataFrame:
    return run(store, "budget", f)


def coverage(store, f: Filters) -> pd.DataFrame:
    return run(store, "coverage", f)


def alert_counts(store, f: Filters) -> pd.DataFrame:
    return run(store, "alert_counts", f)


def findings(store, f: Filters) -> pd.DataFrame:
    return run(store, "findings", f)


def bucket_hours(f: Filters) -> int:
    """Heatmap resolution: hours for a day or two, 6 hours up to two weeks, then days."""
    return 1 if f.days <= 2 else 6 if f.days <= 14 else 24


# Heatmap query per (rows, daily buckets): a fixed set of file names, never built from input.
HEATMAPS = {("gpu", False): "util_heatmap_gpu", ("gpu", True): "util_heatmap_gpu_day",
            ("pool", False): "util_heatmap_pool", ("pool", True): "util_heatmap_pool_day"}


def heatmap_query(f: Filters, rows: str = "pool") -> str:
    """The heatmap's query: buckets of a (UTC) day read gpu_cost_day, shorter ones gpu_cost_hour."""
    return HEATMAPS[("gpu" if rows == "gpu" else "pool", bucket_hours(f) == 24)]


def util_heatmap(store, f: Filters, rows: str = "pool", max_entities: int = 200) -> pd.DataFrame:
    name = heatmap_query(f, rows)
    extra = {"max_entities": max_entities} if rows == "gpu" else {}
    if not name.endswith("_day"):
        extra["bucket_h"] = bucket_hours(f)
    return run(store, name, f, **extra)


def util_distribution(store, f: Filters) -> pd.DataFrame:
    return run(store, "util_distribution", f)


def mig_tree(store, f: Filters) -> pd.DataFrame:
    return run(store, "mig_tree", f)


# The Idle & waste queries take the page's focus on one GPU entity (dashboard/focus.py); NO_FOCUS:
# every GPU.
def idle_windows(store, f: Filters, limit: int = 500, focus: Focus = NO_FOCUS) -> pd.DataFrame:
    return run(store, "idle_windows", f, limit=limit, **focus.params())


def idle_by_owner(store, f: Filters, focus: Focus = NO_FOCUS) -> pd.DataFrame:
    return run(store, "idle_by_owner", f, **focus.params())


def gpu_focus(store, f: Filters, focus: Focus) -> pd.DataFrame:
    """The focused GPU: one row (where it is, what it is, its range's GPU-hours and cost), none if unknown."""
    return run(store, "gpu_focus", f, **focus.params())


def idle_window(store, focus: Focus) -> pd.DataFrame:
    """The focused idle window (the one starting in the second ``focus.window``), whatever the filters."""
    return named(store, "idle_window", focus.window_params())


def waste_month(store, f: Filters) -> pd.DataFrame:
    return run(store, "waste_month", f)


def waste_by_team(store, f: Filters, focus: Focus = NO_FOCUS) -> pd.DataFrame:
    return run(store, "waste_by_team", f, **focus.params())


def waste_by_gpu(store, f: Filters, limit: int = 500, focus: Focus = NO_FOCUS) -> pd.DataFrame:
    return run(store, "waste_by_gpu", f, limit=limit, **focus.params())


def spend_by_team(store, f: Filters) -> pd.DataFrame:
    return run(store, "spend_by_team", f)


def other_currencies(store, f: Filters) -> pd.DataFrame:
    """Spend not in USD (currency, amount, rows): never in the USD figures, never converted."""
    return run(store, "other_currencies", f)


def spend_trend(store, f: Filters) -> pd.DataFrame:
    return run(store, "spend_trend", f)


def unallocated(store, f: Filters) -> pd.DataFrame:
    return run(store, "unallocated", f)


def hours(store, f: Filters) -> int:
    """The number of hours with any GPU data in the range (placement's demand series length)."""
    return int(run(store, "hours", f)["hours"].iloc[0])


def placement_demand(store, f: Filters, baseline_q: float, n_hours: int | None = None) -> pd.DataFrame:
    """``n_hours`` is hours() of the same filters when the caller has it already."""
    n_hours = hours(store, f) if n_hours is None else n_hours
    return run(store, "placement_demand", f, baseline_q=float(baseline_q), hours=int(n_hours))


def placement_rates(store, f: Filters) -> pd.DataFrame:
    return run(store, "placement_rates", f)


def _cheapest_cloud(rates: pd.DataFrame) -> tuple[dict[str, float], str, float]:
    """(USD per utilized GPU-hour per environment, the cloud cheapest by it, that cloud's USD per GPU-hour)."""
    per_env = {} if rates.empty else {str(e): float(r) for e, r in
                                      zip(rates["environment"], rates["usd_per_utilized_gpu_hour"]) if r == r and r > 0}
    clouds = sorted((r, e) for e, r in per_env.items() if e != "onprem")
    if not clouds:
        return per_env, "", 0.0
    cheapest = clouds[0][1]
    return per_env, cheapest, float(rates.loc[rates["environment"] == cheapest, "usd_per_gpu_hour"].iloc[0])


def queue_pressure(store, f: Filters, rates: pd.DataFrame | None = None) -> pd.DataFrame:
    """GPU demand that waited, per pool and team (sql/queries/queue_pressure.sql)."""
    rates = placement_rates(store, f) if rates is None else rates
    return run(store, "queue_pressure", f, cloud_usd_per_gpu_hour=_cheapest_cloud(rates)[2])


def placement(store, f: Filters, baseline_q: float, saturated_pct: float, queue_wait_h: float = 1.0,
              rates: pd.DataFrame | None = None, n_hours: int | None = None,
              queued: pd.DataFrame | None = None) -> pd.DataFrame:
    """Recommendation rows (sql/queries/placement.sql), biggest savings first. ``rates``, ``n_hours``
    and ``queued`` are placement_rates(), hours() and queue_pressure() of the same filters when the
    caller has them already; the teams whose p95 wait is ``queue_wait_h`` hours or more get a burst row."""
    rates = placement_rates(store, f) if rates is None else rates
    per_env, cheapest, cloud_gpu_hour = _cheapest_cloud(rates)
    n_hours = hours(store, f) if n_hours is None else n_hours
    queued = queue_pressure(store, f, rates) if queued is None else queued
    waited = queued[queued["wait_p95_h"] >= queue_wait_h] if not queued.empty else queued
    return run(store, "placement", f, baseline_q=float(baseline_q), saturated_pct=float(saturated_pct),
               rate_envs=list(per_env), rate_values=list(per_env.values()), cheapest=cheapest,
               cloud_usd_per_gpu_hour=cloud_gpu_hour, hours=int(n_hours),
               queue_pools=[str(p) for p in waited.get("pool", [])], queue_teams=[str(t) for t in waited.get("team", [])],
               queue_wait_p95_h=[float(w) for w in waited.get("wait_p95_h", [])],
               queue_gpu_hours=[float(g) for g in waited.get("pending_gpu_hours", [])],
               queue_pending_gpus=[float(g) for g in waited.get("pending_gpus", [])])


def runtime_matrix(store, f: Filters) -> pd.DataFrame:
    return run(store, "runtime_matrix", f)


def alerts(store, f: Filters) -> pd.DataFrame:
    return run(store, "alerts", f)


def alert_history(store, f: Filters) -> pd.DataFrame:
    return run(store, "alert_history", f)


def silences(store, now: datetime) -> pd.DataFrame:
    from alerts.silences import list_silences

    rows = [{"id": s.id, "state": s.state(now), "matchers": ", ".join(str(m) for m in s.matchers),
             "starts_at": s.starts_at, "ends_at": s.ends_at, "created_by": s.created_by, "comment": s.comment,
             "updated_by": s.updated_by}
            for s in list_silences(store, now, include_expired=True)]
    rows.sort(key=lambda r: (r["state"] != "active", r["state"] != "pending", -r["ends_at"].timestamp()))
    return pd.DataFrame(rows)


def has_data(store, source: str) -> bool:
    """Whether ``source`` (one of SOURCES) holds any row."""
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}")
    return bool(cached(store, "has_data", {"source": source}, lambda: store.rows(f"SELECT 1 FROM {source} LIMIT 1"),
                       RECENT_S if source.startswith("alert_") else None))


MAX_OPTIONS = 200      # choices of a filter-bar dropdown built from data


def filter_options(store) -> dict[str, tuple[list[str], int]]:
    """The filter bar's choices from the spend table: {"env"|"team": (at most MAX_OPTIONS values,
    most spend first, sorted; how many there are)}; names over MAX_VALUE characters left out."""
    def load():
        df = named(store, "filter_options", {"max_options": MAX_OPTIONS, "max_chars": MAX_VALUE})
        parts = {kind: part for kind, part in df.groupby("kind")} if not df.empty else {}
        return {kind: (parts[kind]["value"].tolist(), int(parts[kind]["seen"].max())) if kind in parts else ([], 0)
                for kind in ("env", "team")}
    return load()
