"""The rollup + idle windows written plainly in pandas: the reference the derivation benchmark
measures the SQL against (bench/bench_derive.py).

It computes what sql/rollup/minute.sql, hour.sql and idle.sql compute — every column of
gpu_minute and gpu_hour, and the idle windows with owner, labels and cost — from the sample files,
one UTC day at a time with the neighbouring days' samples that hold into it.
tests/bench/test_pandas_reference.py checks that both give the same tables, so the benchmark compares
like with like. Straightforward means whole-column pandas/numpy operations (sort, shift, groupby,
merge_asof), no per-row Python and no tricks.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ENTITY = ["host", "gpu_uuid", "mig_instance"]
LABELS = ["mig_profile", "environment", "region", "cluster", "pool", "instance_id", "instance_type", "model",
          "driver_version", "cuda_version", "image"]
OWNER = ["team", "user", "job_id", "k8s_namespace", "k8s_pod", "slurm_account"]
RATE_OWNER = ["user", "job_id", "k8s_namespace"]      # with held: an owner as gpu_hour and gpu_cost_hour keep it
MEASURES = ["util_gpu", "util_mem", "mem_used_bytes", "mem_total_bytes", "power_w", "temperature_c", "xid_count",
            "xid_last", "ecc_uncorrected_volatile", "ecc_corrected_volatile", "throttle_reasons", "process_count"]
STRINGS = ENTITY + LABELS + OWNER
# (gpu_minute column, sample value it weights by time, its covered-seconds column)
WEIGHTED = [("util_gpu_s", "util_gpu", "util_covered_s"), ("util_mem_s", "util_mem", "util_mem_covered_s"),
            ("mem_used_s", "mem_used_bytes", "mem_covered_s"), ("energy_j", "power_w", "power_covered_s")]


def read_day(path: Path) -> pa.Table:
    return pq.read_table(path, columns=["ts"] + STRINGS + MEASURES, read_dictionary=STRINGS)


def rollup_and_idle(files: list[Path], analytics, thresholds: pd.DataFrame, rates: pd.DataFrame, teams: pd.DataFrame):
    """gpu_minute, gpu_hour and idle windows of every day in ``files`` (one file per UTC day, in order).

    ``analytics``: the [analytics] config (max_gap_s, default_interval_s, idle_max_gap_minutes);
    ``thresholds``: pool, idle_util_gpu_pct, idle_util_mem_pct, idle_min_minutes (config_pools);
    ``rates``: host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held, usd_per_s (what
    a covered second of that owner cost), hour_usd_per_s (of the GPU-hour);
    ``teams``: host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held, rule_team (the
    team the attribution rules gave that owner's GPU-time in that hour)."""
    # the samples before a day that its first ones hold on from or bridge to (as the SQL reads them)
    margin = timedelta(seconds=2 * analytics.max_gap_s + 60 * analytics.idle_max_gap_minutes)
    minutes, hours, idle, latest, loaded = [], [], [], [], {}
    for i in range(len(files)):
        # this day's samples and its neighbours' (a sample before midnight holds into the day)
        for j in range(max(i - 1, 0), min(i + 2, len(files))):
            if j not in loaded:
                loaded[j] = read_day(files[j])
        loaded.pop(i - 2, None)
        d0 = day_start(loaded[i])
        d1 = d0 + timedelta(days=1)
        frame = pa.concat_tables(
            [t.filter(pc.and_(pc.greater_equal(t["ts"], pa.scalar(d0 - margin, t["ts"].type)),
                              pc.less(t["ts"], pa.scalar(d1 + margin, t["ts"].type)))) for t in loaded.values()],
            promote_options="permissive").to_pandas()
        day_minutes = minute_rollup(frame, d0, d1, analytics)
        minutes.append(day_minutes)
        hours.append(hour_rollup(day_minutes))
        idle.append(held_samples(frame, d0, d1, analytics, thresholds))
        day = frame[(frame["ts"] >= d0) & (frame["ts"] < d1)]
        latest.append(day.groupby(ENTITY, observed=True)["ts"].max().reset_index())
    last_ts = pd.concat(latest, ignore_index=True).groupby(ENTITY, observed=True)["ts"].max().reset_index()
    windows = idle_windows(pd.concat(idle, ignore_index=True), analytics, rates, teams, last_ts)
    return pd.concat(minutes, ignore_index=True), pd.concat(hours, ignore_index=True), windows


def day_start(table: pa.Table) -> datetime:
    first = pc.min(table["ts"]).as_py()
    return datetime.combine(first.date(), datetime.min.time(), timezone.utc)


def holds(df: pd.DataFrame, analytics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(entity number, time in s, hold in s) of each sample of ``df`` (sorted by entity and time):
    a sample holds until the next one of its GPU within max_gap, else for the interval before it,
    else for the default interval."""
    entity = df.groupby(ENTITY, observed=True, sort=False).ngroup().to_numpy()
    t = df["ts"].to_numpy("datetime64[ms]").astype(np.int64) / 1000.
    same_next = np.r_[entity[1:] == entity[:-1], False]
    same_prev = np.r_[False, entity[1:] == entity[:-1]]
    step = np.r_[t[1:] - t[:-1], np.inf]
    gap_next = np.where(same_next, step, np.inf)
    gap_prev = np.where(same_prev, np.r_[np.inf, step[:-1]], np.inf)
    hold = np.where(gap_next <= analytics.max_gap_s, gap_next,
                    np.where(gap_prev <= analytics.max_gap_s, gap_prev, float(analytics.default_interval_s)))
    return entity, t, hold


def held(samples: pd.DataFrame) -> np.ndarray:
    """1 where a process, job, pod or user holds the GPU (allocated), whatever the process count."""
    return ((samples["process_count"].fillna(0) > 0) | (samples["job_id"] != "") | (samples["k8s_pod"] != "")
            | (samples["user"] != "")).to_numpy(np.uint8)


def minute_rollup(df: pd.DataFrame, d0: datetime, d1: datetime, analytics) -> pd.DataFrame:
    """gpu_minute of the day [d0, d1) from the samples of [d0 - max_gap, d1 + max_gap)."""
    df = df.sort_values(ENTITY + ["ts"], ignore_index=True)
    entity, t, hold = holds(df, analytics)
    a = np.maximum(t, d0.timestamp())
    b = np.minimum(t + hold, d1.timestamp())

    # one row per sample and minute its held interval overlaps
    rows = np.flatnonzero(b > a)
    first, last = np.floor(a[rows] / 60), np.ceil(b[rows] / 60)
    count = (last - first).astype(np.int64)
    rep = np.repeat(rows, count)
    m = np.repeat(first, count) + np.arange(len(rep)) - np.repeat(np.cumsum(count) - count, count)
    x = df.iloc[rep].reset_index(drop=True)
    x["entity"] = entity[rep]
    x["m"] = m.astype(np.int64)
    x["t"] = t[rep]
    x["overlap"] = np.minimum(b[rep], (m + 1) * 60) - np.maximum(a[rep], m * 60)
    x["own"] = m == np.floor(t[rep] / 60)
    middle = m * 60 + 30
    x["owner_key"] = x["overlap"] + np.where((a[rep] <= middle) & (b[rep] > middle), 100., 0.)
    x["held"] = held(x)
    for column, value, covered in WEIGHTED:
        x[covered] = np.where(x[value].notna(), x["overlap"], 0.)
        x[column] = x[value].fillna(0).astype(np.float64) * x["overlap"]
    x["mem_total_bytes"] = x["mem_total_bytes"].fillna(0)
    x["xid_own"] = np.where(x["own"], x["xid_count"], 0)
    x["throttle"] = x["throttle_reasons"].fillna(0).astype(np.uint64)

    # x is ordered by entity and time, so each GPU-minute is one run of rows
    groups = x.groupby(["entity", "m"], sort=False)
    out = groups.agg(
        samples=("own", "sum"), covered_s=("overlap", "sum"),
        **{name: (name, "sum") for column, _, covered in WEIGHTED for name in (covered, column)},
        mem_total_bytes=("mem_total_bytes", "max"), temperature_max=("temperature_c", "max"),
        xid_count=("xid_own", "sum"), ecc_uncorrected_max=("ecc_uncorrected_volatile", "max"),
        ecc_corrected_max=("ecc_corrected_volatile", "max")).reset_index()
    out["throttle_reasons"] = bit_or(groups, x["throttle"])
    # the owner is the one holding the GPU at the minute's middle, else the one whose sample held
    # longest in the minute (the first such sample)
    owner = x.loc[groups["owner_key"].idxmax().to_numpy(), ENTITY + OWNER + ["held"]].reset_index(drop=True)
    out = pd.concat([out, owner], axis=1)
    xid = x[x["own"] & x["xid_last"].notna()].groupby(["entity", "m"])["xid_last"].last()
    out = out.merge(xid.rename("xid_last").reset_index(), on=["entity", "m"], how="left")
    out["minute"] = pd.to_datetime(out["m"] * 60, unit="s", utc=True).astype("datetime64[ms, UTC]")

    # labels from the latest hour (of samples up to the day's end) at or before each minute
    before_end = df[t < d1.timestamp()].assign(entity=entity[t < d1.timestamp()], label_hour=lambda f: f["ts"].dt.floor("h"))
    labels = before_end.drop_duplicates(["entity", "label_hour"], keep="last")[["entity", "label_hour"] + LABELS]
    out = pd.merge_asof(out.sort_values("minute"), labels.sort_values("label_hour"), left_on="minute",
                        right_on="label_hour", by="entity")
    out["instance_key"] = out["instance_id"].astype(str).map(instance_key)
    return out.drop(columns=["entity", "m", "label_hour"])


def instance_key(instance_id: str) -> str:
    """instance_id normalised like billing's resource_key (sql/migrations/002)."""
    value = instance_id.strip()
    if value.lower().startswith("/subscriptions/"):
        return value.lower().rstrip("/")
    if re.fullmatch(r"arn:[^:]+:ec2:[^:]*:[^:]*:instance/[^/]+", value):
        return re.search(r"instance/([^/]+)$", value).group(1)
    if re.search(r"/instances/[^/]+$", value):
        return re.search(r"/instances/([^/]+)$", value).group(1)
    return value


def hour_rollup(minutes: pd.DataFrame) -> pd.DataFrame:
    """gpu_hour from gpu_minute: per GPU entity, hour and owner."""
    m = minutes.sort_values("minute").assign(hour=minutes["minute"].dt.floor("h"))
    keys = ["hour"] + ENTITY + OWNER + ["held"]
    sums = ["samples", "covered_s"] + [name for column, _, covered in WEIGHTED for name in (covered, column)] + ["xid_count"]
    groups = m.groupby(keys, observed=True, sort=False)
    out = groups.agg(**{c: (c, "sum") for c in sums}, **{c: (c, "last") for c in LABELS + ["instance_key"]},
                     mem_total_bytes=("mem_total_bytes", "max"), temperature_max=("temperature_max", "max"),
                     ecc_uncorrected_max=("ecc_uncorrected_max", "max"), ecc_corrected_max=("ecc_corrected_max", "max"),
                     xid_last=("xid_last", "last"))
    out["throttle_reasons"] = bit_or(groups, m["throttle_reasons"])
    return out.reset_index()


def bit_or(groups, values: pd.Series) -> np.ndarray:
    """The bitwise OR of ``values`` per group, in the groups' (first appearance) order."""
    group = groups.ngroup().to_numpy()
    order = np.argsort(group, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0])
    return np.bitwise_or.reduceat(values.to_numpy(np.uint64)[order], starts)


def held_samples(df: pd.DataFrame, d0: datetime, d1: datetime, analytics, thresholds: pd.DataFrame) -> pd.DataFrame:
    """The idle samples of the day [d0, d1), each with how long it holds (clipped to the day's end)
    and what came right before it (whether that sample was idle, its owner, when it stopped
    holding): all that idle windows are made of. The neighbours come from the margins of ``df``."""
    df = df.sort_values(ENTITY + ["ts"], ignore_index=True)
    entity, t, hold = holds(df, analytics)
    s = df[["ts"] + ENTITY + ["environment", "region", "pool", "instance_id", "model", "util_gpu", "util_mem",
                              "process_count"] + OWNER].merge(thresholds, on="pool", how="left")
    s["t"], s["end"], s["entity"] = t, np.minimum(t + hold, d1.timestamp()), entity
    s["idle"] = (s["util_gpu"].notna() & (s["util_gpu"] < s["idle_util_gpu_pct"])
                 & (s["util_mem"].fillna(0) < s["idle_util_mem_pct"]))
    s["held"] = held(s)
    s["owner"] = pd.util.hash_pandas_object(s[OWNER + ["held"]].astype(str), index=False).to_numpy()
    same = np.r_[False, entity[1:] == entity[:-1]]
    s["prev_idle"] = same & np.r_[False, s["idle"].to_numpy()[:-1]]
    s["prev_owner"] = np.r_[0, s["owner"].to_numpy()[:-1]]
    s["prev_end"] = np.r_[-np.inf, (t + hold)[:-1]]
    day = (t >= d0.timestamp()) & (t < d1.timestamp())
    return s[day & s["idle"].to_numpy()].drop(columns=["entity", "idle"]).reset_index(drop=True)


def idle_windows(idle: pd.DataFrame, analytics, rates: pd.DataFrame, teams: pd.DataFrame,
                 last_ts: pd.DataFrame) -> pd.DataFrame:
    """Idle windows (DESIGN.md "Idle window"), straight from their definition: a run of consecutive
    idle samples of one GPU and owner, each held until the next, with no busy sample inside and no
    no-data gap over idle_max_gap_minutes, lasting at least the pool's idle_min_minutes. A window is
    open when it still holds its GPU entity's latest sample (``last_ts``: entity, ts). Its team is
    the one the attribution rules gave its owner in its first hour (``teams``)."""
    idle = idle.sort_values(ENTITY + ["ts"], ignore_index=True)
    # a window goes on from the sample before when that one was idle, of the same owner, and
    # stopped holding at most the bridge before this one
    entity = idle.groupby(ENTITY, observed=True, sort=False).ngroup().to_numpy()
    joined = (np.r_[False, entity[1:] == entity[:-1]] & idle["prev_idle"] & (idle["prev_owner"] == idle["owner"])
              & (idle["t"] - idle["prev_end"] <= analytics.idle_max_gap_minutes * 60))
    idle["window"] = (~joined).cumsum()

    # cost: each sample's held time, cut at hours, at its owner's cost per covered second in that
    # GPU-hour (the GPU-hour's where the owner has no cost of its own)
    first, last = np.floor(idle["t"].to_numpy() / 3600), np.ceil(idle["end"].to_numpy() / 3600)
    count = (last - first).astype(np.int64)
    rep = np.repeat(np.arange(len(idle)), count)
    h = np.repeat(first, count) + np.arange(len(rep)) - np.repeat(np.cumsum(count) - count, count)
    pieces = idle.iloc[rep].reset_index(drop=True)
    pieces["covered"] = (np.minimum(pieces["end"].to_numpy(), (h + 1) * 3600)
                         - np.maximum(pieces["t"].to_numpy(), h * 3600))
    pieces["hour"] = pd.to_datetime(h * 3600, unit="s", utc=True).astype("datetime64[ms, UTC]")
    pieces[RATE_OWNER] = pieces[RATE_OWNER].astype(str)
    pieces["held"] = pieces["held"].astype(np.uint8)
    pieces = pieces.merge(rates.drop(columns=["hour_usd_per_s"]), on=ENTITY + ["hour"] + RATE_OWNER + ["held"], how="left")
    pieces = pieces.merge(rates.groupby(ENTITY + ["hour"], as_index=False)["hour_usd_per_s"].first(),
                          on=ENTITY + ["hour"], how="left")
    pieces["cost"] = pieces["covered"] * pieces["usd_per_s"].fillna(pieces["hour_usd_per_s"]).fillna(0)
    pieces["weighted_gpu"] = pieces["util_gpu"] * pieces["covered"]
    pieces["weighted_mem"] = pieces["util_mem"].fillna(0) * pieces["covered"]

    w = pieces.groupby("window").agg(
        **{c: (c, "first") for c in ENTITY + ["environment", "region", "pool", "instance_id", "model"] + OWNER},
        start=("t", "min"), end=("end", "max"), held=("held", "first"), min_minutes=("idle_min_minutes", "first"),
        covered_s=("covered", "sum"), weighted_gpu=("weighted_gpu", "sum"), weighted_mem=("weighted_mem", "sum"),
        cost_usd=("cost", "sum"))
    w["duration_s"] = (np.round(w["end"] * 1000) - np.round(w["start"] * 1000)) / 1000
    w = w[w["duration_s"] >= w["min_minutes"] * 60].copy()
    for column in ("start", "end"):
        w[column] = pd.to_datetime(np.round(w[column] * 1000).astype(np.int64), unit="ms", utc=True)
    w["kind"] = np.where(w["held"] == 1, "allocated", "unallocated")
    for column in OWNER:
        w[column] = np.where(w["held"] == 1, w[column].astype(str), "")
    w["hour"] = w["start"].dt.floor("h").astype("datetime64[ms, UTC]")
    w["held"] = w["held"].astype(np.uint8)
    for column in ENTITY:
        w[column] = w[column].astype(str)
    w = w.merge(teams, on=ENTITY + ["hour", "user", "job_id", "k8s_namespace", "held"], how="left")
    w["team"] = w["rule_team"].fillna("")
    w = w.drop(columns=["hour", "rule_team"])
    w["avg_util_gpu"] = (w["weighted_gpu"] / w["covered_s"]).astype(np.float32)
    w["avg_util_mem"] = (w["weighted_mem"] / w["covered_s"]).astype(np.float32)
    w = w.merge(last_ts.rename(columns={"ts": "last_ts"}), on=ENTITY, how="left")
    w["is_open"] = (w["end"] > w["last_ts"]).astype(np.uint8)
    w = w.drop(columns=["last_ts"])
    return w.drop(columns=["held", "min_minutes", "weighted_gpu", "weighted_mem"]).reset_index(drop=True)


def inputs(store) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The idle thresholds per pool, the cost per covered second of each GPU entity, hour and owner, and
    the team the rules gave each owner's hour, as the SQL sees them (config_pools and gpu_cost_hour)."""
    thresholds = store.client.query_df(
        "SELECT pool, idle_util_gpu_pct, idle_util_mem_pct, idle_min_minutes FROM config_pools")
    rates = store.client.query_df(
        "SELECT host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held, cost / covered AS usd_per_s, "
        "sum(cost) OVER h / sum(covered) OVER h AS hour_usd_per_s FROM "
        "(SELECT host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held, sum(cost_usd) AS cost "
        " FROM gpu_cost_hour GROUP BY ALL) AS c "
        "INNER JOIN (SELECT host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held, sum(covered_s) AS covered "
        " FROM gpu_hour GROUP BY ALL) AS g USING (host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held) "
        "WINDOW h AS (PARTITION BY host, gpu_uuid, mig_instance, hour)")
    rates["hour"] = pd.to_datetime(rates["hour"], utc=True).astype("datetime64[ms, UTC]")
    for column in ENTITY + RATE_OWNER:
        rates[column] = rates[column].astype(str)
    rates["held"] = rates["held"].astype(np.uint8)
    teams = store.client.query_df(
        "SELECT host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held, argMax(team, gpu_hours) AS rule_team "
        "FROM gpu_cost_hour GROUP BY host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held")
    teams["hour"] = pd.to_datetime(teams["hour"], utc=True).astype("datetime64[ms, UTC]")
    for column in ("host", "gpu_uuid", "mig_instance", "user", "job_id", "k8s_namespace"):
        teams[column] = teams[column].astype(str)
    teams["held"] = teams["held"].astype(np.uint8)
    return thresholds, rates, teams
