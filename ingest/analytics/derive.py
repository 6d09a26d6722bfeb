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
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone

from ingest.analytics import compliance, configtables
from ingest.analytics.attribution import rules_expression
from ingest.analytics.replace import replace_day
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
    configtables.refresh(store, cfg)
    config_fp = configtables.fingerprint(cfg)
    since = since or (now - timedelta(days=cfg.analytics.lookback_days)).date()
    until = until or now.date()
    days = changed_days(store, since, until, config_fp, force)
    report = DeriveReport(days=days)
    params = {"max_gap_s": cfg.analytics.max_gap_s, "default_interval_s": cfg.analytics.default_interval_s}
    for number, day in enumerate(days, 1):
        inputs = day_inputs(store, day)
        derive_day(store, cfg, day, params)
        record(store, day, inputs, config_fp)
        progress(f"[{number}/{len(days)}] derived {day}")
    if days:
        report.idle_windows = derive_idle_windows(store, cfg, datetime.combine(days[0], datetime.min.time(), timezone.utc),
                                                  datetime.combine(until + timedelta(days=1), datetime.min.time(), timezone.utc))
    report.findings = compliance.derive_findings(store, cfg, since=since, until=until)
    report.seconds = time.perf_counter() - started
    return report


def derive_day(store, cfg, day: date, params: dict) -> dict[str, float]:
    """Recompute one day of every per-day table; return seconds per table (logged at debug)."""
    rule_params: dict = {}
    rules = rules_expression(cfg.attribution, rule_params)
    steps = [("gpu_minute", "minute", params, None), ("gpu_hour", "hour", {}, None),
             ("gpu_cost_hour", "cost", rule_params, query("analytics/cost").replace("__TEAM_RULES__", rules)),
             ("team_spend_day", "spend", rule_params, query("analytics/spend").replace("__TEAM_RULES__", rules))]
    timings = {}
    for table, sql_name, parameters, text in steps:
        started = time.perf_counter()
        replace_day(store, table, day, sql_name, parameters, sql_text=text)
        timings[table] = round(time.perf_counter() - started, 3)
    log.debug("derived %s: %s", day, timings)
    return timings


def day_inputs(store, day: date) -> tuple[int, int]:
    rows = store.scalar(
        "SELECT sum(rows) FROM system.parts WHERE database = currentDatabase() AND table = 'gpu_samples' "
        "AND active AND partition = {p:String}", {"p": day.isoformat()}) or 0
    bill = store.scalar(
        "SELECT sum(cityHash64(line_item_key, toString(EffectiveCost), ResourceId)) FROM billing_line_items "
        "WHERE toDate(ChargePeriodStart) = {d:Date}", {"d": day}) or 0
    return int(rows), int(bill)


def changed_days(store, since: date, until: date, config_fp: int, force: bool) -> list[date]:
    """Days in [since, until] with samples or bills whose inputs differ from what was derived."""
    samples = dict(store.rows(
        "SELECT toDate(partition), sum(rows) FROM system.parts WHERE database = currentDatabase() "
        "AND table = 'gpu_samples' AND active GROUP BY partition"))
    bills = dict(store.rows(
        "SELECT toDate(ChargePeriodStart) AS d, sum(cityHash64(line_item_key, toString(EffectiveCost), ResourceId)) "
        "FROM billing_line_items WHERE d >= {a:Date} AND d <= {b:Date} GROUP BY d", {"a": since, "b": until}))
    state = {d: (r, b, c) for d, r, b, c in store.rows(
        "SELECT day, argMax(sample_rows, computed_at), argMax(billing_fingerprint, computed_at), "
        "argMax(config_fingerprint, computed_at) FROM derivation_state GROUP BY day")}
    days = sorted(d for d in set(samples) | set(bills) | set(state) if since <= d <= until)
    return [d for d in days if force or state.get(d) != (int(samples.get(d, 0)), int(bills.get(d, 0)), config_fp)]


def record(store, day: date, inputs: tuple[int, int], config_fp: int) -> None:
    store.client.insert("derivation_state", [[day, inputs[0], inputs[1], config_fp]],
                        column_names=["day", "sample_rows", "billing_fingerprint", "config_fingerprint"])


def derive_idle_windows(store, cfg, start: datetime, until: datetime) -> int:
    """Recompute idle windows from ``start`` (snapped back to any window open then)."""
    params = {"from": start.replace(tzinfo=None), "until": until.replace(tzinfo=None),
              "max_gap_minutes": cfg.analytics.idle_max_gap_minutes}
    stage = f"_stage_idle_{uuid.uuid4().hex[:10]}"
    store.command(f"CREATE TABLE `{stage}` AS idle_windows")
    try:
        columns = [c for c in store.rows("SELECT name FROM system.columns WHERE database = currentDatabase() "
                                         "AND table = 'idle_windows' AND name != 'computed_at' ORDER BY position")]
        cols = ", ".join(f"`{c[0]}`" for c in columns)
        store.command(f"INSERT INTO `{stage}` ({cols}) SELECT {cols} FROM ({query('analytics/idle')})", parameters=params,
                      settings={"optimize_aggregation_in_order": 1})
        store.command("DELETE FROM idle_windows WHERE end >= {from:DateTime} - INTERVAL {g:UInt32} MINUTE",
                      parameters={"from": params["from"], "g": params["max_gap_minutes"]})
        store.command(f"INSERT INTO idle_windows ({cols}) SELECT {cols} FROM `{stage}`")
        return int(store.scalar(f"SELECT count() FROM `{stage}`"))
    finally:
        store.command(f"DROP TABLE IF EXISTS `{stage}`")
