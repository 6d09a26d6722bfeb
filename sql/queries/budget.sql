-- Overview (the Spend tile) and Spend (the budget card): per team, the spend of the budget month,
-- the team's monthly budget and the forecast to that month's end.
--   {month}  the 1st of the budget month: the selected month for the month presets, else the
--            calendar month of the window's last day (dashboard/filters.py Filters.budget_month)
--   {today}  the dashboard clock's day. Only when {month} is today's month is there a forecast:
--            spend so far + the average day of the last 7 complete days x the days left (today
--            included), as v_team_budget; a past (or future) month's forecast is its actual spend.
-- The environment and team filters narrow the spend (USD only); a budget is per team, all
-- environments. Every team of config_teams shows (0 spend when it spent nothing; budget 0 when it has none).
WITH
    spend AS
    (
        SELECT team,
               sumIf(cost, day >= {month:Date} AND day < addMonths({month:Date}, 1))  AS month_usd,
               sumIf(cost, day >= {today:Date} - 7 AND day < {today:Date}) / 7    AS daily_recent
        FROM team_spend_day
        WHERE currency = 'USD'
          AND day >= least({month:Date}, {today:Date} - 7)
          AND day < greatest(addMonths({month:Date}, 1), {today:Date})
          AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
          AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
        GROUP BY team
    ),
    budgets AS
    (
        SELECT team, budget_usd_month
        FROM config_teams
        WHERE (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
    ),
    toStartOfMonth({today:Date}) = {month:Date} AS current
SELECT team, budget_usd, spend_mtd_usd, forecast_usd, budget_used_pct,
       toBool(budget_usd > 0 AND spend_mtd_usd > budget_usd)   AS over_budget,
       toBool(budget_usd > 0 AND forecast_usd > budget_usd)    AS forecast_over_budget,
       toBool(current)                                         AS current_month
FROM
(
    SELECT if(s.team != '', s.team, b.team)                                            AS team,
           b.budget_usd_month                                                          AS budget_usd,
           s.month_usd                                                                 AS spend_mtd_usd,
           if(current,
              s.month_usd + s.daily_recent * (toDayOfMonth(toLastDayOfMonth({today:Date})) - toDayOfMonth({today:Date}) + 1),
              s.month_usd)                                                             AS forecast_usd,
           if(budget_usd > 0, 100 * spend_mtd_usd / budget_usd, NULL)                  AS budget_used_pct
    FROM (SELECT * FROM spend WHERE month_usd != 0 OR {month:Date} = toStartOfMonth({today:Date})) AS s
    FULL OUTER JOIN budgets AS b ON b.team = s.team
)
ORDER BY forecast_usd - budget_usd DESC, team
