-- Overview: allocation coverage, the share of spend in the range that rules attributed to a team.
SELECT sum(cost_usd) AS total_usd,
       sumIf(cost_usd, team != 'unallocated') AS allocated_usd,
       100 * allocated_usd / nullIf(total_usd, 0) AS coverage_pct
FROM v_team_spend
WHERE currency = 'USD' AND day >= {start_day:Date} AND day < {end_day:Date}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
