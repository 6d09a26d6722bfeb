-- Idle & waste: idle windows overlapping the range, costliest first ({limit} at most), with
-- owner, host, GPU and length. Allocated: a process or job held the GPU; unallocated: nothing did.
SELECT kind, team, user, job_id, k8s_namespace, k8s_pod, slurm_account,
       environment, pool, host, gpu_uuid, mig_instance, instance_id, model,
       start, end, gpu_hours, avg_util_gpu, cost_usd
FROM v_idle_waste
WHERE start < {end:DateTime('UTC')} AND end > {start:DateTime('UTC')}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
  AND ({gpu:String} = '' OR (gpu_uuid = {gpu:String} AND ({mig:String} = '' OR mig_instance = {mig:String})))
ORDER BY cost_usd DESC, start, host, gpu_uuid, mig_instance
LIMIT {limit:UInt32}
