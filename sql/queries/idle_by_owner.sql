-- Idle & waste: cost wasted per team and pool, allocated vs unallocated.
SELECT team, pool, environment, kind, count() AS windows, sum(gpu_hours) AS idle_gpu_hours, sum(cost_usd) AS cost_usd
FROM v_idle_waste
WHERE start < {end:DateTime('UTC')} AND end > {start:DateTime('UTC')}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
  AND ({gpu:String} = '' OR (gpu_uuid = {gpu:String} AND ({mig:String} = '' OR mig_instance = {mig:String})))
GROUP BY team, pool, environment, kind
ORDER BY cost_usd DESC, team, pool, kind
