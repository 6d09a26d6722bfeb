-- gpu_cost_day for the UTC days from {from:DateTime} through {day:Date}, from gpu_cost_hour (and each
-- day's versions from gpu_hour).
SELECT
    toDate(c.hour) AS day, c.host AS host, c.gpu_uuid AS gpu_uuid, c.mig_instance AS mig_instance,
    c.environment AS environment, c.region AS region, c.pool AS pool, c.instance_id AS instance_id,
    c.instance_type AS instance_type, c.model AS model, v.driver AS driver_version, v.cuda AS cuda_version,
    c.team AS team, c.held AS held,
    sum(c.gpu_hours) AS gpu_hours, sum(c.utilized_gpu_hours) AS utilized_gpu_hours, sum(c.energy_kwh) AS energy_kwh,
    sum(c.cloud_gpu_usd) AS cloud_gpu_usd, sum(c.onprem_capital_usd) AS onprem_capital_usd,
    sum(c.onprem_operations_usd) AS onprem_operations_usd, sum(c.onprem_energy_usd) AS onprem_energy_usd,
    sum(c.cost_usd) AS cost_usd, max(c.estimated) AS estimated
FROM gpu_cost_hour AS c
LEFT JOIN
(
    SELECT toDate(hour) AS day, host, gpu_uuid, mig_instance, argMax(driver_version, hour) AS driver,
        argMax(cuda_version, hour) AS cuda
    FROM gpu_hour
    WHERE hour >= toDateTime({from:DateTime}, 'UTC') AND hour < toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY
    GROUP BY day, host, gpu_uuid, mig_instance
) AS v ON v.day = toDate(c.hour) AND v.host = c.host AND v.gpu_uuid = c.gpu_uuid AND v.mig_instance = c.mig_instance
WHERE c.hour >= toDateTime({from:DateTime}, 'UTC') AND c.hour < toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY
GROUP BY day, host, gpu_uuid, mig_instance, environment, region, pool, instance_id, instance_type, model,
         driver_version, cuda_version, team, held
