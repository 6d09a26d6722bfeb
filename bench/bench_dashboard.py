"""Dashboard speed: server-side time of every page's callbacks (the page layout through the pages
router, then each callback the page fires, as ``POST /_dash-update-component`` through the Flask
test client) on 1024 GPUs × 90 days of hourly rollups, next to the same query functions run bare
against the store in the same run.

The rollups (gpu_hour, gpu_cost_hour, team_spend_day, idle_windows, compliance_findings, alert
state) are generated synthetically in SQL (INSERT … SELECT FROM numbers()), not from samples;
the daily rollups the pages read (gpu_cost_day, gpu_util_day, team_demand_hour) are then derived from them one
day at a time with the scheduler's own queries (sql/rollup/cost_day.sql, util_day.sql, team_demand.sql).
Goal: p95 under 300 ms per page. The dashboard's result cache (dashboard/reader.py) is emptied
before each round, so this is a page's cost right after a derivation; concurrent users are
bench_dashboard_users.py.
"""
from __future__ import annotations

import statistics
import sys
import time
from datetime import datetime, timedelta, timezone

from bench.common import bench_store, report, row

TEAMS = 12
GOAL_MS = 300.0
# The GPU page (/gpu?gpu_uuid=GPU-0&mig_instance=1) is timed on one MIG slice of pool 0.
GPU = {"host": "node-0", "gpu_uuid": "GPU-0", "mig_instance": "1"}

GENERATE = [
    # gpu_hour: 16 pools of 64 GPU entities; pool 0 is MIG (4 instances per GPU)
    """INSERT INTO gpu_hour (hour, host, gpu_uuid, mig_instance, mig_profile, environment, region, pool, model,
           driver_version, cuda_version, team, held, samples, covered_s, util_covered_s, util_gpu_s,
           util_mem_covered_s, util_mem_s, energy_j)
       SELECT {start:DateTime} + toIntervalHour(intDiv(number, {gpus:UInt32})) AS hour, g.1, g.2, g.3,
              if(g.3 = '', '', '1g.10gb'), g.4, 'r1', g.5, 'A100', if(e % 97 = 0, '535.183.01', '550.90.07'),
              if(e % 97 = 0, '12.2', '12.4'), concat('team-', toString(e % {teams:UInt32})), u > 8, 60, 3600, 3600,
              u * 3600, 3600, u * 1800, 300 * 3600
       FROM (SELECT number, number % {gpus:UInt32} AS e, intDiv(e, 64) AS p, cityHash64(number) % 100 AS u,
                    (concat('node-', toString(intDiv(e, 8))),
                     concat('GPU-', toString(if(p = 0, intDiv(e, 4), e))),
                     if(p = 0, toString(e % 4 + 1), ''),
                     multiIf(p < 10, 'onprem', p < 12, 'aws', p < 14, 'gcp', 'azure'),
                     concat('pool-', toString(p))) AS g
             FROM numbers({rows:UInt64}))""",
    """INSERT INTO gpu_cost_hour (hour, host, gpu_uuid, mig_instance, environment, region, pool, model, team,
           attributed_by, held, gpu_hours, utilized_gpu_hours, cost_usd, onprem_capital_usd, cloud_gpu_usd)
       SELECT hour, host, gpu_uuid, mig_instance, environment, region, pool, model,
              if(cityHash64(host, gpu_uuid) % 50 = 0, 'unallocated', team), 'bench', held,
              if(mig_instance = '', 1, 0.25), if(mig_instance = '', 1, 0.25) * util_gpu_s / 360000,
              if(environment = 'onprem', 1.2, 3.5) * if(mig_instance = '', 1, 0.25),
              if(environment = 'onprem', 1.2, 0), if(environment = 'onprem', 0, 3.5)
       FROM gpu_hour""",
    """INSERT INTO team_spend_day (day, team, environment, cost_kind, currency, cost, estimated_cost, gpu_hours,
           utilized_gpu_hours)
       SELECT toDate(hour), team, environment, if(environment = 'onprem', 'onprem_capital', 'cloud_gpu'), 'USD',
              sum(cost_usd), 0, sum(gpu_hours), sum(utilized_gpu_hours)
       FROM gpu_cost_hour GROUP BY toDate(hour), team, environment""",
    """INSERT INTO idle_windows (host, gpu_uuid, mig_instance, start, end, duration_s, kind, environment, region,
           pool, model, team, user, cost_usd)
       SELECT host, gpu_uuid, mig_instance, toStartOfDay(hour) + toIntervalHour(cityHash64(host, gpu_uuid, hour) % 20),
              toStartOfDay(hour) + toIntervalHour(cityHash64(host, gpu_uuid, hour) % 20 + 3), 10800,
              if(held, 'allocated', 'unallocated'), environment, region, pool, model, if(held, team, ''),
              if(held, 'user', ''), 3.6
       FROM gpu_hour WHERE toHour(hour) = 0 AND cityHash64(host, gpu_uuid, hour) % 10 < 3""",
    """INSERT INTO compliance_findings (policy, finding_key, severity, team, environment, pool, host, summary,
           evidence, cost_usd, first_seen, last_seen)
       SELECT ['residency', 'untagged_spend', 'runtime_drift', 'gpu_health'][number % 4 + 1], toString(number),
              if(number % 3 = 0, 'critical', 'warning'), concat('team-', toString(number % {teams:UInt32})),
              'onprem', 'pool-1', concat('node-', toString(number)), concat('finding ', toString(number)),
              '[{"host":"node-1","value":1},{"host":"node-2","value":2}]', number, {start:DateTime}, now()
       FROM numbers(300)""",
    """INSERT INTO config_teams (team, budget_usd_month, contact)
       SELECT concat('team-', toString(number)), 50000, '' FROM numbers({teams:UInt32})""",
    """INSERT INTO alert_state (rule, fingerprint, labels, annotations, severity, state, value, active_since,
           fired_at, evaluated_at, version)
       SELECT 'gpu_idle_window', toString(number), map('team', concat('team-', toString(number % {teams:UInt32}))),
              map('summary', 'idle'), 'warning', ['firing', 'pending', 'resolved'][number % 3 + 1], 1, now(), now(),
              now(), 1
       FROM numbers(600)""",
    """INSERT INTO alert_events (ts, rule, fingerprint, labels, severity, from_state, to_state, value, summary)
       SELECT now() - toIntervalMinute(number), 'gpu_idle_window', toString(number % 600),
              map('team', concat('team-', toString(number % {teams:UInt32}))), 'warning', 'pending', 'firing', 1, 'idle'
       FROM numbers(20000)""",
]


