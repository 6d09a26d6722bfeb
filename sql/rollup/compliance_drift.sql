-- Runtime drift within a pool: hosts whose driver or CUDA version differs from the pool's
-- baseline (config_pools.baseline_*, else the version most hosts of the pool run).
WITH
    -- each host's latest versions, and since when it has run them (its first hour on them)
    hosts AS
    (
        SELECT pool, environment, host, argMax(driver, l) AS driver, argMax(cuda, l) AS cuda,
               argMax(reg, l) AS region, argMax(f, l) AS first, max(l) AS last
        FROM
        (
            SELECT pool, environment, host, driver_version AS driver, cuda_version AS cuda, argMax(region, hour) AS reg,
                   min(hour) AS f, max(hour) + INTERVAL 1 HOUR AS l
            FROM gpu_hour
            WHERE hour >= {since:DateTime} AND hour < {until:DateTime} AND driver_version != ''
            GROUP BY pool, environment, host, driver, cuda
        )
        GROUP BY pool, environment, host
    ),
    baseline AS
    (
        SELECT h.pool AS pool,
               if(any(p.baseline_driver) != '', any(p.baseline_driver), argMax(d.driver, d.n)) AS base_driver,
               if(any(p.baseline_cuda) != '', any(p.baseline_cuda), argMax(c.cuda, c.n)) AS base_cuda
        FROM (SELECT DISTINCT pool FROM hosts) AS h
        LEFT JOIN config_pools AS p ON p.pool = h.pool
        LEFT JOIN (SELECT pool, driver, count() AS n FROM hosts GROUP BY pool, driver) AS d ON d.pool = h.pool
        LEFT JOIN (SELECT pool, cuda, count() AS n FROM hosts GROUP BY pool, cuda) AS c ON c.pool = h.pool
        GROUP BY h.pool
    )
SELECT
    'runtime_drift'                                                 AS policy,
    concat('drift/', h.pool, '/', h.host)                           AS finding_key,
    'warning'                                                       AS severity,
    '' AS team, h.environment AS environment, h.environment AS provider, h.region AS region, h.pool AS pool, h.host AS host,
    '' AS gpu_uuid, '' AS resource_id,
    format('host {} in pool {} runs driver {} / CUDA {}; the pool baseline is driver {} / CUDA {}',
           h.host, h.pool, h.driver, h.cuda, b.base_driver, b.base_cuda) AS summary,
    toJSONString([map('host', h.host, 'driver', h.driver, 'cuda', h.cuda, 'baseline_driver', b.base_driver,
                      'baseline_cuda', b.base_cuda, 'first', toString(h.first), 'last', toString(h.last))]) AS evidence,
    0.                                                              AS cost_usd,
    h.first                                                         AS first_seen,
    h.last                                                          AS last_seen
FROM hosts AS h
INNER JOIN baseline AS b ON b.pool = h.pool
WHERE h.driver != b.base_driver OR h.cuda != b.base_cuda
