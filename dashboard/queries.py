"""The dashboard's data: plain functions, store + Filters -> DataFrame.

Each runs one named query from ``sql/queries/`` with the filters as bound parameters (never as
SQL text), so the same numbers come out of ``clickhouse-client`` with the same parameters. They
read views and rollups only: what needs no hourly resolution reads the daily rollup
``gpu_cost_day`` when the window is whole UTC days (a day filter then selects exactly the hours an
hour filter would) and the hourly one otherwise (query_sql), hourly demand reads
``team_demand_hour``.
Importable and testable without Dash.

Given the dashboard's reader (dashboard/reader.py) instead of a plain store, results are cached
per data version: emptied when a derivation finishes; alert state (written by the alerts job as it
evaluates) is kept RECENT_S seconds; silences, which the Alerts page writes, are read every time.
"""
from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

import pandas as pd

from base.sqlfiles import sql as sql_text
from base.sqlfiles import text
from dashboard.filters import MAX_VALUE, Filters
from dashboard.focus import NO_FOCUS, Focus
from dashboard.reader import RECENT_S, cached
from dashboard.throughput import factors, one_outcome, rightsize

# What "no data yet" means for each source: the table that is empty before anything is derived.
SOURCES = {"gpu_cost_hour": "GPU-hour costs", "gpu_hour": "hourly rollups", "gpu_cost_day": "daily GPU costs",
           "gpu_util_day": "daily GPU utilization",
           "team_demand_hour": "hourly team demand", "idle_windows": "idle windows", "gpu_waste_day": "daily waste",
           "team_spend_day": "team spend", "compliance_findings": "compliance findings",
           "alert_state": "alert state", "alert_events": "alert history", "alert_silences": "silences",
           "queue_pending_hour": "queue readings (GPU jobs and pods pending)"}
# Written by the alerts job and the queue readers on their own schedules, not by a derivation:
# kept only RECENT_S seconds.
RECENT = frozenset({"alerts", "alert_history", "alert_counts", "queue_pressure"})


# Time resolution, decided here only. A page's query reads the window's GPU-hour costs and waste
# through the placeholders __GPU_COST__, __GPU_UTIL__ and __GPU_WASTE__: a window of whole UTC days reads the
# daily rollups, any other (Last 24 hours: Filters.whole_days is false) the hourly ones over
# exactly [start, end) (sql/queries/window/). Queries with daily data only (bills are daily; the
# runtime versions are kept per day) count the whole UTC days the window touches, start_day..end_day,
# and the page says so (whole_days_note).
WINDOW_ROWS = ("gpu_cost", "gpu_util", "gpu_waste")
DAILY_ONLY = frozenset({"spend_by_team", "spend_trend", "unallocated", "other_currencies", "coverage",
                        "runtime_matrix", "gpu_focus", "placement"})
# What each page shows from daily-only data, for its note.
DAILY_ONLY_CARDS = {"overview": "The allocation-coverage tile", "spend": "Spend (bills are daily)",
                    "placement": "The on-prem pools' cost in the recommendations",
                    "compliance": "The driver and CUDA matrix", "idle": "The focused GPU's GPU-hours and cost"}


def whole_days(params: dict) -> bool:
    """Whether the window of a query's parameters (Filters.params) is whole UTC days."""
    return all(not isinstance(t, datetime) or t.time() == datetime.min.time()
               for t in (params.get("start"), params.get("end")))


def query_sql(name: str, daily: bool = True) -> str:
    """``sql/queries/<name>.sql`` with its window placeholders filled: the daily rollups, or the
    hourly ones when ``daily`` is false."""
    fills = {rows: sql_text(f"queries/window/{rows}_{'day' if daily else 'hour'}") for rows in WINDOW_ROWS
             if f"__{rows.upper()}__" in text(f"queries/{name}")}
    return sql_text(f"queries/{name}", **fills)


