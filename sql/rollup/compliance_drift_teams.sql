-- Runtime drift across environments: a team (after attribution) whose workloads run a different
-- CUDA version (major.minor, the one it uses most in each environment, by GPU-days' versions) in
-- different environments; first and last seen are the days it ran there.
SELECT
    'runtime_drift'                                                 AS policy,
    concat('drift-team/', team)                                     AS finding_key,
    'info'                                                          AS severity,
    team, '' AS environment, '' AS provider, '' AS region, '' AS pool, '' AS host, '' AS gpu_uuid, '' AS resource_id,
    format('team {} runs CUDA {} across environments', team,
           arrayStringConcat(arrayMap(x -> concat(x.1, ' in ', x.2), groupArray((main_cuda, env))), ', ')) AS summary,
    toJSONString(groupArray(map('environment', env, 'cuda', main_cuda, 'gpu_hours', toString(round(hours, 1))))) AS evidence,
    0.                                                              AS cost_usd,
    min(first)                                                      AS first_seen,
    max(last)                                                       AS last_seen
FROM
(
    SELECT team, env, argMax(cuda, h) AS main_cuda, sum(h) AS hours, min(f) AS first, max(l) AS last
    FROM
    (
        -- gpu_cost_day: GPU-hours by attributed team, with each GPU-day's (latest) CUDA version
        SELECT team, environment AS env, extract(cuda_version, '^(\\d+\\.\\d+)') AS cuda, sum(gpu_hours) AS h,
               toDateTime(min(day), 'UTC') AS f, toDateTime(max(day) + 1, 'UTC') AS l
        FROM gpu_cost_day
        WHERE day >= toDate({since:DateTime}) AND day < toDate({until:DateTime}) AND held AND team != 'unallocated'
          AND cuda_version != ''
        GROUP BY team, env, cuda
    )
    GROUP BY team, env
)
GROUP BY team
HAVING uniqExact(main_cuda) > 1
