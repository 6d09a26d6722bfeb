"""The pages read the daily rollups (gpu_cost_day, team_demand_hour) where they need no hourly
resolution; on the demo fleet (derived by the scheduler) every such query must give what it gives
over gpu_cost_hour itself: a page reading the wrong table, or counting a GPU-day twice, fails here."""
from __future__ import annotations

import re
from datetime import timedelta

import pandas as pd
import pytest

from base.sqlfiles import sql as sql_text
from dashboard import queries
from dashboard.filters import Filters
from tests.helpers import ROOT

# gpu_cost_hour in the shape of each daily rollup: the same query over it must give the same numbers
AS_HOURLY = {"gpu_cost_day": "(SELECT toDate(hour) AS day, * FROM gpu_cost_hour)", "team_demand_hour": "gpu_cost_hour",
             "gpu_util_day": "(SELECT toDate(hour) AS day, team, environment, host, gpu_uuid, mig_instance, "
                             "sum(gpu_hours) AS gpu_hours, sum(utilized_gpu_hours) AS utilized_gpu_hours "
                             "FROM gpu_cost_hour WHERE held GROUP BY day, team, environment, host, gpu_uuid, mig_instance)"}
# the per-GPU-day utilization spread as it was computed from gpu_cost_hour before gpu_cost_day existed
UTIL_DISTRIBUTION_HOURLY = """
SELECT team, environment, count() AS gpu_days, min(u) AS min_pct, quantileExact(0.25)(u) AS q1_pct,
       quantileExact(0.5)(u) AS median_pct, quantileExact(0.75)(u) AS q3_pct, max(u) AS max_pct,
       100 * sum(uh) / nullIf(sum(h), 0) AS utilization_pct, sum(h) AS gpu_hours
FROM
(
    SELECT toDate(hour) AS day, team, environment, host, gpu_uuid, mig_instance,
           sum(gpu_hours) AS h, sum(utilized_gpu_hours) AS uh, 100 * uh / nullIf(h, 0) AS u
    FROM gpu_cost_hour
    WHERE held AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
      AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
    GROUP BY day, team, environment, host, gpu_uuid, mig_instance
    HAVING h > 0
)
GROUP BY team, environment
ORDER BY team, environment
"""


def code(sql: str) -> str:
    """SQL without its comments."""
    return re.sub(r"--[^\n]*", "", sql)


def hourly_form(name: str, **fills: str) -> str:
    text = sql_text(name, **fills)
    for table, hourly in AS_HOURLY.items():
        text = re.sub(rf"\b{table}\b", hourly, code(text))
    return text


def windows(demo) -> list[Filters]:
    end = demo.end.date() + timedelta(days=1)
    teams = [r[0] for r in demo.store.rows(      # the team with the most MIG time, and the biggest other one
        "SELECT team FROM gpu_cost_day WHERE team != 'unallocated' GROUP BY team "
        "ORDER BY sumIf(gpu_hours, mig_instance != '') DESC, sum(gpu_hours) DESC, team LIMIT 2")]
    return [Filters(end - timedelta(days=30), end), Filters(end - timedelta(days=7), end, envs=("onprem", "aws")),
            Filters(end - timedelta(days=3), end - timedelta(days=1), teams=tuple(teams))]


def same(daily: pd.DataFrame, hourly: pd.DataFrame, what: str) -> None:
    assert not hourly.empty, f"{what}: nothing to compare"
    pd.testing.assert_frame_equal(daily.reset_index(drop=True), hourly.reset_index(drop=True), check_dtype=False,
                                  check_exact=False, rtol=1e-9, atol=1e-9, obj=what)


# queries that need gpu_cost_hour's hours whatever the window: the short-bucket heatmaps, one GPU's
# cost over time (the GPU page), the owner drill-downs (jobs and pods are kept per hour)
EXACT_HOURS = {"util_heatmap_gpu", "util_heatmap_pool", "gpu_cost", "spend_by_owner", "util_distribution_by_owner"}


def test_only_hour_exact_queries_scan_the_hourly_costs():
    """Everything else reads the window's rows (the GPU_COST / GPU_WASTE placeholders, filled with the
    daily rollups for a window of whole UTC days, dashboard/queries.py query_sql), gpu_cost_day or
    team_demand_hour; a new query on gpu_cost_hour should too."""
    hourly = {p.stem for p in (ROOT / "sql" / "queries").glob("*.sql")
              if re.search(r"\bgpu_cost_hour\b", code(p.read_text()))}
    assert hourly <= EXACT_HOURS, f"read gpu_cost_hour for any window: {hourly - EXACT_HOURS}"
    daily, hourly = code(queries.query_sql("fleet")), code(queries.query_sql("fleet", daily=False))
    assert "gpu_cost_hour" not in daily and "gpu_cost_day" not in hourly and "gpu_cost_hour" in hourly


