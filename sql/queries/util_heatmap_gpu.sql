-- Utilization: heatmap of GPUs × time buckets, MIG instances right after their GPU; at most
-- {max_entities} GPU entities (the first by pool, host, GPU, MIG instance; picked from gpu_cost_day,
-- which has the same entities per day). Buckets of 24 hours read util_heatmap_gpu_day.sql instead.
WITH picked AS
(
    SELECT pool, host, gpu_uuid, mig_instance
    FROM gpu_cost_day
    WHERE day >= {start_day:Date} AND day < {end_day:Date}
      AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
    GROUP BY pool, host, gpu_uuid, mig_instance
    ORDER BY pool, host, gpu_uuid, mig_instance
    LIMIT {max_entities:UInt32}
)
SELECT
    toStartOfInterval(hour, toIntervalHour({bucket_h:UInt32}))         AS t,
    pool, host, gpu_uuid, mig_instance,
    100 * sum(utilized_gpu_hours) / nullIf(sum(gpu_hours), 0)          AS utilization_pct
FROM gpu_cost_hour
WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
  AND (pool, host, gpu_uuid, mig_instance) IN (SELECT pool, host, gpu_uuid, mig_instance FROM picked)
GROUP BY t, pool, host, gpu_uuid, mig_instance
ORDER BY pool, host, gpu_uuid, mig_instance, t
