-- Overview and Spend: this month's spend, forecast to month end and budget per team.
SELECT team, budget_usd, spend_mtd_usd, forecast_usd, budget_used_pct,
       toBool(over_budget) AS over_budget, toBool(forecast_over_budget) AS forecast_over_budget
FROM v_team_budget
WHERE month = toStartOfMonth(today())
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
ORDER BY forecast_usd - budget_usd DESC, team
