-- Teams whose spend forecast to the end of the month reaches {threshold_pct} % of their monthly
-- budget, in the month of the evaluation time {now} (never a month gone by). value: forecast as a percentage of budget.
-- When the budget is already exceeded, team_budget_exceeded (critical) inhibits this alert.
SELECT
    team,
    toString(m)                                                  AS month,
    100 * forecast_usd / budget_usd                              AS value,
    toString(round(spend_mtd_usd, 2))                            AS annotation_spend_mtd_usd,
    toString(round(budget_usd, 2))                               AS annotation_budget_usd,
    toString(round(forecast_usd, 2))                             AS annotation_forecast_usd,
    toString(round(greatest(forecast_usd - budget_usd, 0), 2)) AS annotation_usd
FROM
(
    SELECT team, month AS m, budget_usd, spend_mtd_usd, forecast_usd
    FROM v_team_budget
    WHERE budget_usd > 0 AND month = toStartOfMonth(toDate({now:DateTime64(3, 'UTC')}, 'UTC'))
)
WHERE forecast_usd >= budget_usd * {threshold_pct:Float64} / 100
