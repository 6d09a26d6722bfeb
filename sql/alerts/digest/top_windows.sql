-- The waste digest: one team's idle windows that overlapped [start, end), costliest first
-- ({limit} at most), each with its owner, GPU and what the whole window cost (v_idle_waste).
SELECT kind, user, job_id, k8s_namespace, k8s_pod, slurm_account, environment, host, gpu_uuid,
       mig_instance, model, start, end, duration_s, cost_usd
FROM v_idle_waste
WHERE team = {team:String}
  AND start < {end:DateTime('UTC')} AND end > {start:DateTime('UTC')}
ORDER BY cost_usd DESC, start, host, gpu_uuid, mig_instance
LIMIT {limit:UInt32}
