-- Idle & waste: waste in money per owner dimension ({by}: team, namespace, user, job, pool,
-- environment or model) over the window (the daily or hourly waste rollup), with efficiency, the
-- group in `key`: the Idle & waste page's "Waste per team" and its aggregate-by. Waste goes to the
-- owner the rollup gives it. '' reads 'unallocated' for teams, '(none)' otherwise.
SELECT if(k = '', if({by:String} = 'team', 'unallocated', '(none)'), k)   AS key,
       sum(cost_usd)                                              AS spend_usd,
       sum(idle_allocated_usd)                                    AS idle_allocated_usd,
       sum(idle_unallocated_usd)                                  AS idle_unallocated_usd,
       sum(unused_usd)                                            AS unused_usd,
       idle_allocated_usd + idle_unallocated_usd + unused_usd     AS waste_usd,
       if(spend_usd > 0, 100 * (1 - waste_usd / spend_usd), NULL) AS efficiency_pct,
       sum(no_data_usd)                                           AS no_data_usd
FROM
(
    SELECT multiIf({by:String} = 'namespace', toString(k8s_namespace), {by:String} = 'user', toString(user),
                   {by:String} = 'job', toString(job_id), {by:String} = 'pool', toString(pool),
                   {by:String} = 'environment', toString(environment), {by:String} = 'model', toString(model),
                   toString(team)) AS k,
           cost_usd, idle_allocated_usd, idle_unallocated_usd, unused_usd, no_data_usd
    FROM (__GPU_WASTE__)
    WHERE (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, if(team = '', 'unallocated', team)))
      AND ({gpu:String} = '' OR (gpu_uuid = {gpu:String} AND ({mig:String} = '' OR mig_instance = {mig:String})))
)
GROUP BY key
ORDER BY waste_usd DESC, key
