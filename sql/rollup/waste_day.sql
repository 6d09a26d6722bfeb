-- gpu_waste_day for the UTC days from {from:DateTime} through {day:Date}: gpu_waste_hour per day,
-- GPU entity and owner.
SELECT toDate(hour) AS day, host, gpu_uuid, mig_instance, environment, region, pool, model, team, user, job_id,
    k8s_namespace,
    sum(covered_s) / 3600                  AS gpu_hours,
    sum(cost_usd)                          AS cost_usd,
    sum(idle_allocated_usd)                AS idle_allocated_usd,
    sum(idle_unallocated_usd)              AS idle_unallocated_usd,
    sum(unused_usd)                        AS unused_usd,
    sum(no_data_usd)                       AS no_data_usd
FROM gpu_waste_hour
WHERE hour >= toDateTime({from:DateTime}, 'UTC') AND hour < toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY
GROUP BY day, host, gpu_uuid, mig_instance, environment, region, pool, model, team, user, job_id, k8s_namespace
