-- Idle & waste: teams ranked by waste in money over the range (gpu_waste_day), with efficiency.
SELECT if(team = '', 'unallocated', team) AS team,
       sum(cost_usd)                                              AS spend_usd,
       sum(idle_allocated_usd)                                    AS idle_allocated_usd,
       sum(idle_unallocated_usd)                                  AS idle_unallocated_usd,
       sum(unused_usd)                                            AS unused_usd,
       idle_allocated_usd + idle_unallocated_usd + unused_usd     AS waste_usd,
       if(spend_usd > 0, 100 * (1 - waste_usd / spend_usd), NULL) AS efficiency_pct,
       sum(no_data_usd)                                           AS no_data_usd
FROM gpu_waste_day
WHERE day >= {start_day:Date} AND day < {end_day:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, if(team = '', 'unallocated', team)))
  AND ({gpu:String} = '' OR (gpu_uuid = {gpu:String} AND ({mig:String} = '' OR mig_instance = {mig:String})))
GROUP BY team
ORDER BY waste_usd DESC, team
