-- Utilization: distribution of per-GPU-day utilization of held GPU time, per team and environment
-- (box: min, quartiles, max), and the time-weighted utilization of the whole group.
-- Reads gpu_util_day: one row per GPU entity, UTC day, team and environment.
SELECT team, environment, gpu_days, min_pct, quartiles[1] AS q1_pct, quartiles[2] AS median_pct,
       quartiles[3] AS q3_pct, max_pct, utilization_pct, held_hours AS gpu_hours
FROM
(
    SELECT
        team, environment,
        count()                                                        AS gpu_days,
        min(u)                                                         AS min_pct,
        quantilesExact(0.25, 0.5, 0.75)(u)                             AS quartiles,
        max(u)                                                         AS max_pct,
        100 * sum(utilized_gpu_hours) / nullIf(sum(gpu_hours), 0)      AS utilization_pct,
        sum(gpu_hours)                                                 AS held_hours
    FROM
    (
        SELECT team, environment, gpu_hours, utilized_gpu_hours, 100 * utilized_gpu_hours / gpu_hours AS u
        FROM (__GPU_UTIL__)
        WHERE gpu_hours > 0
          AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
          AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
    )
    GROUP BY team, environment
)
ORDER BY team, environment