@pytest.mark.parametrize("name, call", [
    ("fleet", queries.fleet),
    ("util_distribution", queries.util_distribution),
    ("mig_tree", queries.mig_tree),
    ("placement_rates", queries.placement_rates),
    ("placement_demand", lambda s, f: queries.placement_demand(s, f, 0.1)),
    ("placement", lambda s, f: queries.placement(s, f, 0.1, 85.0)),
    ("util_heatmap_pool", lambda s, f: queries.util_heatmap(s, f, "pool")),
    ("util_heatmap_gpu", lambda s, f: queries.util_heatmap(s, f, "gpu", max_entities=40)),
])
def test_daily_rollups_give_what_the_hourly_costs_give(demo, monkeypatch, name, call):
    for f in windows(demo):
        daily = call(demo.store, f)
        with monkeypatch.context() as m:
            m.setattr(queries, "sql_text", hourly_form)
            hourly = call(demo.store, f)
        if name == "placement":
            assert not daily.empty or f.teams, "the demo's placement recommendations are gone"
            if daily.empty:
                continue
        same(daily, hourly, f"{name} over {f.describe()}")


def test_utilization_distribution_equals_the_hourly_computation(demo):
    for f in windows(demo):
        same(queries.util_distribution(demo.store, f), demo.store.query_df(UTIL_DISTRIBUTION_HOURLY, f.params()),
             f"utilization distribution over {f.describe()}")


def test_daily_heatmaps_equal_day_buckets_of_the_hourly_ones(demo):
    f = windows(demo)[0]
    assert queries.bucket_hours(f) == 24
    assert queries.heatmap_query(f, "pool") == "util_heatmap_pool_day"
    assert queries.heatmap_query(f, "gpu") == "util_heatmap_gpu_day"
    short = Filters(f.end - timedelta(days=7), f.end)
    assert queries.heatmap_query(short, "pool") == "util_heatmap_pool"
    assert queries.heatmap_query(short, "anything else") == "util_heatmap_pool"
    same(queries.util_heatmap(demo.store, f, "pool"), queries.run(demo.store, "util_heatmap_pool", f, bucket_h=24),
         "pool heatmap")
    same(queries.util_heatmap(demo.store, f, "gpu"),
         queries.run(demo.store, "util_heatmap_gpu", f, bucket_h=24, max_entities=200, search=""), "GPU heatmap")


def test_runtime_matrix_counts_each_gpu_under_the_versions_gpu_hour_saw(demo):
    """The matrix reads gpu_cost_day (each GPU's last versions of each day): the GPUs per version
    are those gpu_hour shows at the end of each day, and the drifting pool still drifts."""
    f = windows(demo)[0]
    matrix = queries.runtime_matrix(demo.store, f)
    expected = demo.store.query_df("""
        SELECT environment, pool, driver_version, cuda_version, uniqExact(host) AS hosts, count() AS gpus
        FROM (SELECT environment, pool, driver_version, cuda_version, host, gpu_uuid
              FROM gpu_hour
              WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
                AND (host, gpu_uuid, mig_instance, hour) IN
                    (SELECT host, gpu_uuid, mig_instance, max(hour) FROM gpu_hour
                     WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
                     GROUP BY host, gpu_uuid, mig_instance, toDate(hour))
              GROUP BY environment, pool, driver_version, cuda_version, host, gpu_uuid)
        GROUP BY environment, pool, driver_version, cuda_version
        ORDER BY environment, pool, driver_version, cuda_version""", f.params())
    same(matrix.drop(columns=["last_seen"]), expected, "runtime matrix")
    drift = next(p for p in demo.planted if p["kind"] == "driver_drift")
    versions = matrix[(matrix["environment"] == "onprem") & (matrix["pool"] == drift["pool"])]
    assert len(versions) > 1 and drift["actual_driver"] in set(versions["driver_version"])


