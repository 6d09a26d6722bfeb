-- Utilization: heatmap of GPUs × days, MIG instances right after their GPU: the {max_entities}
-- costliest GPU entities matching {search}, with `matches`, as util_heatmap_gpu.sql (whose buckets
-- are shorter than 24 hours) picks them; read from gpu_cost_day.
WITH picked AS
(
    SELECT pool, host, gpu_uuid, mig_instance, count() OVER () AS matches
    FROM gpu_cost_day
    WHERE day >= {start_day:Date} AND day < {end_day:Date}
      AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
      AND ({search:String} = '' OR positionCaseInsensitiveUTF8(concat(host, ' ', gpu_uuid, ' ', model, ' ', pool),
                                                               {search:String}) > 0)
    GROUP BY pool, host, gpu_uuid, mig_instance
    ORDER BY round(sum(cost_usd), 6) DESC, pool, host, gpu_uuid, mig_instance
    LIMIT {max_entities:UInt32}
)
SELECT
    toDateTime(day, 'UTC')                                             AS t,
    pool, host, gpu_uuid, mig_instance,
    100 * sum(utilized_gpu_hours) / nullIf(sum(gpu_hours), 0)          AS utilization_pct,
    any(p.matches)                                                     AS matches
FROM gpu_cost_day AS c
INNER JOIN picked AS p USING (pool, host, gpu_uuid, mig_instance)
WHERE day >= {start_day:Date} AND day < {end_day:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
GROUP BY t, pool, host, gpu_uuid, mig_instance
ORDER BY pool, host, gpu_uuid, mig_instance, t
