-- Spend no rule attributed to a team, and what it consists of.
CREATE OR REPLACE VIEW v_unallocated AS
SELECT toDate(hour) AS day, environment, region, pool, host, instance_id, 'gpu' AS what,
       sum(cost_usd) AS cost_usd, sum(gpu_hours) AS gpu_hours
FROM gpu_cost_hour WHERE team = 'unallocated'
GROUP BY day, environment, region, pool, host, instance_id
HAVING gpu_hours > 0 OR cost_usd != 0     -- not the whole-GPU row of a GPU its MIG instances fill
UNION ALL
SELECT day, environment, '' AS region, '' AS pool, '' AS host, '' AS instance_id, cost_kind AS what,
       cost AS cost_usd, 0 AS gpu_hours
FROM team_spend_day WHERE team = 'unallocated' AND cost_kind = 'cloud_other' AND currency = 'USD';
