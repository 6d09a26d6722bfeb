-- Idle & waste, GPU focus: the GPU {gpu} (its MIG instance {mig}, or all of it when {mig} is
-- empty) as last seen in gpu_cost_day (any day: where it is, what it is), with its GPU-hours, cost
-- and teams in the range, and the MIG profile from gpu_hour. Not narrowed by env or team: it names
-- the GPU. No row: the store has never seen it.
SELECT gpu_uuid,
       argMax(host, day)                                                                AS host,
       argMax(environment, day)                                                         AS environment,
       argMax(region, day)                                                              AS region,
       argMax(pool, day)                                                                AS pool,
       argMax(model, day)                                                               AS model,
       argMax(instance_id, day)                                                         AS instance_id,
       arrayStringConcat(arraySort(m -> (length(m), m),
                                   arrayFilter(m -> m != '', groupUniqArray(mig_instance))), ', ') AS mig_instances,
       (SELECT any(mig_profile) FROM gpu_hour
        WHERE gpu_uuid = {gpu:String} AND mig_instance = {mig:String} AND mig_instance != ''
          AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')})             AS mig_profile,
       min(day)                                                                         AS first_day,
       max(day)                                                                         AS last_day,
       sumIf(gpu_hours, day >= {start_day:Date} AND day < {end_day:Date})              AS gpu_hours,
       sumIf(cost_usd, day >= {start_day:Date} AND day < {end_day:Date})               AS cost_usd,
       arrayStringConcat(arraySort(groupUniqArrayIf(if(team = '', 'unallocated', team),
                                                    day >= {start_day:Date} AND day < {end_day:Date})), ', ') AS teams
FROM gpu_cost_day
WHERE gpu_uuid = {gpu:String} AND ({mig:String} = '' OR mig_instance = {mig:String})
GROUP BY gpu_uuid
