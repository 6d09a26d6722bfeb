-- Spend: per team, environment and cost kind over the range (USD).
SELECT team, environment, cost_kind, sum(cost_usd) AS cost_usd, sum(estimated_usd) AS estimated_usd,
       sum(gpu_hours) AS gpu_hours, sum(utilized_gpu_hours) AS utilized_gpu_hours
FROM v_team_spend
WHERE currency = 'USD' AND day >= {start_day:Date} AND day < {end_day:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
GROUP BY team, environment, cost_kind
ORDER BY team, environment, cost_kind
