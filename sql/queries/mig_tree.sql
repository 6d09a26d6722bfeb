-- Utilization: GPUs split into MIG instances, each instance listed under its GPU (level 0: the
-- GPU, level 1: its instances) with profile, main team, GPU-hours and utilization.
WITH inst AS
(
    SELECT host, gpu_uuid, mig_instance, any(pool) AS i_pool, any(environment) AS i_environment, any(model) AS i_model,
           topKWeighted(1)(team, toUInt64(gpu_hours * 1000))[1] AS i_team,
           sum(gpu_hours) AS i_gpu_hours, sum(utilized_gpu_hours) AS i_utilized
    FROM gpu_cost_hour
    WHERE mig_instance != '' AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
      AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
    GROUP BY host, gpu_uuid, mig_instance
),
profiles AS
(
    SELECT host, gpu_uuid, mig_instance, any(mig_profile) AS mig_profile
    FROM gpu_hour
    WHERE mig_instance != '' AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
    GROUP BY host, gpu_uuid, mig_instance
)
SELECT * FROM
(
    SELECT 0 AS level, host, gpu_uuid, '' AS mig_instance, '' AS mig_profile, any(i_pool) AS pool,
           any(i_environment) AS environment, any(i_model) AS model,
           arrayStringConcat(arraySort(groupUniqArray(i_team)), ', ') AS team,
           count() AS instances, sum(i_gpu_hours) AS gpu_hours,
           100 * sum(i_utilized) / nullIf(sum(i_gpu_hours), 0) AS utilization_pct
    FROM inst GROUP BY host, gpu_uuid
    UNION ALL
    SELECT 1, i.host, i.gpu_uuid, i.mig_instance, p.mig_profile, i.i_pool, i.i_environment, i.i_model, i.i_team, 1,
           i.i_gpu_hours, 100 * i.i_utilized / nullIf(i.i_gpu_hours, 0)
    FROM inst AS i LEFT JOIN profiles AS p USING (host, gpu_uuid, mig_instance)
)
ORDER BY host, gpu_uuid, level, length(mig_instance), mig_instance
LIMIT 2000
