-- Utilization: heatmap of pools × time buckets ({bucket_h} hours), time-weighted utilization %.
-- Buckets of 24 hours read util_heatmap_pool_day.sql (gpu_cost_day) instead.
SELECT
    toStartOfInterval(hour, toIntervalHour({bucket_h:UInt32}))         AS t,
    environment,
    pool,
    sum(gpu_hours)                                                     AS total_gpu_hours,
    100 * sum(utilized_gpu_hours) / nullIf(sum(gpu_hours), 0)          AS utilization_pct
FROM gpu_cost_hour
WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
GROUP BY t, environment, pool
ORDER BY environment, pool, t