def whole_days_note(f: Filters, page_name: str) -> str:
    """For a window that is not whole UTC days, what on the page counts whole days instead; else ''."""
    what = DAILY_ONLY_CARDS.get(page_name)
    if f.whole_days or not what:
        return ""
    last = f.end - timedelta(days=1)
    return (f"{what} counts whole UTC days, {f.start} to {last}; the other cards cover exactly "
            f"{f.describe_window()}.")


def side_by_side(*calls):
    """The results of ``calls`` (functions of no argument, each running its own queries), run at
    once on the reader's pool of handles, in the caller's context (Flask's app and request)."""
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return [job.result() for job in [pool.submit(contextvars.copy_context().run, call) for call in calls]]


def run(store, name: str, f: Filters, **extra) -> pd.DataFrame:
    return named(store, name, {**f.params(), **extra})


def named(store, name: str, params: dict) -> pd.DataFrame:
    """The rows of ``sql/queries/<name>.sql`` with ``params`` (cached when ``store`` is a reader),
    at the resolution of the window ``params`` name."""
    return cached(store, name, params, lambda: store.query_df(query_sql(name, whole_days(params)), params),
                  RECENT_S if name in RECENT else None)


def fleet(store, f: Filters) -> pd.DataFrame:
    return run(store, "fleet", f)


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


# Lists of GPUs show the top ones and a search, never every GPU of a large fleet (the CSVs ask for all).
HEATMAP_GPUS = 200
MIG_TREE_GPUS = 25


def heatmap_query(f: Filters, rows: str = "pool") -> str:
    """The heatmap's query: buckets of a (UTC) day read gpu_cost_day, shorter ones gpu_cost_hour."""
    return HEATMAPS[("gpu" if rows == "gpu" else "pool", bucket_hours(f) == 24)]


def util_heatmap(store, f: Filters, rows: str = "pool", search: str = "", max_entities: int = HEATMAP_GPUS) -> pd.DataFrame:
    """Utilization per pool, or per GPU entity (the ``max_entities`` costliest matching ``search``), and bucket."""
    name = heatmap_query(f, rows)
    extra = {"max_entities": max_entities, "search": search.strip()[:MAX_VALUE]} if rows == "gpu" else {}
    if not name.endswith("_day"):
        extra["bucket_h"] = bucket_hours(f)
    return run(store, name, f, **extra)


def util_distribution(store, f: Filters) -> pd.DataFrame:
    return run(store, "util_distribution", f)


def mig_tree(store, f: Filters, search: str = "", max_gpus: int = MIG_TREE_GPUS) -> pd.DataFrame:
    """MIG instances under their GPU: the ``max_gpus`` GPUs with the most GPU-hours matching ``search``,
    each instance with its profile at its latest hour in the window ('' on a GPU's row)."""
    tree = run(store, "mig_tree", f, search=search.strip()[:MAX_VALUE], max_gpus=max_gpus)
    if tree.empty:
        return tree
    kids = tree[tree["level"] == 1]
    profiles = pd.DataFrame(columns=["host", "gpu_uuid", "mig_instance", "mig_profile"])
    if not kids.empty:
        profiles = run(store, "mig_profiles", f, hosts=list(kids["host"]), gpu_uuids=list(kids["gpu_uuid"]),
                       mig_instances=list(kids["mig_instance"]), days=list(pd.to_datetime(kids["last_day"]).dt.date))
    tree = tree.drop(columns="last_day").merge(profiles, on=["host", "gpu_uuid", "mig_instance"], how="left")
    tree["mig_profile"] = tree["mig_profile"].fillna("").where(tree["level"] == 1, "")
    return tree[[*tree.columns[:4], "mig_profile", *tree.columns[4:-1]]]


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
    return waste_by(store, f, "team", focus).rename(columns={"key": "team"})


def waste_by_gpu(store, f: Filters, limit: int = 500, focus: Focus = NO_FOCUS) -> pd.DataFrame:
    return run(store, "waste_by_gpu", f, limit=limit, **focus.params())


