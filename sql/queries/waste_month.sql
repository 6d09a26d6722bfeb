-- Overview: the budget month's waste in money and its parts (v_team_waste), for the environment and
-- team filters. {month} is the 1st of the month the Spend tile shows (Filters.budget_month: the
-- selected month for the month presets, else the month of the window's last day).
SELECT sum(spend_usd) AS spend_usd, sum(idle_allocated_usd) AS idle_allocated_usd,
       sum(idle_unallocated_usd) AS idle_unallocated_usd, sum(unused_usd) AS unused_usd,
       sum(waste_usd) AS waste_usd, sum(no_data_usd) AS no_data_usd
FROM v_team_waste
WHERE month = {month:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