# The daily rollups, written as the scheduler does (ingest/rollup/run.py daily_rollups).
DAILY = [("gpu_cost_day", "cost_day"), ("gpu_util_day", "util_day"), ("team_demand_hour", "team_demand")]


def generate(store, gpus: int, days: int) -> int:
    end = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0, tzinfo=None)
    params = {"start": end - timedelta(days=days), "gpus": gpus, "rows": gpus * days * 24, "teams": TEAMS}
    for sql in GENERATE:
        store.client.query(sql, parameters=params if "{start" in sql or "{teams" in sql else None,
                           settings={"max_insert_threads": 2})
    derive_daily(store)
    return store.scalar("SELECT count() FROM gpu_cost_hour")


def derive_daily(store) -> None:
    """gpu_cost_day, gpu_util_day and team_demand_hour of every day in gpu_cost_hour, from the scheduler's queries."""
    from ingest.rollup.replace import replace_days

    days = [day for (day,) in store.rows("SELECT DISTINCT toDate(hour) AS d FROM gpu_cost_hour ORDER BY d")]
    for table, sql_name in DAILY:
        replace_days(store, table, days, sql_name, {})


def page_queries(store, f, st) -> dict:
    """The same query functions each page's callbacks run, to be timed bare."""
    from dashboard import queries as q

    return {
        "overview": [lambda: q.fleet(store, f), lambda: q.waste_month(store, f), lambda: q.budget(store, f),
                     lambda: q.coverage(store, f), lambda: q.alert_counts(store, f), lambda: q.findings(store, f),
                     lambda: q.run(store, "gpu_counts", f), lambda: q.other_currencies(store, f)],
        "utilization": [lambda: q.util_heatmap(store, f, "pool"), lambda: q.util_distribution(store, f),
                        lambda: q.mig_tree(store, f)],
        "idle": [lambda: q.idle_windows(store, f, 300), lambda: q.idle_by_owner(store, f), lambda: q.waste_by(store, f),
                 lambda: q.waste_by_gpu(store, f, limit=25)],
        "spend": [lambda: q.spend_by_team(store, f), lambda: q.spend_trend(store, f), lambda: q.budget(store, f),
                  lambda: q.unallocated(store, f)],
        "placement": [lambda: q.placement_demand(store, f, st.baseline_quantile), lambda: q.placement_usage(store, f),
                      lambda: q.placement(store, f, st.baseline_quantile, st.saturated_pct)],
        "compliance": [lambda: q.findings(store, f), lambda: q.runtime_matrix(store, f)],
        "alerts": [lambda: q.alerts(store, f), lambda: q.alert_history(store, f),
                   lambda: q.silences(store, datetime.now(timezone.utc))],
        "gpu": [lambda: q.gpu_info(store, f, GPU["gpu_uuid"], GPU["mig_instance"]), lambda: q.gpu_series(store, f, GPU),
                lambda: q.gpu_cost(store, f, GPU), lambda: q.gpu_idle_windows(store, f, GPU),
                lambda: q.gpu_clocks(store, f, GPU)],
    }


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else values[0]


