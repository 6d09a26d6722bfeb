-- Placement, like for like: what a utilized GPU-hour of each model costs in each environment over
-- the range, and the same per *A100-equivalent* utilized GPU-hour: utilized GPU-hours × the model's
-- throughput factor (dashboard/throughput.py; [analytics.throughput]) passed in as {tp_models} /
-- {tp_factors}. A model without a factor is not normalised: factor and the A100-equivalent rate
-- are NULL, never 1. All GPU time counts (idle included), MIG slices by their share. Reads gpu_cost_day.
SELECT environment, model,
       sum(cost_usd)                                                   AS cost_usd,
       sum(gpu_hours)                                                  AS gpu_hours,
       sum(utilized_gpu_hours)                                         AS utilized_gpu_hours,
       100 * utilized_gpu_hours / nullIf(gpu_hours, 0)                 AS utilization_pct,
       cost_usd / nullIf(gpu_hours, 0)                                 AS usd_per_gpu_hour,
       cost_usd / nullIf(utilized_gpu_hours, 0)                        AS usd_per_utilized_gpu_hour,
       has({tp_models:Array(String)}, model)                           AS normalised,
       if(normalised, mapFromArrays({tp_models:Array(String)}, {tp_factors:Array(Float64)})[model], NULL) AS throughput,
       utilized_gpu_hours * throughput                                 AS a100e_utilized_gpu_hours,
       cost_usd / nullIf(a100e_utilized_gpu_hours, 0)                  AS usd_per_a100e_utilized_gpu_hour
FROM (__GPU_COST__)
GROUP BY environment, model
ORDER BY normalised DESC, usd_per_a100e_utilized_gpu_hour, environment = 'onprem' DESC, environment, model
