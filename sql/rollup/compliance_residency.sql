-- Residency: GPU-hours a team ran where its policy does not allow. __ALLOWED__ is replaced by
-- one condition per policy, "team = {t} AND NOT (allowed locations)", with parameters.
SELECT
    'residency'                                                     AS policy,
    concat('residency/', team, '/', environment, '/', region)       AS finding_key,
    'critical'                                                      AS severity,
    team, environment, environment AS provider, region,
    any(ev_pool) AS pool, any(ev_host) AS host, '' AS gpu_uuid, '' AS resource_id,
    format('team {} ran {} GPU-hours in {} {}, where its residency policy does not allow it',
           team, toString(round(sum(hours), 1)), environment, if(region = '', '(no region)', region)) AS summary,
    toJSONString(groupArray(50)(map('host', ev_host, 'gpu_uuid', ev_gpu, 'first', toString(first), 'last', toString(last),
                                    'gpu_hours', toString(round(hours, 2))))) AS evidence,
    sum(cost)                                                       AS cost_usd,
    min(first)                                                      AS first_seen,
    max(last)                                                       AS last_seen
FROM
(
    SELECT team, environment, region, pool AS ev_pool, host AS ev_host, gpu_uuid AS ev_gpu,
           min(hour) AS first, max(hour) + INTERVAL 1 HOUR AS last, sum(gpu_hours) AS hours, sum(cost_usd) AS cost
    FROM gpu_cost_hour
    WHERE hour >= {since:DateTime} AND hour < {until:DateTime} AND held AND gpu_hours > 0 AND (__ALLOWED__)
    GROUP BY team, environment, region, ev_pool, ev_host, ev_gpu
)
GROUP BY team, environment, region
