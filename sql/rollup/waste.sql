-- gpu_waste_hour for the hours from {from:DateTime} to the end of UTC day {day:Date}. Per GPU entity and hour
-- (DESIGN.md "Waste"), with rate = cost_usd / covered_s, the hour's cost per covered second:
--   idle_*_usd  = the cost of the idle segments inside idle windows (allocated / unallocated);
--   unused_usd  = rate × Σ over covered time outside idle windows with known utilization of
--                 (1 - utilization / 100), i.e. rate × (outside_util_covered_s - outside_util_gpu_s / 100);
--   no_data_usd = rate × (3600 - covered_s): time without data, neither idle nor busy, never waste.
-- Time with data but unknown utilization is neither idle nor unused.
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1,
    idle AS
    (
        SELECT s.host AS host, s.gpu_uuid AS gpu_uuid, s.mig_instance AS mig_instance, s.hour AS hour,
            sumIf(s.covered_s, w.kind = 'allocated')        AS allocated_s,
            sumIf(s.covered_s, w.kind = 'unallocated')      AS unallocated_s,
            sumIf(s.cost_usd, w.kind = 'allocated')         AS allocated_usd,
            sumIf(s.cost_usd, w.kind = 'unallocated')       AS unallocated_usd,
            sum(s.util_gpu_s)                               AS util_gpu_s
        FROM gpu_idle_segments AS s
        INNER JOIN
        (
            SELECT host, gpu_uuid, mig_instance, start, end, kind FROM idle_windows WHERE start < d1 AND end > d0
        ) AS w ON w.host = s.host AND w.gpu_uuid = s.gpu_uuid AND w.mig_instance = s.mig_instance
        WHERE s.hour >= d0 AND s.hour < d1 AND s.start >= w.start AND s.end <= w.end
        GROUP BY host, gpu_uuid, mig_instance, hour
    )
SELECT
    c.hour AS hour, c.host AS host, c.gpu_uuid AS gpu_uuid, c.mig_instance AS mig_instance,
    c.environment AS environment, c.region AS region, c.pool AS pool, c.model AS model,
    c.team AS team, c.user AS user, c.job_id AS job_id, g.k8s_namespace AS k8s_namespace, c.held AS held,
    g.covered_s AS covered_s, c.cost_usd AS cost_usd,
    i.allocated_s AS idle_allocated_s, i.unallocated_s AS idle_unallocated_s,
    i.allocated_usd AS idle_allocated_usd, i.unallocated_usd AS idle_unallocated_usd,
    c.cost_usd / nullIf(g.covered_s, 0)                                           AS rate,
    greatest(g.util_covered_s - i.allocated_s - i.unallocated_s, 0)               AS outside_util_covered_s,
    greatest(g.util_gpu_s - i.util_gpu_s, 0)                                      AS outside_util_gpu_s,
    coalesce(rate * greatest(outside_util_covered_s - outside_util_gpu_s / 100, 0), 0) AS unused_usd,
    greatest(3600 - g.covered_s, 0)                                               AS no_data_s,
    coalesce(rate * no_data_s, 0)                                                 AS no_data_usd
FROM
(
    SELECT hour, host, gpu_uuid, mig_instance, any(environment) AS environment, any(region) AS region, any(pool) AS pool,
        any(model) AS model, any(team) AS team, any(user) AS user, any(job_id) AS job_id, any(held) AS held,
        sum(cost_usd) AS cost_usd
    FROM gpu_cost_hour
    WHERE hour >= d0 AND hour < d1
    GROUP BY hour, host, gpu_uuid, mig_instance
) AS c
INNER JOIN
(
    SELECT hour, host, gpu_uuid, mig_instance, any(k8s_namespace) AS k8s_namespace, sum(covered_s) AS covered_s,
        sum(util_covered_s) AS util_covered_s, sum(util_gpu_s) AS util_gpu_s
    FROM gpu_hour
    WHERE hour >= d0 AND hour < d1
    GROUP BY hour, host, gpu_uuid, mig_instance
) AS g ON g.hour = c.hour AND g.host = c.host AND g.gpu_uuid = c.gpu_uuid AND g.mig_instance = c.mig_instance
LEFT JOIN idle AS i ON i.hour = c.hour AND i.host = c.host AND i.gpu_uuid = c.gpu_uuid AND i.mig_instance = c.mig_instance
