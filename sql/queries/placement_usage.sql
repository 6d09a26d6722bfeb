-- Placement: the range's GPU time and cost in one pass, per environment, pool, model, team, held
-- and whole GPU (whole: not a MIG slice), which dashboard/queries.py sums into the page's tables:
--
--   placement_rates()      per environment: what a GPU-hour and a *utilized* GPU-hour cost (all GPU
--                          time, idle included: idle time is what makes a utilized hour dear);
--   placement_models()     per environment and model, also per A100-equivalent utilized GPU-hour
--                          (utilized GPU-hours × the model's throughput factor, dashboard/throughput.py);
--   placement_rightsize()  the whole GPUs each team held, per environment, pool and model;
--   onprem_pools()         the on-prem pools (placement.sql's queued-demand rows are for those only).
--
-- MIG slices count by their share. Reads gpu_cost_day (gpu_cost_hour for a window of hours).
SELECT environment, pool, model, team, held, mig_instance = '' AS whole,
       sum(cost_usd)           AS cost_usd,
       sum(gpu_hours)          AS gpu_hours,
       sum(utilized_gpu_hours) AS utilized_gpu_hours
FROM (__GPU_COST__)
GROUP BY environment, pool, model, team, held, whole