def page_times(store, repeat: int) -> list[tuple[str, float, float]]:
    """(page, p95 ms of its router + callbacks served, p95 ms of its query functions run bare) of
    every page on ``store``, over ``repeat`` rounds after a warm-up round."""
    from dashboard import ids, probe, state
    from dashboard.app import mount
    from dashboard.filters import parse
    from gpuledger.config import Config
    from gpuledger.platform import Platform

    platform = Platform(Config(), store)
    mount(platform, Config(), store, auth=False)
    client = platform.web.test_client()
    st = platform.web.extensions[state.KEY]
    f = parse({"range": "90d"}, datetime.now(timezone.utc).date())
    bare = page_queries(store.read_only(), f, st)          # a plain handle: no pool, no cache
    out = []
    for page in (*ids.PAGES, "gpu"):
        path = "/" if page == "overview" else f"/{page}"
        search = f.search() + (f"&gpu_uuid={GPU['gpu_uuid']}&mig_instance={GPU['mig_instance']}" if page == "gpu" else "")
        inputs = {ids.GPU_ENTITY: GPU, ids.GPU_SEARCH: ""} if page == "gpu" else {}
        deps = probe.page_callbacks(client, page)
        served, reference = [], []
        for i in range(repeat + 1):                          # the first round warms caches and is not counted
            st.store.invalidate()                            # each round as after a derivation: no cached result
            t0 = time.perf_counter()
            router = probe.call_router(client, path, search)
            calls = [probe.call(client, page, dep, f.to_data(), inputs) for dep in deps]
            total = time.perf_counter() - t0
            assert router.status == 200 and all(c.status == 200 for c in calls), (page, [c.status for c in calls])
            t1 = time.perf_counter()
            for fn in bare[page]:
                fn()
            if i:
                served.append(total * 1000)
                reference.append((time.perf_counter() - t1) * 1000)
        out.append((page, p95(served), p95(reference)))
    return out


def run(quick: bool = False) -> list[dict]:
    gpus, days, repeat = (64, 14, 3) if quick else (1024, 90, 20)
    store = bench_store("dashboard")
    started = time.perf_counter()
    rows = generate(store, gpus, days)
    print(f"generated {rows:,} GPU-hour rows ({gpus} GPUs × {days} days; "
          f"{store.scalar('SELECT count() FROM gpu_cost_day'):,} gpu_cost_day rows, "
          f"{store.scalar('SELECT count() FROM team_demand_hour'):,} team_demand_hour rows) "
          f"in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return [row(f"dashboard {page}: p95 server time of its callbacks", served, "ms", reference,
                f"< {GOAL_MS:.0f} ms", higher_is_better=False)
            for page, served, reference in page_times(store, repeat)]

if __name__ == "__main__":
    print(report(run(quick="--quick" in sys.argv)))
