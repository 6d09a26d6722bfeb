-- Placement, right-sizing: whole GPUs (no MIG slice) held by each team over the range, per
-- environment, pool and model, with how busy they were. {hours} is the number of hours with data
-- in the range (hours.sql): gpus = the GPUs held on average. dashboard/throughput.py picks the
-- smallest MIG slice or smaller model that covers utilization_pct and what it would save.
SELECT team, environment, pool, model,
       sum(gpu_hours)                                         AS gpu_hours,
       sum(utilized_gpu_hours)                                AS utilized_gpu_hours,
       sum(cost_usd)                                          AS cost_usd,
       gpu_hours / greatest({hours:UInt64}, 1)                AS gpus
FROM (__GPU_COST__)
WHERE held AND mig_instance = '' AND team != 'unallocated'
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
GROUP BY team, environment, pool, model
HAVING gpu_hours > 0
ORDER BY cost_usd DESC, team, environment, pool, model