def spend_by_team(store, f: Filters) -> pd.DataFrame:
    return run(store, "spend_by_team", f)


# "Aggregate by" (dashboard/drill.py): the groupings a page offers. The choice reaches SQL only as
# the bound parameter {by:String}, which picks one of the query's fixed column expressions; teams
# read the team queries (spend per team includes the non-GPU cloud spend attributed to teams).
BY_KEYS = ("team", "namespace", "user", "job", "pool", "environment", "model")


def _by(by: str) -> str:
    if by not in BY_KEYS:
        raise ValueError(f"unknown grouping {by!r}; one of {', '.join(BY_KEYS)}")
    return by


def spend_by(store, f: Filters, by: str = "team") -> pd.DataFrame:
    """Spend per ``by`` (column ``key``), environment and cost kind: all spend per team, GPU cost otherwise."""
    if _by(by) == "team":
        return spend_by_team(store, f).rename(columns={"team": "key"})
    return run(store, "spend_by_owner", f, by=by)


def waste_by(store, f: Filters, by: str = "team", focus: Focus = NO_FOCUS) -> pd.DataFrame:
    """Waste, efficiency and no-data cost per ``by`` (column ``key``), biggest waste first."""
    return run(store, "waste_by_owner", f, by=_by(by), **focus.params())


def util_distribution_by(store, f: Filters, by: str = "team") -> pd.DataFrame:
    """util_distribution's columns per ``by`` (column ``key``) and environment."""
    if _by(by) == "team":
        return util_distribution(store, f).rename(columns={"team": "key"})
    return run(store, "util_distribution_by_owner", f, by=by)


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


def placement_demand(store, f: Filters, baseline_q: float) -> pd.DataFrame:
    return run(store, "placement_demand", f, baseline_q=float(baseline_q))


def placement_usage(store, f: Filters) -> pd.DataFrame:
    """The range's GPU time and cost per environment, pool, model, team, held and whole GPU
    (sql/queries/placement_usage.sql): one pass that placement_rates(), placement_models(),
    placement_rightsize() and onprem_pools() sum up."""
    usage = run(store, "placement_usage", f)
    return usage if len(usage.columns) else pd.DataFrame(columns=USAGE_KEYS + SUMMED)   # no rows: no columns either


USAGE_KEYS = ["environment", "pool", "model", "team", "held", "whole"]
SUMMED = ["cost_usd", "gpu_hours", "utilized_gpu_hours"]


