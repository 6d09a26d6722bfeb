-- Utilization: heatmap of pools × days, time-weighted utilization % (util_heatmap_pool.sql for
-- buckets of 24 hours, read from gpu_cost_day: the same numbers from 24× fewer rows).
SELECT
    toDateTime(day, 'UTC')                                             AS t,
    environment,
    pool,
    sum(gpu_hours)                                                     AS total_gpu_hours,
    100 * sum(utilized_gpu_hours) / nullIf(sum(gpu_hours), 0)          AS utilization_pct
FROM gpu_cost_day
WHERE day >= {start_day:Date} AND day < {end_day:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
GROUP BY t, environment, pool
ORDER BY environment, pool, t
