-- Allocation coverage: the share of spend that rules attributed to a team.
CREATE OR REPLACE VIEW v_allocation_coverage AS
SELECT day, sum(cost) AS cost_usd, sumIf(cost, team != 'unallocated') AS allocated_usd,
       100 * allocated_usd / nullIf(cost_usd, 0) AS coverage_pct
FROM team_spend_day WHERE currency = 'USD'
GROUP BY day;