def _per_gpu_hour(usage: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """``usage`` summed by ``by``, with utilization_pct, usd_per_gpu_hour and usd_per_utilized_gpu_hour
    (NaN where there are no GPU-hours, or no utilized ones)."""
    df = usage.groupby(by, as_index=False, sort=False, observed=True)[SUMMED].sum()
    gpu_h, used_h = df["gpu_hours"].where(df["gpu_hours"] != 0), df["utilized_gpu_hours"].where(df["utilized_gpu_hours"] != 0)
    return df.assign(utilization_pct=100 * df["utilized_gpu_hours"] / gpu_h, usd_per_gpu_hour=df["cost_usd"] / gpu_h,
                     usd_per_utilized_gpu_hour=df["cost_usd"] / used_h)


def placement_rates(store, f: Filters, usage: pd.DataFrame | None = None) -> pd.DataFrame:
    """What a GPU-hour and a *utilized* GPU-hour cost in each environment over the range (all GPU
    time, idle included: idle time is what makes a utilized hour dear), on-prem first."""
    usage = placement_usage(store, f) if usage is None else usage
    return _onprem_first(_per_gpu_hour(usage, ["environment"]), ["environment"], [])


def placement_models(store, f: Filters, throughput: dict[str, float] | None = None,
                     usage: pd.DataFrame | None = None) -> pd.DataFrame:
    """Cost per utilized and per A100-equivalent utilized GPU-hour per environment and model:
    utilized GPU-hours × the model's throughput factor (``throughput`` is [analytics.throughput]
    over the defaults, dashboard/throughput.py). A model without a factor is not normalised: its
    factor and A100-equivalent rate are NaN, never 1. Cheapest A100-equivalent first."""
    usage = placement_usage(store, f) if usage is None else usage
    tp = factors(throughput)
    models = _per_gpu_hour(usage, ["environment", "model"])
    models["normalised"] = models["model"].isin(list(tp))
    models["throughput"] = models["model"].map(tp).astype(float)
    models["a100e_utilized_gpu_hours"] = models["utilized_gpu_hours"] * models["throughput"]
    models["usd_per_a100e_utilized_gpu_hour"] = models["cost_usd"] / models["a100e_utilized_gpu_hours"].where(
        models["a100e_utilized_gpu_hours"] != 0)
    return _onprem_first(models, ["environment", "model"], ["normalised", "usd_per_a100e_utilized_gpu_hour"],
                         ascending=[False, True])


def _onprem_first(df: pd.DataFrame, then: list[str], first: list[str], ascending: list[bool] = ()) -> pd.DataFrame:
    """``df`` sorted by ``first`` (``ascending``, NaN last), then on-prem before the clouds, then by ``then``."""
    keys = [*first, "onprem_last", *then]
    return df.assign(onprem_last=df["environment"] != "onprem").sort_values(
        keys, ascending=[*ascending, *[True] * (len(keys) - len(first))], na_position="last",
        ignore_index=True).drop(columns="onprem_last")


def placement_rightsize(store, f: Filters, throughput: dict[str, float] | None = None, n_hours: int | None = None,
                        models: pd.DataFrame | None = None, usage: pd.DataFrame | None = None) -> pd.DataFrame:
    """Right-sizing candidates among the whole GPUs (no MIG slice) each team held over the range,
    per environment, pool and model (gpus: the GPUs held on average over the ``n_hours`` hours with
    data), chosen by dashboard/throughput.py rightsize()."""
    n_hours = hours(store, f) if n_hours is None else n_hours
    usage = placement_usage(store, f) if usage is None else usage
    models = placement_models(store, f, throughput, usage) if models is None else models
    held = usage[_held_by_teams(usage, f) & usage["whole"].astype(bool)]
    held = held.groupby(["team", "environment", "pool", "model"], as_index=False, observed=True)[SUMMED].sum()
    held = held[held["gpu_hours"] > 0].assign(gpus=lambda d: d["gpu_hours"] / max(int(n_hours), 1))
    held = held.sort_values(["cost_usd", "team", "environment", "pool", "model"],
                            ascending=[False, True, True, True, True], ignore_index=True)
    return rightsize(held, models, factors(throughput), n_hours)


def _held_cloud(usage: pd.DataFrame, f: Filters) -> dict[str, list]:
    """placement.sql's {cloud_*} arrays: the GPU-hours and utilized GPU-hours each team (of the team
    filter; not "unallocated") held in each cloud, from placement_usage()."""
    held = usage[_held_by_teams(usage, f) & (usage["environment"] != "onprem")]
    held = held.groupby(["team", "environment"], observed=True)[["gpu_hours", "utilized_gpu_hours"]].sum()
    return {"cloud_teams": [str(t) for t, _ in held.index], "cloud_envs": [str(e) for _, e in held.index],
            "cloud_gpu_hours": held["gpu_hours"].astype(float).tolist(),
            "cloud_utilized": held["utilized_gpu_hours"].astype(float).tolist()}


def _held_by_teams(usage: pd.DataFrame, f: Filters) -> pd.Series:
    """The placement_usage() rows of GPU time held by a team (not "unallocated") the filters select."""
    keep = usage["held"].astype(bool) & (usage["team"] != "unallocated")
    return keep & usage["team"].isin(f.teams) if f.teams else keep


def onprem_pools(usage: pd.DataFrame) -> list[str]:
    """The on-prem pools with GPU time in the range (placement_usage())."""
    return sorted({str(p) for p in usage.loc[usage["environment"] == "onprem", "pool"]})


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
              queued: pd.DataFrame | None = None, throughput: dict[str, float] | None = None,
              sized: pd.DataFrame | None = None, demand: pd.DataFrame | None = None,
              usage: pd.DataFrame | None = None) -> pd.DataFrame:
    """Recommendation rows (sql/queries/placement.sql, plus a "right-size" row per placement_rightsize()
    row), one kind per team and per pool (throughput.one_outcome), biggest savings first. ``rates``,
    ``n_hours``, ``queued``, ``sized``, ``demand`` and ``usage`` are placement_rates(), hours(),
    queue_pressure(), placement_rightsize(), placement_demand() and placement_usage() of the same
    filters when the caller has them already; the teams whose p95 wait is ``queue_wait_h`` hours or
    more get a burst row."""
    usage = placement_usage(store, f) if usage is None else usage
    rates = placement_rates(store, f, usage) if rates is None else rates
    n_hours = hours(store, f) if n_hours is None else n_hours
    queued = queue_pressure(store, f, rates) if queued is None else queued
    sized = placement_rightsize(store, f, throughput, n_hours, usage=usage) if sized is None else sized
    demand = placement_demand(store, f, baseline_q) if demand is None else demand
    return with_rightsizing(placement_moves(store, f, baseline_q, saturated_pct, queue_wait_h, rates, n_hours, queued,
                                            demand, usage), sized)


