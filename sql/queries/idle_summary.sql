-- Overview: idle windows overlapping the range, per kind (allocated / unallocated).
SELECT kind, count() AS windows, sum(gpu_hours) AS idle_gpu_hours, sum(cost_usd) AS cost_usd
FROM v_idle_waste
WHERE start < {end:DateTime('UTC')} AND end > {start:DateTime('UTC')}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
GROUP BY kind
ORDER BY kind
