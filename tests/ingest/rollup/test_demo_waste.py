"""On the demo fleet: waste per team, this month, computed again straight from the samples with
the documented formula (sql/README.md "Waste"), equals what the platform derived and shows."""
from __future__ import annotations

import pytest

# Per sample held time (the rollups' hold rule), cut at hours; inside an idle window (ASOF on its
# start, then before its end) it is idle, outside it is unused by (1 - utilization); each second
# at its owner's cost per covered second in the GPU-hour (the owner's gpu_cost_hour over its gpu_hour
# covered time: on-prem energy is measured per owner), charged to the team of the sample's owner
# (user, job, namespace, held) as gpu_cost_hour attributes that owner's hour. Spend is
# gpu_cost_hour's per team.
INDEPENDENT = """
WITH
    held AS
    (
        SELECT host, gpu_uuid, mig_instance, util_gpu, user, job_id, k8s_namespace,
            toUInt8(coalesce(process_count, 0) > 0 OR job_id != '' OR k8s_pod != '' OR user != '') AS held,
            toUnixTimestamp64Milli(ts) / 1000. AS t,
            leadInFrame(toNullable(t)) OVER w AS n1, lagInFrame(toNullable(t)) OVER w AS p1
        FROM gpu_samples
        WINDOW w AS (PARTITION BY host, gpu_uuid, mig_instance ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)
    ),
    pieces AS
    (
        SELECT host, gpu_uuid, mig_instance, util_gpu, user, job_id, k8s_namespace, held, t,
            multiIf(n1 IS NOT NULL AND n1 - t <= {max_gap:Float64}, n1 - t,
                    p1 IS NOT NULL AND t - p1 <= {max_gap:Float64}, t - p1, {lone:Float64}) AS hold,
            toFloat64(arrayJoin(range(toUInt64(floor(t / 3600)), toUInt64(ceil((t + hold) / 3600))))) AS h,
            least(t + hold, (h + 1) * 3600) - greatest(t, h * 3600) AS dt
        FROM held
    ),
    windows AS
    (
        SELECT host, gpu_uuid, mig_instance, toUnixTimestamp64Milli(start) / 1000. AS ws,
            toUnixTimestamp64Milli(end) / 1000. AS we, kind
        FROM idle_windows
    ),
    teams AS
    (
        SELECT o.host AS host, o.gpu_uuid AS gpu_uuid, o.mig_instance AS mig_instance, o.h AS h, o.user AS user,
            o.job_id AS job_id, o.k8s_namespace AS k8s_namespace, o.held AS held, o.team AS team, o.cost / g.covered AS rate
        FROM
        (
            SELECT host, gpu_uuid, mig_instance, toFloat64(toUnixTimestamp(hour)) / 3600 AS h, user, job_id, k8s_namespace,
                held, argMax(team, gpu_hours) AS team, sum(cost_usd) AS cost
            FROM gpu_cost_hour
            GROUP BY host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held
        ) AS o
        INNER JOIN
        (
            SELECT host, gpu_uuid, mig_instance, toFloat64(toUnixTimestamp(hour)) / 3600 AS h, user, job_id, k8s_namespace,
                held, sum(covered_s) AS covered
            FROM gpu_hour
            GROUP BY host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held
        ) AS g ON g.host = o.host AND g.gpu_uuid = o.gpu_uuid AND g.mig_instance = o.mig_instance AND g.h = o.h
              AND g.user = o.user AND g.job_id = o.job_id AND g.k8s_namespace = o.k8s_namespace AND g.held = o.held
    ),
    waste AS
    (
        SELECT if(o.team = '', 'unallocated', o.team) AS team,
            sumIf(p.dt * o.rate, p.t < w.we AND w.kind != '') AS idle,
            sumIf(p.dt * o.rate * (1 - coalesce(p.util_gpu, 0) / 100), NOT (p.t < w.we AND w.kind != '') AND p.util_gpu IS NOT NULL) AS unused
        FROM pieces AS p
        ASOF LEFT JOIN windows AS w ON w.host = p.host AND w.gpu_uuid = p.gpu_uuid AND w.mig_instance = p.mig_instance AND p.t >= w.ws
        INNER JOIN teams AS o ON o.host = p.host AND o.gpu_uuid = p.gpu_uuid AND o.mig_instance = p.mig_instance AND o.h = p.h
            AND o.user = p.user AND o.job_id = p.job_id AND o.k8s_namespace = p.k8s_namespace AND o.held = p.held
        WHERE toStartOfMonth(toDateTime(toUInt32(p.h * 3600), 'UTC')) = toStartOfMonth({end:DateTime})
        GROUP BY team
    )
SELECT s.team AS team, s.spend AS spend, w.idle AS idle, w.unused AS unused
FROM
(
    SELECT if(team = '', 'unallocated', team) AS team, sum(cost_usd) AS spend FROM gpu_cost_hour
    WHERE toStartOfMonth(hour) = toStartOfMonth({end:DateTime}) GROUP BY team
) AS s
LEFT JOIN waste AS w ON w.team = s.team
"""


def test_team_waste_this_month_is_the_documented_formula_over_the_samples(demo):
    a = demo.cfg.analytics
    expected = {team: (spend, idle or 0.0, unused or 0.0) for team, spend, idle, unused in demo.store.rows(
        INDEPENDENT, {"max_gap": a.max_gap_s, "lone": a.default_interval_s, "end": demo.end.replace(tzinfo=None)})}
    derived = {team: (spend, idle, unused) for team, spend, idle, unused in demo.store.rows(
        "SELECT team, sum(spend_usd), sum(idle_usd), sum(unused_usd) FROM v_team_waste "
        "WHERE month = toStartOfMonth({end:DateTime}) GROUP BY team", {"end": demo.end.replace(tzinfo=None)})}
    assert set(derived) == set(expected)
    for team, figures in expected.items():
        assert derived[team] == pytest.approx(figures, rel=1e-6, abs=1e-6), team
    # the demo wastes like a real fleet: a large share of GPU spend, mostly outside idle windows
    spend, idle, unused = (sum(v[i] for v in derived.values()) for i in range(3))
    assert 0.1 < (idle + unused) / spend < 0.7 and unused > idle > 0
