-- Per team and month: budget, spend month-to-date and the forecast to month end
-- (month-to-date + the average of the last 7 complete days, across a month's start, × days left,
-- today included). Past months: actuals. Days are UTC days; USD spend (team_spend_day keeps
-- bill lines without a currency as USD). Every team of config_teams has a row for this month,
-- spend or not.
CREATE OR REPLACE VIEW v_team_budget AS
WITH
    toDate(now('UTC')) AS d,
    monthly AS
    (
        SELECT team, month, sum(cost) AS spend
        FROM
        (
            SELECT team, toStartOfMonth(day) AS month, cost FROM team_spend_day WHERE currency = 'USD'
            UNION ALL
            SELECT team, toStartOfMonth(d) AS month, 0. AS cost FROM config_teams
        )
        GROUP BY team, month
    ),
    recent AS
    (
        SELECT team, sum(cost) / 7 AS daily_recent
        FROM team_spend_day
        WHERE currency = 'USD' AND day >= d - 7 AND day < d
        GROUP BY team
    )
SELECT
    m.team                                                         AS team,
    m.month                                                        AS month,
    t.budget_usd_month                                             AS budget_usd,
    m.spend                                                        AS spend_mtd_usd,
    if(month = toStartOfMonth(d),
       m.spend + r.daily_recent * (toDayOfMonth(toLastDayOfMonth(d)) - toDayOfMonth(d) + 1),
       m.spend)                                                    AS forecast_usd,
    if(t.budget_usd_month > 0, 100 * spend_mtd_usd / t.budget_usd_month, NULL) AS budget_used_pct,
    t.budget_usd_month > 0 AND spend_mtd_usd > t.budget_usd_month  AS over_budget,
    t.budget_usd_month > 0 AND forecast_usd > t.budget_usd_month   AS forecast_over_budget
FROM monthly AS m
LEFT JOIN config_teams AS t ON t.team = m.team
LEFT JOIN recent AS r ON r.team = m.team;
