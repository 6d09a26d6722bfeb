-- Placement recommendations over the range, biggest savings first. Four kinds of candidate row:
--
--  * move baseline on-prem: a team's steady cloud demand (the {baseline_q} quantile of its hourly
--    cloud GPUs, shared across its clouds by GPU-hours) moved to on-prem;
--    savings = its utilized GPU-hours × (that cloud's rate − the on-prem rate);
--  * burst to cloud: an on-prem pool saturated on some days (v_pool_load); the held load above
--    {saturated_pct} % of the pool goes to the cheapest cloud ({cheapest}); savings = utilized GPU-hours ×
--    (on-prem rate − cloud rate), usually negative: the price of the capacity;
--  * consolidate pool: an under-used on-prem pool; the capacity its held load does not need at
--    {saturated_pct} % allocation can be freed; savings = that share of the pool's cost. Not for a
--    pool that teams waited for (below): waiting says its capacity is needed;
--  * burst queued demand: a team whose jobs waited for an on-prem pool [analytics]
--    queue_burst_wait_hours or more at p95 (the rows of queue_pressure.sql that do, passed in as
--    {queue_pools} / {queue_teams} / {queue_wait_p95_h} / {queue_gpu_hours}); the GPU-hours they waited for, run in the cheapest cloud ({cheapest}) at its
--    cost of a GPU-hour {cloud_usd_per_gpu_hour}; savings = minus that cost (nothing on-prem is
--    freed: the price of not waiting). Such a team gets no "move baseline on-prem" row.
--
-- `why` says each row in one sentence with its numbers. dashboard/queries.py adds the "right-size"
-- rows (placement_rightsize()) and keeps one kind per team and per pool (throughput.one_outcome):
-- these rows are the candidates.
-- Computed once for the whole page and passed in: the rates, USD per utilized GPU-hour per
-- environment ({rate_envs} / {rate_values}: placement_rates() over the same range); the on-prem
-- pools with GPU time in the range ({onprem_pools}: placement_usage.sql); the number of hours with
-- data in the range ({hours}: hours.sql); each team's held cloud GPU time and its baseline (below).
-- The on-prem pools' load and daily cost come from v_pool_load.
WITH
    cloud AS
    (
        -- each team's held cloud GPU time per cloud ({cloud_teams} / {cloud_envs} / {cloud_gpu_hours} /
        -- {cloud_utilized}: placement_usage.sql over the same range); baseline_gpus is the
        -- {baseline_q} quantile of the team's hourly cloud GPUs (cloud_baseline_gpus of
        -- placement_demand.sql over the same range, passed in as {baseline_teams} / {baseline_gpus})
        SELECT c.1 AS team,
               sumMap(map(c.2, c.3))                                 AS env_gpu_hours,
               sumMap(map(c.2, c.4))                                 AS env_utilized,
               arraySum(mapValues(env_gpu_hours))                    AS cloud_gpu_hours,
               mapFromArrays({baseline_teams:Array(String)}, {baseline_gpus:Array(Float64)})[team] AS baseline_gpus
        FROM (SELECT arrayJoin(arrayZip({cloud_teams:Array(String)}, {cloud_envs:Array(String)},
                                        {cloud_gpu_hours:Array(Float64)}, {cloud_utilized:Array(Float64)})) AS c)
        GROUP BY team
    )
SELECT kind, team, pool, from_environment, to_environment, days, gpus, gpu_hours, utilized_gpu_hours,
       from_usd_per_utilized_gpu_hour, to_usd_per_utilized_gpu_hour, savings_usd,
       multiIf(kind = 'move baseline on-prem',
               format('{} holds {} GPUs on {} steadily at ${} per utilized GPU-hour; on-prem costs ${}: moving that baseline on-prem saves ${}',
                      team, toString(round(gpus, 1)), from_environment, toDecimalString(from_usd_per_utilized_gpu_hour, 2),
                      toDecimalString(to_usd_per_utilized_gpu_hour, 2), toDecimalString(savings_usd, 2)),
               kind = 'burst to cloud',
               format('{} was over {}% allocated on {} day(s); its load above that ({} GPU-hours) would cost ${} per utilized GPU-hour on {} against ${} on-prem: {} ${}',
                      pool, toString({saturated_pct:Float64}), toString(days), toString(round(gpu_hours, 1)),
                      toDecimalString(to_usd_per_utilized_gpu_hour, 2), to_environment,
                      toDecimalString(from_usd_per_utilized_gpu_hour, 2), if(savings_usd < 0, 'bursting costs', 'bursting saves'),
                      toDecimalString(abs(savings_usd), 2)),
               kind = 'consolidate pool',
               format('{} was under-used on {} day(s): freeing the {} GPUs its held load does not need saves ${}',
                      pool, toString(days), toString(round(gpus, 1)), toDecimalString(savings_usd, 2)),
               format('{} waited p95 {} h for {} while its {} pending GPUs would cost ${}/h on {}: burst',
                      team, toString(round(queue_wait_h, 1)), pool, toString(round(gpus, 1)),
                      toDecimalString(gpus * {cloud_usd_per_gpu_hour:Float64}, 2), to_environment)) AS why
