-- Utilization: distribution of per-GPU-day utilization of held GPU time, per team and environment
-- (box: min, quartiles, max), and the time-weighted utilization of the whole group.
-- Reads gpu_cost_day (gpu_cost_hour summed per day).
SELECT team, environment, gpu_days, min_pct, quartiles[1] AS q1_pct, quartiles[2] AS median_pct,
       quartiles[3] AS q3_pct, max_pct, utilization_pct, gpu_hours
FROM
(
    SELECT
        day_team AS team, day_environment AS environment,
        count()                                                        AS gpu_days,
        min(u)                                                         AS min_pct,
        quantilesExact(0.25, 0.5, 0.75)(u)                             AS quartiles,
        max(u)                                                         AS max_pct,
        100 * sum(uh) / nullIf(sum(h), 0)                              AS utilization_pct,
        sum(h)                                                         AS gpu_hours
    FROM
    (
        -- one row per GPU-day of a team and environment: grouped on a 128-bit identity of (day, team,
        -- environment, host, gpu_uuid, mig_instance), two independent 64-bit hashes, as uniqExact
        -- identifies strings by a 128-bit hash; a key of two numbers takes the engine's fixed-width
        -- 128-bit hash table (on a 10,000-GPU fleet's 90 days 2.2× faster than grouping on the day and
        -- the five strings, 1.2× faster than on the day and the two hashes)
        SELECT any(team) AS day_team, any(environment) AS day_environment,
               sum(gpu_hours) AS h, sum(utilized_gpu_hours) AS uh, 100 * uh / nullIf(h, 0) AS u
        FROM (__GPU_COST__)
        WHERE held
          AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
          AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
        GROUP BY cityHash64(day, team, environment, host, gpu_uuid, mig_instance),
                 xxh3(day, team, environment, host, gpu_uuid, mig_instance)
        HAVING h > 0
    )
    GROUP BY day_team, day_environment
)
ORDER BY team, environment
