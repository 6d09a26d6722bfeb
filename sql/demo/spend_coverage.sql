-- The demo's summary: USD spend and the share of it attributed to a team.
SELECT round(sum(cost)), round(100 * sumIf(cost, team != 'unallocated') / sum(cost), 1)
FROM team_spend_day
WHERE currency = 'USD'
