"""``gpuledger rollup`` (and the scheduler's "rollup" job): bring every derived table up to date
with the samples and bills.

``rollup(store, cfg)`` finds the days whose inputs changed since they were last derived (new or
late samples, a restated bill, a changed cost model or attribution rule), recomputes each such
day of gpu_minute, gpu_hour, gpu_cost_hour and team_spend_day (idempotently: whole-day
partition replacement), then the idle windows from the earliest such day on, then the
compliance findings. Run it as often as you like: an unchanged day is not recomputed.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from datetime import time as dt_time

from base.events import ROLLUP_FINISHED, announce
from base.sqlfiles import sql, text
from ingest.rollup import compliance, configtables
from ingest.rollup.attribution import rules_expression
from ingest.rollup.parallel import in_parallel, run_jobs
from ingest.rollup.replace import DERIVE_SETTINGS, replace_day, replace_days, runs, swap_units

log = logging.getLogger(__name__)


@dataclass
class RollupReport:
    days: list[date] = field(default_factory=list)
    idle_windows: int = 0
    findings: int = 0
    seconds: float = 0.0


def rollup(store, cfg, *, since: date | None = None, until: date | None = None, force: bool = False,
           progress: Callable[[str], None] = log.info, now: datetime | None = None) -> RollupReport:
    try:
        return _rollup(store, cfg, since, until, force, progress, now)
    finally:
        announce(ROLLUP_FINISHED, getattr(store, "target", None))   # readers that cache derived rows empty them


def _rollup(store, cfg, since, until, force, progress, now) -> RollupReport:
    started = time.perf_counter()
    now = now or datetime.now(timezone.utc)
    config_fp = configtables.fingerprint(cfg)
    lookback = (now - timedelta(days=cfg.analytics.lookback_days)).date(), now.date()
    since, until = since or lookback[0], until or lookback[1]
    # findings span days, so they are recomputed over the lookback window and the run's days: a
    # backfill of a few days keeps the findings of the others
    findings_window = {"since": min(since, lookback[0]), "until": max(until, lookback[1])}
    state = derived_state(store)
    current = day_inputs(store, since, until)
    days = changed_days(since, until, config_fp, force, state, current)
    report = RollupReport(days=days)
    if days:
        inputs = {day: current.get(day, (0, 0)) for day in days}
        rule_params: dict = {}
        rules = rules_expression(cfg.attribution, rule_params)
        starts = derive_days(store, cfg, days, inputs, state, config_fp, force, progress, rules, rule_params)
        first = starts[days[0]] or datetime.combine(days[0], dt_time.min, timezone.utc)
        end = datetime.combine(until + timedelta(days=1), dt_time.min, timezone.utc)
        report.idle_windows, changed_from = derive_idle_windows(store, cfg, first, end)
        # to the last day with inputs: a later day has no samples or bills, and none it had went
        # unnoticed (such a day is among ``days``), so it has no waste or showback to derive
        last = min(until, max(days[-1], max(current, default=days[-1])))
        found = []
        # the compliance findings read GPU-hours, their costs and bills, not the waste: beside it
        derive_waste(store, cfg, min(first.date(), changed_from.date()), last, rules, rule_params,
                     beside=[lambda h: found.append(compliance.derive_findings(h, cfg, **findings_window))])
        report.findings = found[0]
        # recorded last: a run killed before this point leaves its days to be derived again
        record(store, inputs, config_fp)
    else:
        report.findings = compliance.derive_findings(store, cfg, **findings_window)
    report.seconds = time.perf_counter() - started
    return report


def derive_days(store, cfg, days: list[date], inputs: dict[date, tuple[int, int]], state: dict, config_fp: int,
                force: bool, progress: Callable[[str], None], rules: str, rule_params: dict) -> dict[date, datetime | None]:
    """Recompute the per-day tables of ``days`` on ``cfg.analytics.workers`` handles: the minute
    rollups a day at a time and the idle segments a run of days at a time (sample_units), the
    tables derived from GPU-hours a run of days at a time (hour_units); return for each day the
    hour it was recomputed from (None: the whole day)."""
    params = {"max_gap_s": cfg.analytics.max_gap_s, "default_interval_s": cfg.analytics.default_interval_s}
    starts = {day: None if force else first_changed_hour(store, day, state.get(day), inputs[day], config_fp)
              for day in days}

    idle_params = idle_parameters(cfg)
    read, hours = sample_units(days, starts, inputs), hour_units(days, starts)

    share = text("rollup/entity_share")

    def costs(handle, unit):
        derive_steps(handle, *unit, [("billing_line_hour", "line_hours", {}, {"entity_share": share}, "hour", None),
                                     ("gpu_cost_hour", "cost", rule_params, {"team_rules": rules, "entity_share": share},
                                      "hour", None)])

    handles = worker_handles(store, cfg.analytics.workers)
    # the rollups of every day first: a bill spanning days needs all their GPU-hours
    parts = derive_minutes(handles, read, params, idle_params, progress)
    in_parallel(handles, hours, lambda handle, unit: derive_steps(handle, *unit, [HOUR_STEP]))
    configtables.refresh(store, cfg)
    in_parallel(handles, hours, costs)
    # each day's idle time priced by its GPU-hour costs; beside it the daily rollups of the costs
    derive_idle_segments(handles, read, parts, idle_params, progress, beside=daily_rollups(days, rules, rule_params))
    return starts


def derive_minutes(handles, units, params: dict, idle_params: dict,
                   progress: Callable[[str], None] = lambda m: None) -> dict[tuple[date, ...], list]:
    """gpu_minute of every unit (sample_units) side by side, a day per query (two days in one
    query ran no faster beside another such query: 3.2-3.6 s against 1.6-1.7 s a day); return
    how each unit's samples are read (sample_parts), found once for the minutes and the idle
    segments."""
    parts, total = {}, sum(len(days) for days, _ in units)
    done = iter(range(1, total + 1))

    def minutes(handle, unit):
        days, start = unit
        parts[tuple(days)] = sample_parts(handle, days[0], idle_params["lookback_s"], params["max_gap_s"], start, days[-1])
        for day in days:
            derive_steps(handle, [day], start, [minute_step(params, parts[tuple(days)])])
            progress(f"[{next(done)}/{total}] minutes of {day}" + (f" from {start:%H:%M}" if start else ""))
    in_parallel(handles, units, minutes)
    return parts


def derive_idle_segments(handles, units, parts: dict[tuple[date, ...], list], idle_params: dict,
                         progress: Callable[[str], None] = lambda m: None, beside: Sequence[Callable] = ()) -> None:
    """gpu_idle_segments of every unit (sample_units) side by side, its samples read as ``parts``
    says (derive_minutes); after the GPU-hour costs, which price the idle time. The jobs
    ``beside`` (``job(handle)``, reading no idle segments) take the handles free after them."""
    total = sum(len(days) for days, _ in units)
    done = iter(range(1, total + 1))

    def segments(handle, unit):
        days, start = unit
        derive_steps(handle, days, start, [("gpu_idle_segments", "idle_segments", idle_params, None, "hour", parts[tuple(days)])])
        for day in days:
            progress(f"[{next(done)}/{total}] derived {day}" + (f" from {start:%H:%M}" if start else ""))
    jobs = [lambda handle, unit=unit: segments(handle, unit) for unit in units] + list(beside)
    in_parallel(handles, jobs, lambda handle, job: job(handle))


def idle_parameters(cfg) -> dict:
    """What sql/rollup/idle_segments.sql needs: the sample holds, how far back to read for the
    sample before a day's first (the bridge of a no-data gap, plus two holds), and the idle
    thresholds of the configured pools (any other pool has the [analytics] defaults)."""
    a = cfg.analytics
    gpu = [a.idle_util_gpu_pct if p.idle_util_gpu_pct is None else p.idle_util_gpu_pct for p in cfg.pools]
    mem = [a.idle_util_mem_pct if p.idle_util_mem_pct is None else p.idle_util_mem_pct for p in cfg.pools]
    return {"max_gap_s": a.max_gap_s, "default_interval_s": a.default_interval_s,
            "lookback_s": 2 * a.max_gap_s + 60 * a.idle_max_gap_minutes,
            "pools": [p.name for p in cfg.pools], "gpu_pct": gpu, "mem_pct": mem,
            "default_gpu_pct": a.idle_util_gpu_pct, "default_mem_pct": a.idle_util_mem_pct,
            "max_gpu_pct": max(gpu + [a.idle_util_gpu_pct]), "max_mem_pct": max(mem + [a.idle_util_mem_pct])}


def worker_handles(store, count: int) -> list:
    """``store`` and up to ``count - 1`` more handles on it (Store.workers: kept with it, so an
    hourly run opens none). A plan (ingest/plan.py) works alone, so its statements stay in order."""
    return [store, *store.workers(count - 1)]


def sample_parts(store, day: date, before_s: int, after_s: int, start: datetime | None = None,
                 last: date | None = None) -> list[tuple[dict, dict]]:
    """The runs in which the queries that read the samples of ``day`` (to ``last``, when given;
    minute.sql, idle_segments.sql) derive it (from ``start`` on, when given), as (fills,
    parameters): every host at once from gpu_samples as stored; or, where a GPU entity has more
    than one row at one sample time in what they read (``before_s`` seconds before the start to
    ``after_s`` after the last day: samples that arrived in parts, as Prometheus remote_write
    sends them), every other host so, then those hosts from split_samples.sql, which merges their
    rows per entity and time."""
    begin = start.replace(tzinfo=None) if start else datetime.combine(day, dt_time.min)
    end = datetime.combine(last or day, dt_time.min) + timedelta(days=1, seconds=after_s)
    hosts = [h for (h,) in store.rows(sql("rollup/split_hosts"), {"from": begin - timedelta(seconds=before_s),
                                                                  "until": end})]
    parts = [({"samples": "gpu_samples"}, {"split_hosts": hosts, "merged": False})]
    if hosts:
        parts.append(({"samples": sql("rollup/split_samples")}, {"split_hosts": hosts, "merged": True}))
    return parts


def minute_step(params: dict, parts: list[tuple[dict, dict]]) -> tuple:
    """gpu_minute as derive_steps takes it, from the samples read in ``parts`` (sample_parts)."""
    return ("gpu_minute", "minute", params, None, "minute", parts)


HOUR_STEP = ("gpu_hour", "hour", {}, None, "hour", None)


def rollup_day(store, day: date, params: dict, start: datetime | None = None,
               parts: list[tuple[dict, dict]] | None = None) -> None:
    """gpu_minute and gpu_hour of one day — only from ``start`` on when given (earlier rows kept);
    the samples read in ``parts`` (sample_parts; found here when not given)."""
    parts = parts or sample_parts(store, day, params["max_gap_s"], params["max_gap_s"], start)
    derive_steps(store, [day], start, [minute_step(params, parts), HOUR_STEP])


def hour_units(days: list[date], starts: dict[date, datetime | None]) -> list[tuple[list[date], datetime | None]]:
    """How the tables derived from GPU-hours (gpu_hour, billing_line_hour, gpu_cost_hour) take
    ``days``, as (days, start) for derive_steps: a day recomputed from an hour on alone; whole days
    a run at a time (replace_days: a query and a staging copy per run of up to 8 days, not per day,
    where planning and staging were most of a day's time)."""
    return ([([day], starts[day]) for day in days if starts[day]]
            + [(unit, None) for unit in swap_units("gpu_hour", [day for day in days if not starts[day]])])


# The most samples one query of idle_segments.sql reads for a run of whole days (sample_units;
# gpu_minute takes the run's days a query each, with the run's sample_parts found once). Each
# query also reads before its days (what came before an idle run), and a read takes whole
# granules of 8,192 rows, so a day alone read most of the day before's columns as well: on 256
# GPUs x 30 days at 15 s the idle segments took 6.4 s a day at a time, 5.3-5.4 s in runs of two
# days (of four: 5.3 s). What a query holds grows with its run, so runs stay short: two days of
# 256 GPUs at 15 s (2.9 M samples), a day alone of more.
SAMPLE_RUN = 4_000_000


def sample_units(days: list[date], starts: dict[date, datetime | None],
                 inputs: dict[date, tuple[int, int]]) -> list[tuple[list[date], datetime | None]]:
    """How the queries that read samples (gpu_minute, gpu_idle_segments) take ``days``, as (days,
    start) for derive_steps: a day recomputed from an hour on alone; whole consecutive days of one
    staging unit together while they hold at most SAMPLE_RUN samples (``inputs``: day_inputs)."""
    units = [([day], starts[day]) for day in days if starts[day]]
    for unit in swap_units("gpu_minute", [day for day in days if not starts[day]]):
        run, held = [unit[0]], inputs[unit[0]][0]
        for day in unit[1:]:
            if (day - run[-1]).days != 1 or held + inputs[day][0] > SAMPLE_RUN:
                units.append((run, None))
                run, held = [], 0
            run.append(day)
            held += inputs[day][0]
        units.append((run, None))
    return units


def daily_rollups(days: list[date], rules: str, rule_params: dict) -> list[Callable]:
    """The jobs (``job(handle)``) that derive team_spend_day, gpu_cost_day, gpu_util_day and
    team_demand_hour of ``days``, after their GPU-hour costs: tables partitioned by month, so each
    table a month at a time on one handle (replace_days), the tables side by side."""
    return [
        lambda h: replace_days(h, "team_spend_day", days, "spend", rule_params, fills={"bill_lines": bill_lines(rules)}),
        lambda h: replace_days(h, "gpu_cost_day", days, "cost_day", {}),
        lambda h: replace_days(h, "gpu_util_day", days, "util_day", {}),
        lambda h: replace_days(h, "team_demand_hour", days, "team_demand", {})]


def bill_lines(rules: str) -> str:
    """Every bill line with its environment and the team the rules give it (sql/rollup/bill_line_team.sql),
    for the queries that attribute whole lines."""
    return sql("rollup/bill_line_team", team_rules=rules)


def derive_steps(store, days: list[date], start: datetime | None, steps) -> None:
    """Derive each step (table, sql name, parameters, fills, time column, sample parts) for
    ``days``: one day from ``start`` on, its earlier rows kept (replace_day); otherwise whole
    days, a run of them per query (replace_days)."""
    timings = {}
    for table, sql_name, parameters, fills, time_column, parts in steps:
        started = time.perf_counter()
        if start:
            (day,) = days
            replace_day(store, table, day, sql_name, parameters, fills=fills, keep=(time_column, start), parts=parts)
        else:
            replace_days(store, table, days, sql_name, parameters, fills=fills, parts=parts)
        timings[table] = round(time.perf_counter() - started, 3)
    log.debug("derived %s: %s", days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}", timings)


def day_inputs(store, since: date, until: date) -> dict[date, tuple[int, int]]:
    """day -> (sample rows, billing fingerprint) now: what deriving the day would read."""
    samples = dict(store.rows(sql("rollup/input_samples")))
    bills = dict(store.rows(sql("rollup/input_bills"), {"since": since, "until": until}))
    return {d: (int(samples.get(d, 0)), int(bills.get(d, 0))) for d in set(samples) | set(bills)}


def derived_state(store) -> dict[date, tuple[int, int, int]]:
    """day -> (sample rows, billing fingerprint, config fingerprint) when it was last derived."""
    return {d: (int(r), int(b), int(c)) for d, r, b, c in store.rows(sql("rollup/derived_state"))}


def first_changed_hour(store, day: date, previous, inputs: tuple[int, int], config_fp: int) -> datetime | None:
    """When only new or late samples changed a day: the hour to recompute from (one hour before
    the first hour whose sample count differs from what was derived, since the last sample
    before it holds into it). None: recompute the whole day (new day, restated bill, new config)."""
    if previous is None or previous[1:] != (inputs[1], config_fp):
        return None
    rows = store.rows(sql("rollup/first_changed_hour"), {"d0": datetime.combine(day, dt_time.min)})
    if not rows:
        return None
    start = datetime.combine(day, dt_time.min, timezone.utc)
    return max(start, rows[0][0].replace(tzinfo=timezone.utc) - timedelta(hours=1))


def changed_days(since: date, until: date, config_fp: int, force: bool, state: dict, current: dict) -> list[date]:
    """Days in [since, until] with samples or bills whose inputs differ from what was derived."""
    days = sorted(d for d in set(current) | set(state) if since <= d <= until)
    return [d for d in days if force or state.get(d) != (*current.get(d, (0, 0)), config_fp)]


def record(store, inputs: dict[date, tuple[int, int]], config_fp: int) -> None:
    """Remember what each day was derived from, so an unchanged day is not derived again."""
    store.insert("derivation_state", [[day, rows, bill, config_fp] for day, (rows, bill) in inputs.items()],
                        ["day", "sample_rows", "billing_fingerprint", "config_fingerprint"])


def derive_idle_windows(store, cfg, start: datetime, until: datetime) -> tuple[int, datetime]:
    """Recompute the idle windows that can have changed since ``start``: stitched from the idle
    segments of a day before it on (and from the start of any window still open then), the months
    touched swapped in whole, the windows that ended before kept as they were. Returns how many
    were recomputed and the earliest hour whose waste they can change (``start``, or earlier where
    a window recomputed differs from the one stored: sql/rollup/idle_changed.sql)."""
    bridge = timedelta(minutes=cfg.analytics.idle_max_gap_minutes)
    params = {"from": start.replace(tzinfo=None), "until": until.replace(tzinfo=None),
              "max_gap_minutes": cfg.analytics.idle_max_gap_minutes}
    cutoff = {"cutoff": params["from"] - bridge}
    open_since = store.scalar("SELECT min(start) FROM idle_windows WHERE end >= {cutoff:DateTime64(3)}", cutoff)
    params["scan_from"] = params["from"] - timedelta(days=1)
    if open_since and open_since.year > 1970:
        params["scan_from"] = min(params["scan_from"], open_since.replace(tzinfo=None))
    with store.staging("idle_windows") as stage:
        stage.fill(sql("rollup/idle"), parameters=params | cutoff, settings=DERIVE_SETTINGS)
        computed = stage.count()
        changed = store.scalar(sql("rollup/idle_changed", stage=f"`{stage.name}`"), cutoff)
        changed_from = min([start] + ([changed.replace(tzinfo=timezone.utc)] if changed else []))
        months = {r[0] for r in store.rows(
            "SELECT DISTINCT _partition_id FROM idle_windows WHERE end >= {cutoff:DateTime64(3)}", cutoff)}
        months |= set(store.partitions(stage.name))
        stage.fill(sql("rollup/idle_kept"), parameters=cutoff | {"months": sorted(months), "until": params["until"]},
                   columns=store.columns("idle_windows"))
        stage.replace_in(partition_ids=sorted(months))
        return computed, changed_from


def derive_waste(store, cfg, since: date, until: date, rules: str, rule_params: dict,
                 beside: Sequence[Callable] = ()) -> None:
    """gpu_waste_hour, gpu_waste_day and the FOCUS showback (which carries the waste) of every day
    from ``since`` to ``until`` (after the idle windows: a window that grows changes the waste of
    the hours it already covered). gpu_waste_hour's staging units side by side, then the two
    tables read from it and the jobs ``beside`` (``job(handle)``, reading no waste) side by side;
    a showback whose month holds several runs of days (a backfill) after the others, its runs side
    by side."""
    days = [since + timedelta(days=i) for i in range((until - since).days + 1)]
    handles = worker_handles(store, cfg.analytics.workers)
    in_parallel(handles, swap_units("gpu_waste_hour", days),
                lambda h, unit: replace_days(h, "gpu_waste_hour", unit, "waste", {}))

    def waste_day(h):
        replace_days(h, "gpu_waste_day", days, "waste_day", {})

    def showback(h, free=()):
        replace_days(h, "showback_focus_day", days, "showback", rule_params, fills={"bill_lines": bill_lines(rules)},
                     beside=free)
    if all(len(runs(month)) == 1 for month in swap_units("showback_focus_day", days)):
        run_jobs(handles, [waste_day, showback, *beside])
        return
    run_jobs(handles, [waste_day, *beside])
    showback(handles[0], handles[1:])
