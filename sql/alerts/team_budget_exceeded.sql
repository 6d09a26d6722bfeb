-- Teams whose month-to-date spend has reached {threshold_pct} % of their monthly budget, in the
-- month of the evaluation time {now} (never a month gone by). value: spend as a percentage of the budget.
SELECT
    team,
    toString(m)                                                  AS month,
    100 * spend_mtd_usd / budget_usd                             AS value,
    toString(round(spend_mtd_usd, 2))                            AS annotation_spend_mtd_usd,
    toString(round(budget_usd, 2))                               AS annotation_budget_usd,
    toString(round(forecast_usd, 2))                             AS annotation_forecast_usd,
    toString(round(greatest(spend_mtd_usd - budget_usd, 0), 2))AS annotation_usd
FROM
(
    SELECT team, month AS m, budget_usd, spend_mtd_usd, forecast_usd
    FROM v_team_budget
    WHERE budget_usd > 0 AND month = toStartOfMonth(toDate({now:DateTime64(3, 'UTC')}, 'UTC'))
)
WHERE spend_mtd_usd >= budget_usd * {threshold_pct:Float64} / 100
