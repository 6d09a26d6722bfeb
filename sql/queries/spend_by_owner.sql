-- Spend: GPU cost per owner dimension ({by}: namespace, user, job, pool, environment or model; the
-- team view reads spend_by_team.sql, which adds the rest of the cloud bill), environment and cost
-- kind over exactly [start, end), from gpu_cost_hour. GPU cost only: storage, egress and other
-- non-GPU lines are attributed to teams, never to these dimensions. '' (no such owner) reads '(none)'.
SELECT key, environment, kind.1 AS cost_kind, kind.2 AS cost_usd
FROM
(
    SELECT if(k = '', '(none)', k) AS key, environment,
           sum(cloud_gpu_usd) AS cloud_gpu, sum(onprem_capital_usd) AS onprem_capital,
           sum(onprem_operations_usd) AS onprem_operations, sum(onprem_energy_usd) AS onprem_energy
    FROM
    (
        SELECT multiIf({by:String} = 'namespace', toString(k8s_namespace), {by:String} = 'user', toString(user),
                       {by:String} = 'job', toString(job_id), {by:String} = 'pool', toString(pool),
                       {by:String} = 'environment', toString(environment), {by:String} = 'model', toString(model),
                       toString(team)) AS k,
               environment, cloud_gpu_usd, onprem_capital_usd, onprem_operations_usd, onprem_energy_usd
        FROM gpu_cost_hour
        WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
          AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
          AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
    )
    GROUP BY key, environment
)
ARRAY JOIN [('cloud_gpu', cloud_gpu), ('onprem_capital', onprem_capital), ('onprem_operations', onprem_operations),
            ('onprem_energy', onprem_energy)] AS kind
WHERE kind.2 != 0
ORDER BY key, environment, cost_kind
