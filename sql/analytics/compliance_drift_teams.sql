-- Runtime drift across environments: a team whose workloads run different CUDA versions
-- (major.minor) in different environments.
SELECT
    'runtime_drift'                                                 AS policy,
    concat('drift-team/', team)                                     AS finding_key,
    'info'                                                          AS severity,
    team, '' AS environment, '' AS provider, '' AS region, '' AS pool, '' AS host, '' AS gpu_uuid, '' AS resource_id,
    format('team {} runs CUDA {} across environments', team,
           arrayStringConcat(arrayMap(x -> concat(x.1, ' in ', x.2), groupArray((cuda, environment))), ', ')) AS summary,
    toJSONString(groupArray(map('environment', environment, 'cuda', cuda, 'gpu_hours', toString(round(gpu_hours, 1))))) AS evidence,
    0.                                                              AS cost_usd,
    min(first)                                                      AS first_seen,
    max(last)                                                       AS last_seen
FROM
(
    SELECT team, environment, extract(cuda_version, '^(\\d+\\.\\d+)') AS cuda, sum(covered_s) / 3600 AS gpu_hours,
           min(hour) AS first, max(hour) + INTERVAL 1 HOUR AS last
    FROM gpu_hour
    WHERE hour >= {since:DateTime} AND hour < {until:DateTime} AND held AND team != '' AND cuda_version != ''
    GROUP BY team, environment, cuda
)
GROUP BY team
HAVING uniqExact(cuda) > 1
