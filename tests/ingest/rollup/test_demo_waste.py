"""On the demo fleet: waste per team, this month, computed again straight from the samples with
the documented formula (sql/README.md "Waste"), equals what the platform derived and shows."""
from __future__ import annotations

import pytest

# Per sample held time (the rollups' hold rule), cut at hours; inside an idle window (ASOF on its
# start, then before its end) it is idle, outside it is unused by (1 - utilization); each second
# at its GPU-hour's cost per covered second, charged to the team of the sample's owner (user, job,
# namespace, held) as gpu_cost_hour attributes that owner's hour. Spend is gpu_cost_hour's per team.
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
    rates AS
    (
        SELECT c.host AS host, c.gpu_uuid AS gpu_uuid, c.mig_instance AS mig_instance,
            toFloat64(toUnixTimestamp(c.hour)) / 3600 AS h, c.cost / g.covered AS rate
        FROM (SELECT host, gpu_uuid, mig_instance, hour, sum(cost_usd) AS cost FROM gpu_cost_hour
              GROUP BY host, gpu_uuid, mig_instance, hour) AS c
        INNER JOIN (SELECT host, gpu_uuid, mig_instance, hour, sum(covered_s) AS covered FROM gpu_hour
                    GROUP BY host, gpu_uuid, mig_instance, hour) AS g
            ON g.host = c.host AND g.gpu_uuid = c.gpu_uuid AND g.mig_instance = c.mig_instance AND g.hour = c.hour
    ),
    teams AS
    (
        SELECT host, gpu_uuid, mig_instance, toFloat64(toUnixTimestamp(hour)) / 3600 AS h, user, job_id, k8s_namespace,
            held, argMax(team, gpu_hours) AS team
        FROM gpu_cost_hour
        GROUP BY host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held
    ),
    waste AS
    (
        SELECT if(o.team = '', 'unallocated', o.team) AS team,
            sumIf(p.dt * r.rate, p.t < w.we AND w.kind != '') AS idle,
            sumIf(p.dt * r.rate * (1 - coalesce(p.util_gpu, 0) / 100), NOT (p.t < w.we AND w.kind != '') AND p.util_gpu IS NOT NULL) AS unused
        FROM pieces AS p
        ASOF LEFT JOIN windows AS w ON w.host = p.host AND w.gpu_uuid = p.gpu_uuid AND w.mig_instance = p.mig_instance AND p.t >= w.ws
        INNER JOIN rates AS r ON r.host = p.host AND r.gpu_uuid = p.gpu_uuid AND r.mig_instance = p.mig_instance AND r.h = p.h
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