FROM
(
    SELECT 'move baseline on-prem' AS kind, team, '' AS pool, environment AS from_environment,
           'onprem' AS to_environment, toUInt32(0) AS days,
           baseline_gpus * env_gpu_hours[environment] / cloud_gpu_hours AS gpus,
           gpus * greatest({hours:UInt64}, 1) AS gpu_hours,
           gpu_hours * env_utilized[environment] / env_gpu_hours[environment] AS utilized_gpu_hours,
           mapFromArrays({rate_envs:Array(String)}, {rate_values:Array(Float64)})[environment] AS from_usd_per_utilized_gpu_hour,
           mapFromArrays({rate_envs:Array(String)}, {rate_values:Array(Float64)})['onprem'] AS to_usd_per_utilized_gpu_hour,
           utilized_gpu_hours * (from_usd_per_utilized_gpu_hour - to_usd_per_utilized_gpu_hour) AS savings_usd,
           0. AS queue_wait_h
    FROM cloud
    ARRAY JOIN mapKeys(env_gpu_hours) AS environment
    WHERE baseline_gpus > 0 AND env_gpu_hours[environment] > 0 AND NOT has({queue_teams:Array(String)}, team)
      AND has({rate_envs:Array(String)}, 'onprem') AND has({rate_envs:Array(String)}, environment)
      AND from_usd_per_utilized_gpu_hour > to_usd_per_utilized_gpu_hour

    UNION ALL

    -- on-prem pools off their 'ok' status: saturated days give burst rows, under-used days consolidation rows
    SELECT if(status = 'saturated', 'burst to cloud', 'consolidate pool'), '', pool, 'onprem',
           if(status = 'saturated', {cheapest:String}, 'onprem'), toUInt32(count()),
           sum(excess_gpu_hours) / (24 * count()), sum(excess_gpu_hours), sum(excess_utilized),
           any(onprem_rate), if(status = 'saturated', any(cloud_rate), any(onprem_rate)),
           if(status = 'saturated', sum(excess_utilized) * (any(onprem_rate) - any(cloud_rate)), sum(freeable_usd)), 0.
    FROM
    (
        SELECT l.pool AS pool, l.status AS status,
               if(status = 'saturated', l.gpu_hours * (l.allocated_pct - {saturated_pct:Float64}) / 100,
                  l.gpu_hours * greatest(1 - l.allocated_pct / {saturated_pct:Float64}, 0)) AS excess_gpu_hours,
               if(status = 'saturated', excess_gpu_hours * l.utilization_pct / 100, 0) AS excess_utilized,
               l.pool_cost_usd * greatest(1 - l.allocated_pct / {saturated_pct:Float64}, 0) AS freeable_usd,
               mapFromArrays({rate_envs:Array(String)}, {rate_values:Array(Float64)})['onprem'] AS onprem_rate,
               mapFromArrays({rate_envs:Array(String)}, {rate_values:Array(Float64)})[{cheapest:String}] AS cloud_rate
        FROM
        (
            SELECT pool, day, status, gpu_hours, allocated_pct, utilization_pct,
                   sum(cost_usd) OVER (PARTITION BY pool, day) AS pool_cost_usd    -- the whole pool's day
            FROM v_pool_load
            WHERE day >= {start_day:Date} AND day < {end_day:Date}
        ) AS l
        WHERE has({rate_envs:Array(String)}, 'onprem')
          AND ((l.status = 'saturated' AND l.allocated_pct > {saturated_pct:Float64} AND {cheapest:String} != '')
               OR (l.status = 'under-used' AND NOT has({queue_pools:Array(String)}, l.pool)))
    )
    GROUP BY pool, status

    UNION ALL

    -- teams that waited for an on-prem pool: what bursting their pending GPU-hours would cost
    SELECT 'burst queued demand', q.2, q.1, 'onprem', {cheapest:String}, toUInt32(0),
           q.5, q.4, q.4,
           mapFromArrays({rate_envs:Array(String)}, {rate_values:Array(Float64)})['onprem'],
           mapFromArrays({rate_envs:Array(String)}, {rate_values:Array(Float64)})[{cheapest:String}],
           -q.4 * {cloud_usd_per_gpu_hour:Float64}, q.3
    FROM (SELECT arrayJoin(arrayZip({queue_pools:Array(String)}, {queue_teams:Array(String)},
                                    {queue_wait_p95_h:Array(Float64)}, {queue_gpu_hours:Array(Float64)},
                                    {queue_pending_gpus:Array(Float64)})) AS q)
    WHERE {cheapest:String} != '' AND q.1 != '' AND has({onprem_pools:Array(String)}, q.1)    -- on-prem pools only
)
ORDER BY savings_usd DESC, kind, team, pool
