-- The GPU page without a GPU: the GPU entities (whole GPUs and MIG instances) with the most cost in
-- the range ({limit} at most), narrowed by the filters and by {search} (found in host, GPU UUID,
-- model or pool, any case; empty: every one), with how many match in all.
SELECT host, gpu_uuid, mig_instance,
       argMax(environment, day)                        AS last_environment,
       argMax(pool, day)                               AS last_pool,
       argMax(model, day)                              AS last_model,
       sum(gpu_hours)                                  AS range_gpu_hours,
       sum(cost_usd)                                   AS range_cost_usd,
       sum(cost_usd) / nullIf(sum(gpu_hours), 0)       AS usd_per_gpu_hour,
       100 * sum(utilized_gpu_hours) / nullIf(sum(gpu_hours), 0) AS utilization_pct,
       count() OVER ()                                 AS matches
FROM gpu_cost_day
WHERE day >= {start_day:Date} AND day < {end_day:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
  AND ({search:String} = '' OR positionCaseInsensitiveUTF8(concat(host, ' ', gpu_uuid, ' ', model, ' ', pool),
                                                           {search:String}) > 0)
GROUP BY host, gpu_uuid, mig_instance
ORDER BY range_cost_usd DESC, host, gpu_uuid, mig_instance
LIMIT {limit:UInt32}
