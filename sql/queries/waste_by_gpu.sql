-- Idle & waste: the GPUs (and MIG slices) that make up each team's waste over the range, with
-- who held them, costliest first.
SELECT if(team = '', 'unallocated', team) AS team, host, gpu_uuid, mig_instance, pool, environment,
       arrayStringConcat(arrayFilter(x -> x != '', groupUniqArray(user)), ' ')          AS users,
       arrayStringConcat(arrayFilter(x -> x != '', groupUniqArray(job_id)), ' ')        AS jobs,
       arrayStringConcat(arrayFilter(x -> x != '', groupUniqArray(k8s_namespace)), ' ') AS namespaces,
       sum(gpu_hours)                                                                  AS gpu_hours,
       sum(cost_usd)                                                                   AS spend_usd,
       sum(idle_allocated_usd + idle_unallocated_usd)                                  AS idle_usd,
       sum(unused_usd)                                                                 AS unused_usd,
       idle_usd + unused_usd                                                           AS waste_usd
FROM (__GPU_WASTE__)
WHERE (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, if(team = '', 'unallocated', team)))
  AND ({gpu:String} = '' OR (gpu_uuid = {gpu:String} AND ({mig:String} = '' OR mig_instance = {mig:String})))
GROUP BY team, host, gpu_uuid, mig_instance, pool, environment
HAVING waste_usd > 0
ORDER BY waste_usd DESC, team, host, gpu_uuid, mig_instance
LIMIT {limit:UInt32}
