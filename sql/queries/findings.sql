-- Compliance (and the Overview tile): open findings seen in the range, worst first, with evidence.
SELECT policy, severity, summary, team, environment, provider, region, pool, host, gpu_uuid, resource_id,
       cost_usd, first_seen, last_seen, finding_key, evidence
FROM v_compliance_open
WHERE last_seen >= {start:DateTime('UTC')} AND first_seen < {end:DateTime('UTC')}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
ORDER BY severity = 'critical' DESC, severity = 'warning' DESC, policy, cost_usd DESC, finding_key
LIMIT 500
