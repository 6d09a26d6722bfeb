-- Every idle window with its owner and the money it cost; is_open: the window held the GPU's latest
-- sample when it was derived (it may still grow); covered_s: the seconds with data inside it.
CREATE OR REPLACE VIEW v_idle_waste AS
SELECT
    host, gpu_uuid, mig_instance, pool, environment, region, instance_id, model, kind,
    if(team = '', 'unallocated', team) AS team,
    user, job_id, k8s_namespace, k8s_pod, slurm_account,
    start, end, is_open, duration_s, covered_s, duration_s / 3600 AS gpu_hours, avg_util_gpu, avg_util_mem, cost_usd
FROM idle_windows;
