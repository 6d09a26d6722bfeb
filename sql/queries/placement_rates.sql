-- Placement: what a GPU-hour and a *utilized* GPU-hour cost in each environment over the range
-- (all GPU time, idle included: idle time is what makes a utilized hour dear). Reads gpu_cost_day.
SELECT environment,
       sum(cost_usd)                                        AS cost_usd,
       sum(gpu_hours)                                       AS gpu_hours,
       sum(utilized_gpu_hours)                              AS utilized_gpu_hours,
       100 * utilized_gpu_hours / nullIf(gpu_hours, 0)      AS utilization_pct,
       cost_usd / nullIf(gpu_hours, 0)                      AS usd_per_gpu_hour,
       cost_usd / nullIf(utilized_gpu_hours, 0)             AS usd_per_utilized_gpu_hour
FROM (__GPU_COST__)
GROUP BY environment
ORDER BY environment = 'onprem' DESC, environment
