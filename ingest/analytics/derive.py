"""The scheduler's work: bring every derived table up to date with the samples and bills.

``derive(store, cfg)`` finds the days whose inputs changed since they were last derived (new or
late samples, a restated bill, a changed cost model or attribution rule), recomputes each such
day of gpu_minute, gpu_hour, gpu_cost_hour and team_spend_day (idempotently: whole-day
partition replacement), then the idle windows from the earliest such day on, then the
compliance findings. Run it as often as you like: an unchanged day is not recomputed.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from datetime import time as dt_time

from ingest.analytics import compliance, configtables
from ingest.analytics.attribution import rules_expression
from ingest.analytics.replace import IN_ORDER, replace_day
from ingest.sqlfiles import query

log = logging.getLogger(__name__)


@dataclass
class DeriveReport:
    days: list[date] = field(default_factory=list)
    idle_windows: int = 0
    findings: int = 0
    seconds: float = 0.0


def derive(store, cfg, *, since: date | None = None, until: date | None = None, force: bool = False,
           progress: Callable[[str], None] = log.info, now: datetime | None = None) -> DeriveReport:
    started = time.perf_counter()
    now = now or datetime.now(timezone.utc)
    config_fp = configtables.fingerprint(cfg)
    since = since or (now - timedelta(days=cfg.analytics.lookback_days)).date()
    until = until or now.date()
    state = derived_state(store)
    days = changed_days(store, since, until, config_fp, force, state)
    report = DeriveReport(days=days)
    if days:
        inputs = {day: day_inputs(store, day) for day in days}
        starts = derive_days(store, cfg, days, inputs, state, config_fp, force, progress)
        first = starts[days[0]] or datetime.combine(days[0], dt_time.min, timezone.utc)
        report.idle_windows = derive_idle_windows(store, cfg, first,
                                                  datetime.combine(until + timedelta(days=1), dt_time.min, timezone.utc))
        # recorded last: a run killed before this point leaves its days to be derived again
        record(store, inputs, config_fp)
    report.findings = compliance.derive_findings(store, cfg, since=since, until=until)
    report.seconds = time.perf_counter() - started
    return report


def derive_days(store, cfg, days: list[date], inputs: dict[date, tuple[int, int]], state: dict, config_fp: int,
                force: bool, progress: Callable[[str], None]) -> dict[date, datetime | None]:
    """Recompute the per-day tables of ``days``, ``cfg.analytics.workers`` days at a time; return
    for each day the hour it was recomputed from (None: the whole day)."""
    params = {"max_gap_s": cfg.analytics.max_gap_s, "default_interval_s": cfg.analytics.default_interval_s}
    starts = {day: None if force else first_changed_hour(store, day, state.get(day), inputs[day], config_fp)
              for day in days}
    rule_params: dict = {}
    rules = rules_expression(cfg.attribution, rule_params)
    handles = [store] + [store.clone() for _ in range(min(cfg.analytics.workers, len(days)) - 1)]
    done = iter(range(1, len(days) + 1))

    def costs(handle, day):
        cost_day(handle, day, rules, rule_params, starts[day])
        progress(f"[{next(done)}/{len(days)}] derived {day}" + (f" from {starts[day]:%H:%M}" if starts[day] else ""))

    try:
        # the rollups of every day first: a bill spanning days needs all their GPU-hours
        in_parallel(handles, days, lambda handle, day: rollup_day(handle, day, params, starts[day]))
        configtables.refresh(store, cfg)
        in_parallel(handles, days, costs)
    finally:
        for handle in handles[1:]:
            handle.close()
    return starts


def in_parallel(handles, days: list[date], work) -> None:
    """Run ``work(handle, day)`` for every day, one day at a time per store handle."""
    if len(handles) == 1:
        for day in days:
            work(handles[0], day)
        return
    with ThreadPoolExecutor(len(handles)) as pool:
        list(pool.map(lambda i: [work(handles[i], day) for day in days[i::len(handles)]], range(len(handles))))


def rollup_day(store, day: date, params: dict, start: datetime | None = None) -> None:
    """gpu_minute and gpu_hour of one day — only from ``start`` on when given (earlier rows kept)."""
    _steps(store, day, start, [("gpu_minute", "minute", params, None, "minute"), ("gpu_hour", "hour", {}, None, "hour")])


def cost_day(store, day: date, rules: str, rule_params: dict, start: datetime | None = None) -> None:
    """gpu_cost_hour, team_spend_day and the daily rollups of one day, after its rollups."""
    _steps(store, day, start, [
        ("gpu_cost_hour", "cost", rule_params, query("analytics/cost").replace("__TEAM_RULES__", rules), "hour"),
        ("team_spend_day", "spend", rule_params, query("analytics/spend").replace("__TEAM_RULES__", rules), None),
        ("gpu_cost_day", "cost_day", {}, None, None),
        ("team_demand_hour", "team_demand", {}, None, None)])


def _steps(store, day: date, start: datetime | None, steps) -> None:
    timings = {}
    for table, sql_name, parameters, text, time_column in steps:
        started = time.perf_counter()
        keep = (time_column, start) if start and time_column else None
        replace_day(store, table, day, sql_name, parameters, sql_text=text, keep=keep)
        timings[table] = round(time.perf_counter() - started, 3)
    log.debug("derived %s: %s", day, timings)


def day_inputs(store, day: date) -> tuple[int, int]:
    rows = store.scalar(
        "SELECT sum(rows) FROM system.parts WHERE database = currentDatabase() AND table = 'gpu_samples' "
        "AND active AND partition = {p:String}", {"p": day.isoformat()}) or 0
    bill = store.scalar(
        "SELECT sum(cityHash64(line_item_key, toString(EffectiveCost), ResourceId)) FROM billing_line_items "
        "WHERE toDate(ChargePeriodStart) = {d:Date}", {"d": day}) or 0
    return int(rows), int(bill)


def derived_state(store) -> dict[date, tuple[int, int, int]]:
    """day -> (sample rows, billing fingerprint, config fingerprint) when it was last derived."""
    return {d: (int(r), int(b), int(c)) for d, r, b, c in store.rows(
        "SELECT day, argMax(sample_rows, computed_at), argMax(billing_fingerprint, computed_at), "
        "argMax(config_fingerprint, computed_at) FROM derivation_state GROUP BY day")}


def first_changed_hour(store, day: date, previous, inputs: tuple[int, int], config_fp: int) -> datetime | None:
    """When only new or late samples changed a day: the hour to recompute from (one hour before
    the first hour whose sample count differs from what was derived, since the last sample
    before it holds into it). None: recompute the whole day (new day, restated bill, new config)."""
    if previous is None or previous[1:] != (inputs[1], config_fp):
        return None
    rows = store.rows(
        "SELECT h FROM (SELECT toStartOfHour(ts) AS h, count() AS n FROM gpu_samples "
        "WHERE ts >= {d0:DateTime} AND ts < {d0:DateTime} + INTERVAL 1 DAY GROUP BY h) AS s "
        "FULL OUTER JOIN (SELECT hour AS h, sum(samples) AS n FROM gpu_hour "
        "WHERE hour >= {d0:DateTime} AND hour < {d0:DateTime} + INTERVAL 1 DAY GROUP BY h) AS g USING (h) "
        "WHERE s.n != g.n ORDER BY h LIMIT 1", {"d0": datetime.combine(day, dt_time.min)})
    if not rows:
        return None
    start = datetime.combine(day, dt_time.min, timezone.utc)
    return max(start, rows[0][0].replace(tzinfo=timezone.utc) - timedelta(hours=1))


def changed_days(store, since: date, until: date, config_fp: int, force: bool, state: dict) -> list[date]:
    """Days in [since, until] with samples or bills whose inputs differ from what was derived."""
    samples = dict(store.rows(
        "SELECT toDate(partition), sum(rows) FROM system.parts WHERE database = currentDatabase() "
        "AND table = 'gpu_samples' AND active GROUP BY partition"))
    bills = dict(store.rows(
        "SELECT toDate(ChargePeriodStart) AS d, sum(cityHash64(line_item_key, toString(EffectiveCost), ResourceId)) "
        "FROM billing_line_items WHERE d >= {a:Date} AND d <= {b:Date} GROUP BY d", {"a": since, "b": until}))
    days = sorted(d for d in set(samples) | set(bills) | set(state) if since <= d <= until)
    return [d for d in days if force or state.get(d) != (int(samples.get(d, 0)), int(bills.get(d, 0)), config_fp)]


def record(store, inputs: dict[date, tuple[int, int]], config_fp: int) -> None:
    """Remember what each day was derived from, so an unchanged day is not derived again."""
    store.client.insert("derivation_state", [[day, rows, bill, config_fp] for day, (rows, bill) in inputs.items()],
                        column_names=["day", "sample_rows", "billing_fingerprint", "config_fingerprint"])


def derive_idle_windows(store, cfg, start: datetime, until: datetime) -> int:
    """Recompute idle windows from ``start`` (snapped back to any window open then)."""
    params = {"from": start.replace(tzinfo=None), "until": until.replace(tzinfo=None),
              "max_gap_minutes": cfg.analytics.idle_max_gap_minutes}
    open_since = store.scalar("SELECT min(start) FROM idle_windows WHERE end >= {from:DateTime} - INTERVAL {g:UInt32} MINUTE",
                              {"from": params["from"], "g": params["max_gap_minutes"]})
    params["scan_from"] = min(params["from"], open_since) if open_since and open_since.year > 1970 else params["from"]
    stage = f"_stage_idle_{uuid.uuid4().hex[:10]}"
    store.command(f"CREATE TABLE `{stage}` AS idle_windows")
    try:
        columns = [c for c in store.rows("SELECT name FROM system.columns WHERE database = currentDatabase() "
                                         "AND table = 'idle_windows' AND name != 'computed_at' ORDER BY position")]
        cols = ", ".join(f"`{c[0]}`" for c in columns)
        store.command(f"INSERT INTO `{stage}` ({cols}) SELECT {cols} FROM ({query('analytics/idle')})", parameters=params,
                      settings=IN_ORDER)
        store.command("DELETE FROM idle_windows WHERE end >= {from:DateTime} - INTERVAL {g:UInt32} MINUTE",
                      parameters={"from": params["from"], "g": params["max_gap_minutes"]})
        store.command(f"INSERT INTO idle_windows ({cols}) SELECT {cols} FROM `{stage}`")
        return int(store.scalar(f"SELECT count() FROM `{stage}`"))
    finally:
        store.command(f"DROP TABLE IF EXISTS `{stage}`")
