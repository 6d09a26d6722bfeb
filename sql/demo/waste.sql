-- The demo's summary: waste in money over the whole simulated history (v_team_waste) and the
-- fleet's efficiency.
SELECT round(sum(waste_usd)), round(sum(idle_usd)), round(sum(unused_usd)),
       round(100 * (1 - sum(waste_usd) / nullIf(sum(spend_usd), 0)), 1)
FROM v_team_waste
