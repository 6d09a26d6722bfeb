-- The GPU page: one GPU entity's idle windows overlapping [start, end), earliest first ({limit} at
-- most), with their kind, owner and cost.
SELECT kind, team, user, job_id, k8s_namespace, k8s_pod, start, end, duration_s, avg_util_gpu, cost_usd
FROM v_idle_waste
WHERE host = {host:String} AND gpu_uuid = {gpu_uuid:String} AND mig_instance = {mig_instance:String}
  AND start < {end:DateTime('UTC')} AND end > {start:DateTime('UTC')}
ORDER BY start
LIMIT {limit:UInt32}
