-- Utilization: distribution of per-GPU-day utilization of held GPU time per owner dimension ({by}:
-- namespace, user, job, pool, environment or model; teams read util_distribution.sql) and
-- environment (box: min, quartiles, max), and the group's time-weighted utilization; from
-- gpu_cost_hour over exactly [start, end), summed per GPU entity and UTC day. '' reads '(none)'.
SELECT key, environment, gpu_days, min_pct, quartiles[1] AS q1_pct, quartiles[2] AS median_pct,
       quartiles[3] AS q3_pct, max_pct, utilization_pct, gpu_hours
FROM
(
    SELECT
        key, environment,
        count()                                                        AS gpu_days,
        min(u)                                                         AS min_pct,
        quantilesExact(0.25, 0.5, 0.75)(u)                             AS quartiles,
        max(u)                                                         AS max_pct,
        100 * sum(uh) / nullIf(sum(h), 0)                              AS utilization_pct,
        sum(h)                                                         AS gpu_hours
    FROM
    (
        SELECT toDate(hour) AS day,
               if(k = '', '(none)', k) AS key, environment, host, gpu_uuid, mig_instance,
               sum(gpu_hours) AS h, sum(utilized_gpu_hours) AS uh, 100 * uh / nullIf(h, 0) AS u
        FROM
        (
            SELECT hour, multiIf({by:String} = 'namespace', toString(k8s_namespace), {by:String} = 'user', toString(user),
                                 {by:String} = 'job', toString(job_id), {by:String} = 'pool', toString(pool),
                                 {by:String} = 'environment', toString(environment), {by:String} = 'model', toString(model),
                                 toString(team)) AS k,
                   environment, host, gpu_uuid, mig_instance, gpu_hours, utilized_gpu_hours
            FROM gpu_cost_hour
            WHERE held AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
              AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
              AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
        )
        GROUP BY day, key, environment, host, gpu_uuid, mig_instance
        HAVING h > 0
    )
    GROUP BY key, environment
)
ORDER BY key, environment
