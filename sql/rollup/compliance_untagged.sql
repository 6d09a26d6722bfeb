-- Untagged GPU spend: cloud GPU instances whose billing lines carry none of the team tag keys
-- {tag_keys:Array(String)}, with their cost; evidence is the instance's lines per day.
SELECT
    'untagged_spend'                                                AS policy,
    concat('untagged/', resource_key)                               AS finding_key,
    'warning'                                                       AS severity,
    '' AS team, environment, environment AS provider, region, '' AS pool, any(ev_host) AS host, '' AS gpu_uuid,
    any(rid)                                                        AS resource_id,
    format('{} GPU instance {} ({}) has {} USD of spend without any of the tags {}',
           environment, any(rid), region, toString(round(sum(day_cost), 2)), arrayStringConcat({tag_keys:Array(String)}, ', ')) AS summary,
    toJSONString(groupArray(60)(map('day', toString(day), 'cost', toString(round(day_cost, 4)), 'service', service))) AS evidence,
    sum(day_cost)                                                   AS cost_usd,
    min(first)                                                      AS first_seen,
    max(last)                                                       AS last_seen
FROM
(
    SELECT l.resource_key AS resource_key, any(l.ResourceId) AS rid, toDate(l.ChargePeriodStart) AS day,
           any(l.ServiceName) AS service, any(l.RegionId) AS region, any(h.host) AS ev_host,
           multiIf(lower(any(l.ProviderName)) LIKE '%amazon%' OR lower(any(l.ProviderName)) LIKE 'aws%', 'aws',
                   lower(any(l.ProviderName)) LIKE '%microsoft%' OR lower(any(l.ProviderName)) LIKE '%azure%', 'azure',
                   lower(any(l.ProviderName)) LIKE '%google%' OR lower(any(l.ProviderName)) LIKE 'gcp%', 'gcp',
                   lower(any(l.ProviderName))) AS environment,
           sum(toFloat64(l.EffectiveCost)) AS day_cost, min(l.ChargePeriodStart) AS first, max(l.ChargePeriodEnd) AS last
    FROM billing_line_items AS l
    INNER JOIN
    (
        SELECT instance_key, any(host) AS host FROM gpu_hour
        WHERE hour >= {since:DateTime} AND hour < {until:DateTime} AND instance_key != '' GROUP BY instance_key
    ) AS h ON h.instance_key = l.resource_key
    WHERE l.ChargePeriodStart >= {since:DateTime} AND l.ChargePeriodStart < {until:DateTime}
      AND NOT arrayExists(k -> l.Tags[k] != '', {tag_keys:Array(String)})
    GROUP BY resource_key, day
)
GROUP BY resource_key, environment, region
HAVING cost_usd >= {min_usd:Float64}
