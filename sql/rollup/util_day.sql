-- gpu_util_day for the UTC days from {from:DateTime} through {day:Date}, from gpu_cost_hour: each GPU
-- entity's held GPU-hours per day, team and environment, and the utilized ones among them.
SELECT toDate(hour) AS day, team, environment, host, gpu_uuid, mig_instance,
       sum(gpu_hours) AS gpu_hours, sum(utilized_gpu_hours) AS utilized_gpu_hours
FROM gpu_cost_hour
WHERE held AND hour >= toDateTime({from:DateTime}, 'UTC') AND hour < toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY
GROUP BY day, team, environment, host, gpu_uuid, mig_instance
