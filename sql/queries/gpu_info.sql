-- The GPU page: the GPU {gpu_uuid} as last seen in gpu_cost_day (any day: where it is, what it
-- is), its MIG instances, and for the entity shown (its MIG instance {mig_instance}, or the whole
-- GPU when that is empty) whether it was ever seen and its first and last day. Not narrowed by
-- the range, env or team: the page names one GPU. No row: the store has never seen the GPU.
SELECT gpu_uuid,
       argMax(host, day)                                                                AS host,
       argMax(environment, day)                                                         AS environment,
       argMax(region, day)                                                              AS region,
       argMax(pool, day)                                                                AS pool,
       argMax(model, day)                                                               AS model,
       argMax(instance_id, day)                                                         AS instance_id,
       argMax(instance_type, day)                                                       AS instance_type,
       arrayStringConcat(arraySort(m -> (length(m), m),
                                   arrayFilter(m -> m != '', groupUniqArray(mig_instance))), ',') AS mig_instances,
       countIf(mig_instance = {mig_instance:String}) > 0                                AS entity_seen,
       minIf(day, mig_instance = {mig_instance:String})                                 AS first_day,
       maxIf(day, mig_instance = {mig_instance:String})                                 AS last_day
FROM gpu_cost_day
WHERE gpu_uuid = {gpu_uuid:String}
GROUP BY gpu_uuid
