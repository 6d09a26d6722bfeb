-- gpu_waste_hour for the hours from {from:DateTime} to the end of UTC day {day:Date}. Per GPU entity,
-- hour and owner (DESIGN.md "Waste"): one row per team the hour's GPU-time is attributed to and owner
-- who held it (user, job, namespace, held: gpu_cost_hour's owner), so that each part is charged to
-- whoever held the GPU. With rate = the GPU-hour's cost_usd / covered_s, its cost per covered second,
-- and an owner's own rate its cost rows over its covered time (on-prem energy is measured per owner):
--   idle_*_usd  = the cost of the owner's idle segments inside idle windows (allocated / unallocated;
--                 a window has one owner, a change of owner ends it), at the owner's own rate;
--   unused_usd  = Σ over the GPU-hour's covered time outside idle windows with known utilization of
--                 (1 - utilization / 100), in seconds, shared among its owners by each one's own such
--                 time (gpu_hour's owner is the one holding each minute at its middle, the idle
--                 segments' exact to the sample: sharing the hour's figure keeps every second idle or
--                 outside windows, never both), each share at the owner's own rate (at the hour's
--                 average rate an idle owner sharing the hour with a busy one was charged above its cost);
--   no_data_usd = rate × (3600 - covered_s) of the GPU-hour, shared by the owners' covered time:
--                 time without data, neither idle nor busy, never waste.
-- Time with data but unknown utilization is neither idle nor unused. Where one owner's time in an
-- hour went to several teams (rules on pod names or accounts), its usage and idle time are shared
-- among them by their GPU-hours; an owner with idle time but no minute of the hour's cost rows
-- (it held the GPU at none of the minutes' middles) has a row of its own with the window's team.
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1,
    idle AS
    (
        SELECT s.host AS host, s.gpu_uuid AS gpu_uuid, s.mig_instance AS mig_instance, s.hour AS hour,
            s.user AS user, s.job_id AS job_id, s.k8s_namespace AS k8s_namespace, s.held AS held,
            any(w.team)                                     AS window_team,
            sumIf(s.covered_s, w.kind = 'allocated')        AS allocated_s,
            sumIf(s.covered_s, w.kind = 'unallocated')      AS unallocated_s,
            sumIf(s.cost_usd, w.kind = 'allocated')         AS allocated_usd,
            sumIf(s.cost_usd, w.kind = 'unallocated')       AS unallocated_usd,
            sum(s.util_gpu_s)                               AS idle_util_gpu_s
        FROM gpu_idle_segments AS s
        INNER JOIN
        (
            SELECT host, gpu_uuid, mig_instance, start, end, kind, team FROM idle_windows WHERE start < d1 AND end > d0
        ) AS w ON w.host = s.host AND w.gpu_uuid = s.gpu_uuid AND w.mig_instance = s.mig_instance
        WHERE s.hour >= d0 AND s.hour < d1 AND s.start >= w.start AND s.end <= w.end
        GROUP BY host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held
    ),
    -- the hour's cost per team and owner
    costs AS
    (
        SELECT hour, host, gpu_uuid, mig_instance, user, job_id, k8s_namespace, held, team AS cost_team,
            any(environment) AS cost_environment, any(region) AS cost_region, any(pool) AS cost_pool,
            any(model) AS cost_model, sum(cost_usd) AS cost_usd, sum(gpu_hours) AS gpu_hours, 1 AS costed
        FROM gpu_cost_hour
        WHERE hour >= d0 AND hour < d1
        GROUP BY hour, host, gpu_uuid, mig_instance, user, job_id, k8s_namespace, held, cost_team
    ),
    -- the owner's covered time and utilization in the hour
    usage AS
    (
        SELECT hour, host, gpu_uuid, mig_instance, user, job_id, k8s_namespace, held,
            sum(covered_s) AS covered_s, sum(util_covered_s) AS util_covered_s, sum(util_gpu_s) AS util_gpu_s
        FROM gpu_hour
        WHERE hour >= d0 AND hour < d1
        GROUP BY hour, host, gpu_uuid, mig_instance, user, job_id, k8s_namespace, held
    ),
    -- one row per team and owner; the owner's usage and idle time by the row's share of its GPU-hours
    owned AS
    (
        SELECT *,
            covered_s * share                                                              AS row_covered_s,
            allocated_s * share                                                            AS row_allocated_s,
            unallocated_s * share                                                          AS row_unallocated_s,
            -- the owner's unused seconds (× rate): its covered time outside windows × (1 - utilization)
            greatest(greatest(util_covered_s - allocated_s - unallocated_s, 0)
                     - greatest(util_gpu_s - idle_util_gpu_s, 0) / 100, 0) * share         AS row_unused_s
        FROM
        (
            SELECT *,
                if(costed = 0, 1., if(owner_gpu_hours > 0, gpu_hours / owner_gpu_hours, 1. / owner_rows)) AS share
            FROM
            (
                SELECT *,
                    sum(gpu_hours) OVER (PARTITION BY hour, host, gpu_uuid, mig_instance, user, job_id, k8s_namespace, held) AS owner_gpu_hours,
                    count() OVER (PARTITION BY hour, host, gpu_uuid, mig_instance, user, job_id, k8s_namespace, held)          AS owner_rows
                FROM costs AS c
                FULL OUTER JOIN idle AS i USING (hour, host, gpu_uuid, mig_instance, user, job_id, k8s_namespace, held)
            )
        ) AS o
        LEFT JOIN usage AS u USING (hour, host, gpu_uuid, mig_instance, user, job_id, k8s_namespace, held)
    )
SELECT
    hour, host, gpu_uuid, mig_instance,
    -- the GPU-hour's labels, from its cost rows (an owner with idle time alone has none)
    argMax(cost_environment, costed) OVER gpu_hour AS environment, argMax(cost_region, costed) OVER gpu_hour AS region,
    argMax(cost_pool, costed) OVER gpu_hour AS pool, argMax(cost_model, costed) OVER gpu_hour AS model,
    if(costed = 1, cost_team, window_team) AS team, user, job_id, k8s_namespace, held,
    row_covered_s AS covered_s, cost_usd,
    row_allocated_s AS idle_allocated_s, row_unallocated_s AS idle_unallocated_s,
    allocated_usd * share AS idle_allocated_usd, unallocated_usd * share AS idle_unallocated_usd,
    sum(cost_usd) OVER gpu_hour / nullIf(sum(row_covered_s) OVER gpu_hour, 0)                  AS rate,
    -- the GPU-hour's unused seconds (× rate), as if it had one owner
    greatest(greatest(sum(util_covered_s * share) OVER gpu_hour - sum(row_allocated_s + row_unallocated_s) OVER gpu_hour, 0)
             - greatest(sum((util_gpu_s - idle_util_gpu_s) * share) OVER gpu_hour, 0) / 100, 0) AS hour_unused_s,
    -- at the row's own cost per covered second (on-prem energy is measured per owner, so an owner's
    -- second can cost less than the hour's average), the GPU-hour's for a row with no cost of its own
    coalesce(if(costed = 1 AND row_covered_s > 0, cost_usd / row_covered_s, rate) * hour_unused_s
             * if(sum(row_unused_s) OVER gpu_hour > 0, row_unused_s / sum(row_unused_s) OVER gpu_hour,
                  row_covered_s / sum(row_covered_s) OVER gpu_hour), 0)                         AS unused_usd,
    greatest(3600 - sum(row_covered_s) OVER gpu_hour, 0) * row_covered_s / nullIf(sum(row_covered_s) OVER gpu_hour, 0) AS no_data_share_s,
    coalesce(no_data_share_s, 0)                                                                  AS no_data_s,
    coalesce(rate * no_data_share_s, 0)                                                           AS no_data_usd
FROM owned
WINDOW gpu_hour AS (PARTITION BY hour, host, gpu_uuid, mig_instance)
