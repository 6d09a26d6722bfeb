-- Overview and Utilization: GPUs, MIG instances and GPU-hours per environment and pool.
-- gpus counts physical GPUs; a MIG instance is counted under mig_instances, its GPU once.
-- Reads the window's GPU-hour costs (queries/window/: the daily rollup, or the hourly one).
SELECT
    environment,
    pool,
    uniqExact(host, gpu_uuid)                                          AS gpus,
    countIf(mig_instance != '')                                        AS mig_instances,
    sum(h)                                                             AS total_gpu_hours,
    sum(hh)                                                            AS held_gpu_hours,
    sum(uh)                                                            AS total_utilized_gpu_hours,
    100 * total_utilized_gpu_hours / nullIf(total_gpu_hours, 0)        AS utilization_pct,
    sum(c)                                                             AS total_cost_usd
FROM
(
    SELECT environment, pool, host, gpu_uuid, mig_instance,
           sum(gpu_hours) AS h, sumIf(gpu_hours, held) AS hh, sum(utilized_gpu_hours) AS uh, sum(cost_usd) AS c
    FROM (__GPU_COST__)
    WHERE (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
    GROUP BY environment, pool, host, gpu_uuid, mig_instance
)
GROUP BY environment, pool
ORDER BY environment, pool