def placement_moves(store, f: Filters, baseline_q: float, saturated_pct: float, queue_wait_h: float,
                    rates: pd.DataFrame, n_hours: int, queued: pd.DataFrame, demand: pd.DataFrame,
                    usage: pd.DataFrame) -> pd.DataFrame:
    """sql/queries/placement.sql's rows: the moves between environments and pools (placement())."""
    per_env, cheapest, cloud_gpu_hour = _cheapest_cloud(rates)
    waited = queued[queued["wait_p95_h"] >= queue_wait_h] if not queued.empty else queued
    return run(store, "placement", f, baseline_q=float(baseline_q), saturated_pct=float(saturated_pct),
               baseline_teams=[str(t) for t in demand.get("team", [])],
               baseline_gpus=[float(g) for g in demand.get("cloud_baseline_gpus", [])],
               rate_envs=list(per_env), rate_values=list(per_env.values()), cheapest=cheapest,
               onprem_pools=onprem_pools(usage), **_held_cloud(usage, f),
               cloud_usd_per_gpu_hour=cloud_gpu_hour, hours=int(n_hours),
               queue_pools=[str(p) for p in waited.get("pool", [])], queue_teams=[str(t) for t in waited.get("team", [])],
               queue_wait_p95_h=[float(w) for w in waited.get("wait_p95_h", [])],
               queue_gpu_hours=[float(g) for g in waited.get("pending_gpu_hours", [])],
               queue_pending_gpus=[float(g) for g in waited.get("pending_gpus", [])])


def with_rightsizing(recs: pd.DataFrame, sized: pd.DataFrame) -> pd.DataFrame:
    """placement_moves()'s rows and a "right-size" row per placement_rightsize() row, one kind per
    team and per pool (throughput.one_outcome), biggest savings first."""
    if sized.empty:
        return one_outcome(recs)
    right = pd.DataFrame({
        "kind": "right-size", "team": sized["team"], "pool": sized["pool"], "from_environment": sized["environment"],
        "to_environment": sized["environment"], "days": 0, "gpus": sized["gpus"], "gpu_hours": sized["gpu_hours"],
        "utilized_gpu_hours": sized["utilized_gpu_hours"],
        "from_usd_per_utilized_gpu_hour": sized["cost_usd"] / sized["utilized_gpu_hours"],
        "to_usd_per_utilized_gpu_hour": sized["alternative_cost_usd"] / sized["utilized_gpu_hours"],
        "savings_usd": sized["savings_usd"], "why": sized["why"]}, columns=recs.columns)
    return one_outcome(pd.concat([recs, right], ignore_index=True))


