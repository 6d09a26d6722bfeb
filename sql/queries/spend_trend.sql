-- Spend: per day and team over the range (USD).
SELECT day, team, sum(cost_usd) AS cost_usd
FROM v_team_spend
WHERE currency = 'USD' AND day >= {start_day:Date} AND day < {end_day:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
GROUP BY day, team
ORDER BY day, team
