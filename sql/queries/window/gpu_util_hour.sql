-- gpu_util_day's rows for a window that is not whole UTC days (Last 24 hours), summed from
-- gpu_cost_hour over exactly [start, end): what a page's GPU_UTIL placeholder reads then.
SELECT toDate(hour) AS day, team, environment, host, gpu_uuid, mig_instance,
       sum(gpu_hours) AS gpu_hours, sum(utilized_gpu_hours) AS utilized_gpu_hours
FROM gpu_cost_hour
WHERE held AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
GROUP BY day, team, environment, host, gpu_uuid, mig_instance