def runtime_matrix(store, f: Filters) -> pd.DataFrame:
    return run(store, "runtime_matrix", f)


def alerts(store, f: Filters, all_teams: bool = False) -> pd.DataFrame:
    """Current alerts with unit, the team's contact and where each was delivered (sql/queries/alerts.sql);
    ``all_teams``: whatever the team and environment filters (what a new silence would match)."""
    return run(store, "alerts", f, **({"teams": [], "envs": []} if all_teams else {}))


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


# The GPU page (dashboard/pages/gpu.py): one GPU entity, named by host, gpu_uuid and mig_instance
# ("" for the whole GPU). Its telemetry comes from gpu_minute (the samples, time-weighted per
# minute) for windows up to GPU_MINUTE_DAYS, else from gpu_hour; clocks, which no rollup keeps,
# from the raw samples for windows up to GPU_CLOCK_DAYS. Every series has at most GPU_MAX_POINTS
# buckets, counted from the window's start.
GPU_MAX_POINTS = 1500
GPU_MINUTE_DAYS = 2
GPU_CLOCK_DAYS = 7
GPU_MAX_RUNS = 2000          # owner runs drawn
GPU_MAX_WINDOWS = 500        # idle windows drawn
GPU_TOP = 50                 # GPUs listed without a GPU


def gpu_window_s(f: Filters) -> float:
    p = f.params()
    return (p["end"] - p["start"]).total_seconds()


def gpu_hourly(f: Filters) -> bool:
    """Whether the GPU page reads gpu_hour (else gpu_minute) for ``f``."""
    return gpu_window_s(f) > GPU_MINUTE_DAYS * 86400


