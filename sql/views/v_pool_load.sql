-- v_pool_load reads the daily rollup (24x fewer rows than gpu_hour): one row per day and on-prem
-- pool, its models and regions listed (a pool of two models is one pool, judged as a whole);
-- utilization and allocation are taken over covered GPU-hours (MIG instances by slice share).
CREATE OR REPLACE VIEW v_pool_load AS
SELECT day, pool, region, model, gpus, hours AS gpu_hours, cost_usd,
       100 * utilized / nullIf(hours, 0) AS utilization_pct,
       100 * held_hours / nullIf(hours, 0) AS allocated_pct,
       multiIf(allocated_pct >= 85 AND utilization_pct >= 60, 'saturated',
               allocated_pct < 30 OR utilization_pct < 20, 'under-used', 'ok') AS status
FROM
(
    SELECT day, pool, arrayStringConcat(arraySort(groupUniqArray(region)), ', ') AS region,
           arrayStringConcat(arraySort(groupUniqArray(model)), ', ') AS model,
           uniqExact(host, gpu_uuid) AS gpus,
           sum(gpu_hours) AS hours, sum(utilized_gpu_hours) AS utilized, sum(cost_usd) AS cost_usd, sumIf(gpu_hours, held = 1) AS held_hours
    FROM gpu_cost_day
    WHERE environment = 'onprem'
    GROUP BY day, pool
);
