-- Open compliance findings.
CREATE OR REPLACE VIEW v_compliance_open AS
SELECT policy, finding_key, severity, team, environment, provider, region, pool, host, gpu_uuid, resource_id,
       summary, evidence, cost_usd, first_seen, last_seen
FROM compliance_findings;
