-- Idle & waste: cost wasted idle per team and pool, allocated vs unallocated, inside the range: the
-- idle parts of the waste rollup (the same figures as "Waste per team"; a window that crosses the
-- range's edge counts only its part inside), with the idle windows that overlap the range and their
-- hours inside it.
SELECT team, pool, environment, kind, sum(windows) AS windows, sum(hours) AS idle_gpu_hours, sum(usd) AS cost_usd
FROM
(
    SELECT if(team = '', 'unallocated', toString(team)) AS team, toString(pool) AS pool,
           toString(environment) AS environment, kind, 0 AS windows, 0. AS hours,
           if(kind = 'allocated', idle_allocated_usd, idle_unallocated_usd) AS usd
    FROM (__GPU_WASTE__)
    ARRAY JOIN ['allocated', 'unallocated'] AS kind
    WHERE (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, if(team = '', 'unallocated', team)))
      AND ({gpu:String} = '' OR (gpu_uuid = {gpu:String} AND ({mig:String} = '' OR mig_instance = {mig:String})))
    UNION ALL
    SELECT toString(team), toString(pool), toString(environment), toString(kind), 1,
           greatest(dateDiff('millisecond', greatest(start, {start:DateTime('UTC')}), least(end, {end:DateTime('UTC')})), 0) / 3.6e6,
           0.
    FROM v_idle_waste
    WHERE start < {end:DateTime('UTC')} AND end > {start:DateTime('UTC')}
      AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
      AND ({gpu:String} = '' OR (gpu_uuid = {gpu:String} AND ({mig:String} = '' OR mig_instance = {mig:String})))
)
GROUP BY team, pool, environment, kind
HAVING cost_usd != 0 OR windows > 0
ORDER BY cost_usd DESC, team, pool, kind
