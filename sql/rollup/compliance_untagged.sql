-- Untagged or unattributed GPU spend (DESIGN.md): cloud GPU instances whose billing lines carry
-- none of the team tag keys {tag_keys:Array(String)}, or whose GPU-hours no attribution rule gave
-- to a team (tags that no rule reads: the part of the day's lines gpu_cost_day left
-- 'unallocated'), with their cost; evidence is the instance's lines per day.
SELECT
    'untagged_spend'                                                AS policy,
    concat('untagged/', resource_key)                               AS finding_key,
    'warning'                                                       AS severity,
    '' AS team, environment, environment AS provider, region, '' AS pool, any(ev_host) AS host, '' AS gpu_uuid,
    any(rid)                                                        AS resource_id,
    if(max(untagged),
       format('{} GPU instance {} ({}) has {} USD of spend without any of the tags {}',
              environment, any(rid), region, toString(round(sum(day_cost), 2)), arrayStringConcat({tag_keys:Array(String)}, ', ')),
       format('{} GPU instance {} ({}) has {} USD of spend that no attribution rule gives to a team',
              environment, any(rid), region, toString(round(sum(day_cost), 2)))) AS summary,
    toJSONString(groupArray(60)(map('day', toString(day), 'cost', toString(round(day_cost, 4)), 'service', service,
                                    'why', if(untagged, 'untagged', 'unattributed')))) AS evidence,
    sum(day_cost)                                                   AS cost_usd,
    min(first)                                                      AS first_seen,
    max(last)                                                       AS last_seen
FROM
(
    SELECT resource_key, rid, d.day AS day, service, region, ev_host, environment, first, last, untagged,
           untagged_cost + tagged_cost * unallocated_share AS day_cost
    FROM
    (
        SELECT l.resource_key AS resource_key, any(l.ResourceId) AS rid, toDate(l.ChargePeriodStart) AS day,
               any(l.ServiceName) AS service, any(l.RegionId) AS region, any(h.host) AS ev_host, any(h.instance_id) AS iid,
               multiIf(lower(any(l.ProviderName)) LIKE '%amazon%' OR lower(any(l.ProviderName)) LIKE 'aws%', 'aws',
                       lower(any(l.ProviderName)) LIKE '%microsoft%' OR lower(any(l.ProviderName)) LIKE '%azure%', 'azure',
                       lower(any(l.ProviderName)) LIKE '%google%' OR lower(any(l.ProviderName)) LIKE 'gcp%', 'gcp',
                       lower(any(l.ProviderName))) AS environment,
               sumIf(toFloat64(l.EffectiveCost), NOT arrayExists(k -> l.Tags[k] != '', {tag_keys:Array(String)}) AS no_tags) AS untagged_cost,
               sumIf(toFloat64(l.EffectiveCost), NOT no_tags) AS tagged_cost,
               countIf(no_tags) > 0 AS untagged, min(l.ChargePeriodStart) AS first, max(l.ChargePeriodEnd) AS last
        FROM billing_line_items AS l
        INNER JOIN
        (
            SELECT instance_key, any(host) AS host, any(instance_id) AS instance_id FROM gpu_hour
            WHERE hour >= {since:DateTime} AND hour < {until:DateTime} AND instance_key != '' GROUP BY instance_key
        ) AS h ON h.instance_key = l.resource_key
        WHERE l.ChargePeriodStart >= {since:DateTime} AND l.ChargePeriodStart < {until:DateTime}
        GROUP BY resource_key, day
    ) AS d
    LEFT JOIN
    (
        SELECT instance_id, day, sumIf(gpu_hours, team = 'unallocated') / sum(gpu_hours) AS unallocated_share
        FROM gpu_cost_day
        WHERE day >= toDate({since:DateTime}) AND day < toDate({until:DateTime}) AND environment != 'onprem'
          AND instance_id != '' AND gpu_hours > 0
        GROUP BY instance_id, day
    ) AS c ON c.instance_id = d.iid AND c.day = d.day
    WHERE untagged OR (tagged_cost != 0 AND unallocated_share > 0)
)
GROUP BY resource_key, environment, region
HAVING cost_usd >= {min_usd:Float64}