def test_page_totals_equal_sums_over_the_hourly_costs(demo):
    """Independent of the queries' text: what the pages total up is what gpu_cost_hour holds."""
    for f in windows(demo):
        hourly = demo.store.query_df("""
            SELECT sum(gpu_hours) AS h, sumIf(gpu_hours, held) AS held_h, sum(utilized_gpu_hours) AS uh, sum(cost_usd) AS usd,
                   uniqExact(host, gpu_uuid) AS gpus, uniqExactIf((host, gpu_uuid, mig_instance), mig_instance != '') AS migs
            FROM gpu_cost_hour
            WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
              AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
              AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))""", f.params()).iloc[0]
        fleet = queries.fleet(demo.store, f)
        assert fleet["total_gpu_hours"].sum() == pytest.approx(hourly["h"], rel=1e-9)
        assert fleet["held_gpu_hours"].sum() == pytest.approx(hourly["held_h"], rel=1e-9)
        assert fleet["total_utilized_gpu_hours"].sum() == pytest.approx(hourly["uh"], rel=1e-9)
        assert fleet["total_cost_usd"].sum() == pytest.approx(hourly["usd"], rel=1e-9)
        assert fleet["gpus"].sum() == hourly["gpus"] and fleet["mig_instances"].sum() == hourly["migs"]
        heatmap = queries.util_heatmap(demo.store, f, "pool")
        assert heatmap["total_gpu_hours"].sum() == pytest.approx(hourly["h"], rel=1e-9)
        held = dict(demo.store.rows(
            "SELECT team, sum(gpu_hours) FROM gpu_cost_hour WHERE held AND team != 'unallocated' "
            "AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')} "
            "AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team)) GROUP BY team", f.params()))
        demand = queries.placement_demand(demo.store, f, 0.1).set_index("team")
        assert set(demand.index) == set(held)
        for team, gpu_hours in held.items():
            assert demand.loc[team, "baseline_gpu_hours"] + demand.loc[team, "burst_gpu_hours"] == \
                pytest.approx(gpu_hours, rel=1e-6, abs=1e-6)
        n_hours = demo.store.scalar("SELECT uniqExact(hour) FROM gpu_cost_hour WHERE hour >= {start:DateTime('UTC')} "
                                    "AND hour < {end:DateTime('UTC')}", f.params())
        assert queries.hours(demo.store, f) == n_hours and set(demand["hours"]) == {n_hours}


def test_gpu_lists_show_the_top_gpus_and_a_search_narrows_them(demo):
    """At 10,000 GPUs a list shows the top ones, never every GPU: the heatmap by GPU the costliest
    entities, the MIG tree the GPUs with the most GPU-hours; a search narrows both, and `matches`
    says how many there are in all."""
    f = windows(demo)[0]
    p = f.params()
    by_cost = demo.store.rows(
        "SELECT host, gpu_uuid, mig_instance, sum(cost_usd) AS c FROM gpu_cost_day WHERE day >= {start_day:Date} "
        "AND day < {end_day:Date} GROUP BY host, gpu_uuid, mig_instance ORDER BY c DESC", p)
    assert len(by_cost) > 5 and by_cost[4][3] > by_cost[5][3]
    heat = queries.util_heatmap(demo.store, f, "gpu", max_entities=5)
    assert set(heat[["host", "gpu_uuid", "mig_instance"]].itertuples(index=False, name=None)) == \
        {r[:3] for r in by_cost[:5]}
    assert set(heat["matches"]) == {len(by_cost)}
    host = by_cost[-1][0]
    found = queries.util_heatmap(demo.store, f, "gpu", search=host.upper())
    assert set(found["host"]) == {host}
    assert set(found["matches"]) == {sum(r[0] == host for r in by_cost)}

    hours = demo.store.rows(
        "SELECT host, gpu_uuid, sum(gpu_hours) AS h FROM gpu_cost_day WHERE mig_instance != '' AND day >= {start_day:Date} "
        "AND day < {end_day:Date} GROUP BY host, gpu_uuid ORDER BY round(h, 6) DESC, host, gpu_uuid", p)
    assert len(hours) > 2
    tree = queries.mig_tree(demo.store, f, max_gpus=2)
    gpus = tree[tree["level"] == 0]
    assert list(zip(gpus["host"], gpus["gpu_uuid"])) == [r[:2] for r in hours[:2]]
    assert set(tree["matches"]) == {len(hours)}
    # each listed instance's profile is the one gpu_hour has for it at its latest hour in the window
    # (read on that day only)
    profiles = {tuple(r[:3]): r[3] for r in demo.store.rows(
        "SELECT host, gpu_uuid, mig_instance, argMax(mig_profile, hour) FROM gpu_hour WHERE mig_instance != '' "
        "AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')} GROUP BY host, gpu_uuid, mig_instance", p)}
    kids = tree[tree["level"] == 1]
    assert len(kids) and all(kids["mig_profile"] != "") and set(tree.loc[tree["level"] == 0, "mig_profile"]) == {""}
    assert [profiles[k] for k in zip(kids["host"], kids["gpu_uuid"], kids["mig_instance"])] == list(kids["mig_profile"])
    last = hours[-1][1]
    narrowed = queries.mig_tree(demo.store, f, search=last)
    assert set(narrowed["gpu_uuid"]) == {last} and set(narrowed["matches"]) == {1}
