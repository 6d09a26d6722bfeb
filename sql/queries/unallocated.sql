-- Spend: what no attribution rule claimed, by what it is and the resource (USD).
SELECT what, environment, region, pool, if(instance_id != '', instance_id, host) AS resource,
       sum(cost_usd) AS cost_usd, sum(gpu_hours) AS gpu_hours
FROM v_unallocated
WHERE day >= {start_day:Date} AND day < {end_day:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
GROUP BY what, environment, region, pool, resource
ORDER BY cost_usd DESC, resource
LIMIT 500
