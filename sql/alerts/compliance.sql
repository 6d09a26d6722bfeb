-- Open compliance findings of one policy (__POLICY__: residency, untagged_spend, runtime_drift or
-- gpu_health; one built-in rule per policy) last seen in the last {lookback_days} days:
-- one alert per finding. The finding's own severity (critical, warning, info) is the alert's.
SELECT
    policy,
    finding_key,
    team,
    host,
    gpu_uuid,
    provider,
    region,
    resource_id,
    severity,
    summary,
    1                                                            AS value,
    toString(round(cost_usd, 2))                                 AS annotation_usd,
    substring(evidence, 1, 2000)                                 AS annotation_evidence,
    formatDateTime(first_seen, '%Y-%m-%dT%H:%i:%SZ', 'UTC')     AS annotation_first_seen,
    formatDateTime(last_seen, '%Y-%m-%dT%H:%i:%SZ', 'UTC')      AS annotation_last_seen
FROM v_compliance_open
WHERE policy = '__POLICY__'
  AND last_seen >= {now:DateTime64(3, 'UTC')} - toIntervalSecond(toUInt64({lookback_days:Float64} * 86400))
