-- Teams whose month-to-date spend has reached {threshold_pct} % of their monthly budget, in the
-- latest month the budget view holds. value: spend as a percentage of the budget.
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
    WHERE budget_usd > 0
    ORDER BY team, month DESC
    LIMIT 1 BY team
)
WHERE spend_mtd_usd >= budget_usd * {threshold_pct:Float64} / 100
