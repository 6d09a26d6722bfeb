-- Utilization: GPUs split into MIG instances, each instance listed under its GPU (level 0: the
-- GPU, level 1: its instances) with profile, main team (most GPU-hours), GPU-hours and utilization:
-- the {max_gpus} GPUs with the most GPU-hours in the range, narrowed by {search} (found in host, GPU
-- UUID, model or pool, any case; empty: every one), as gpu_top.sql narrows; `matches` is how many
-- GPUs match in all. GPU-hours from the window's GPU costs; `last_day` is the last day in the window
-- an instance has GPU-hours, where dashboard/queries.py mig_tree reads its profile (mig_profiles.sql).
WITH inst AS
(
    -- main team: the one with the most GPU-hours on the instance in the range
    SELECT host, gpu_uuid, mig_instance, any(t_pool) AS i_pool, any(t_environment) AS i_environment,
           any(t_model) AS i_model, argMax(team, (t_gpu_hours, team)) AS i_team,
           sum(t_gpu_hours) AS i_gpu_hours, sum(t_utilized) AS i_utilized, max(t_last_day) AS i_last_day
    FROM
    (
        SELECT host, gpu_uuid, mig_instance, team, any(pool) AS t_pool, any(environment) AS t_environment,
               any(model) AS t_model, sum(gpu_hours) AS t_gpu_hours, sum(utilized_gpu_hours) AS t_utilized,
               max(day) AS t_last_day
        FROM (__GPU_COST__)
        WHERE mig_instance != ''
          AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
          AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
          AND ({search:String} = '' OR positionCaseInsensitiveUTF8(concat(host, ' ', gpu_uuid, ' ', model, ' ', pool),
                                                                   {search:String}) > 0)
        GROUP BY host, gpu_uuid, mig_instance, team
    )
    GROUP BY host, gpu_uuid, mig_instance
),
-- each GPU with its instances (sorted as listed), so that inst is computed once for both levels
gpus AS
(
    SELECT host, gpu_uuid,
           arraySort(k -> (length(k.1), k.1),
                     groupArray((mig_instance, i_pool, i_environment, i_model, i_team, i_gpu_hours, i_utilized,
                                 i_last_day))) AS kids,
           sum(i_gpu_hours) AS gpu_total, count() OVER () AS matches
    FROM inst
    GROUP BY host, gpu_uuid
    ORDER BY round(gpu_total, 6) DESC, host, gpu_uuid
    LIMIT {max_gpus:UInt32}
)
-- n = 0: the GPU (level 0), n = 1..: its n-th instance (level 1)
SELECT level, host, gpu_uuid, mig_instance, pool, environment, model, team, instances, gpu_hours, utilization_pct,
       matches, last_day
FROM
(
    SELECT toUInt8(n > 0) AS level, host, gpu_uuid, gpu_total,
           if(n = 0, '', kids[n].1) AS mig_instance,
           kids[greatest(n, 1)].2 AS pool, kids[greatest(n, 1)].3 AS environment, kids[greatest(n, 1)].4 AS model,
           if(n = 0, arrayStringConcat(arraySort(arrayDistinct(arrayMap(k -> k.5, kids))), ', '), kids[n].5) AS team,
           toUInt64(if(n = 0, length(kids), 1)) AS instances,
           if(n = 0, arraySum(arrayMap(k -> k.6, kids)), kids[n].6) AS gpu_hours,
           100 * if(n = 0, arraySum(arrayMap(k -> k.7, kids)), kids[n].7) / nullIf(gpu_hours, 0) AS utilization_pct,
           matches, if(n = 0, toDate(0), kids[n].8) AS last_day
    FROM gpus
    ARRAY JOIN range(toUInt64(length(kids) + 1)) AS n
)
ORDER BY round(gpu_total, 6) DESC, host, gpu_uuid, level, length(mig_instance), mig_instance
