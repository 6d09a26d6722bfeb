-- Spend and Overview: spend in currencies other than USD over the range, per currency. The USD
-- totals leave it out and nothing converts it (no exchange rates): the pages say how much there is.
SELECT currency, sum(cost_usd) AS amount, count() AS rows
FROM v_team_spend
WHERE currency != 'USD' AND day >= {start_day:Date} AND day < {end_day:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
GROUP BY currency
ORDER BY currency
