-- Overview: this month's waste in money and its parts (v_team_waste), for the environment and
-- team filters.
SELECT sum(spend_usd) AS spend_usd, sum(idle_allocated_usd) AS idle_allocated_usd,
       sum(idle_unallocated_usd) AS idle_unallocated_usd, sum(unused_usd) AS unused_usd,
       sum(waste_usd) AS waste_usd, sum(no_data_usd) AS no_data_usd
FROM v_team_waste
WHERE month = toStartOfMonth(today())
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