def gpu_bucket_s(f: Filters, unit_s: int) -> int:
    """Bucket length: whole ``unit_s`` (60 or 3600), so that the window has at most GPU_MAX_POINTS."""
    return unit_s * max(1, -(-int(gpu_window_s(f)) // (unit_s * GPU_MAX_POINTS)))


def gpu_clocks_shown(f: Filters) -> bool:
    return gpu_window_s(f) <= GPU_CLOCK_DAYS * 86400


def gpu_info(store, f: Filters, gpu_uuid: str, mig_instance: str) -> pd.DataFrame:
    """The GPU as last seen (one row; none: never seen), whether its MIG instance ``mig_instance`` was."""
    return named(store, "gpu_info", {"gpu_uuid": gpu_uuid, "mig_instance": mig_instance})


def _entity(entity: dict) -> dict:
    return {"host": entity["host"], "gpu_uuid": entity["gpu_uuid"], "mig_instance": entity["mig_instance"]}


def _filled(df: pd.DataFrame, f: Filters, bucket_s: int) -> pd.DataFrame:
    """``df`` (a ``t`` column of bucket starts, numbers) with a row of NaN for every bucket of the
    window it lacks, so charts draw no-data as gaps, never as zero; every number a float."""
    p = f.params()
    every = pd.date_range(p["start"], p["end"], freq=f"{bucket_s}s", inclusive="left")
    df = df.set_index(pd.to_datetime(df["t"])).drop(columns="t").reindex(every)
    out = pd.DataFrame({c: df[c].fillna("") if pd.api.types.is_object_dtype(df[c]) or pd.api.types.is_string_dtype(df[c])
                        else df[c].astype("Float64").to_numpy("float64", na_value=float("nan")) for c in df.columns},
                       index=every)
    return out.rename_axis("t").reset_index()


def gpu_series_bucket_s(f: Filters) -> int:
    return gpu_bucket_s(f, 3600 if gpu_hourly(f) else 60)


def gpu_series(store, f: Filters, entity: dict) -> pd.DataFrame:
    """Utilization, memory, power, energy, temperature, XID, ECC, throttle reasons, the owner and the
    runtime per bucket (sql/queries/gpu_series.sql); one row per bucket of the window."""
    bucket_s = gpu_series_bucket_s(f)
    df = run(store, "gpu_series", f, **_entity(entity), hourly=int(gpu_hourly(f)), bucket_s=bucket_s)
    return df if df.empty else _filled(df.drop(columns="owner"), f, bucket_s)


OWNER = ["owner_team", "owner_user", "owner_job", "owner_namespace", "owner_pod", "owner_held"]


def gpu_owner_runs(series: pd.DataFrame, bucket_s: int, limit: int = GPU_MAX_RUNS) -> pd.DataFrame:
    """Runs of the same owner over consecutive buckets with data (team, user, job_id, k8s_namespace,
    k8s_pod, held, start, end, covered_h), earliest first, at most ``limit``: at most
    GPU_MAX_POINTS buckets, so pandas does it in a few vectorised steps."""
    held = series[series["covered_total_s"] > 0] if not series.empty else series
    if held.empty:
        return pd.DataFrame(columns=["team", "user", "job_id", "k8s_namespace", "k8s_pod", "held", "start", "end",
                                     "covered_h"])
    gap = (held["t"].diff() != pd.Timedelta(seconds=bucket_s)).to_numpy(dtype=bool)
    changed = (held[OWNER] != held[OWNER].shift()).any(axis=1).to_numpy(dtype=bool)
    run_id = (gap | changed).cumsum()
    runs = held.groupby(run_id).agg(**{c: (o, "first") for c, o in zip(
        ["team", "user", "job_id", "k8s_namespace", "k8s_pod", "held"], OWNER)},
        start=("t", "min"), end=("t", "max"), covered_s=("covered_total_s", "sum"))
    runs["end"] += pd.Timedelta(seconds=bucket_s)
    return runs.assign(covered_h=runs.pop("covered_s") / 3600).reset_index(drop=True).head(limit)


def gpu_runtime(series: pd.DataFrame) -> dict[str, str]:
    """The MIG profile, driver, CUDA and image last seen in the window, and every driver, CUDA and
    image seen (newest first), from gpu_series' rows; "" where none."""
    out = {}
    for key in ("mig_profile", "driver", "cuda", "image"):
        seen = [v for v in series.get(f"last_{key}", pd.Series(dtype=object)) if v]
        out[key] = seen[-1] if seen else ""
        out[f"{key}s"] = ", ".join(dict.fromkeys(reversed(seen)))
    return out


def gpu_clocks(store, f: Filters, entity: dict) -> pd.DataFrame:
    """SM and memory clocks from the raw samples; empty past GPU_CLOCK_DAYS (gpu_clocks_shown)."""
    if not gpu_clocks_shown(f):
        return pd.DataFrame()
    bucket_s = gpu_bucket_s(f, 60)
    df = run(store, "gpu_clocks", f, **_entity(entity), bucket_s=bucket_s)
    return df if df.empty else _filled(df, f, bucket_s)


def gpu_cost(store, f: Filters, entity: dict) -> pd.DataFrame:
    bucket_s = gpu_bucket_s(f, 3600)
    df = run(store, "gpu_cost", f, **_entity(entity), bucket_s=bucket_s)
    return df if df.empty else _filled(df, f, bucket_s)


def gpu_idle_windows(store, f: Filters, entity: dict, limit: int = GPU_MAX_WINDOWS) -> pd.DataFrame:
    return run(store, "gpu_idle_windows", f, **_entity(entity), limit=limit)


def gpu_top(store, f: Filters, search: str = "", limit: int = GPU_TOP) -> pd.DataFrame:
    """The costliest GPU entities in the range matching the filters and ``search``, with ``matches``."""
    return run(store, "gpu_top", f, search=search[:MAX_VALUE], limit=limit)
