-- Unit cost: what a *utilized* GPU-hour costs, per month, environment, pool and model.
CREATE OR REPLACE VIEW v_unit_cost AS
SELECT toStartOfMonth(hour) AS month, environment, pool, model,
       sum(cost_usd) AS cost_usd, sum(gpu_hours) AS gpu_hours, sum(utilized_gpu_hours) AS utilized_gpu_hours,
       cost_usd / nullIf(gpu_hours, 0) AS usd_per_gpu_hour,
       cost_usd / nullIf(utilized_gpu_hours, 0) AS usd_per_utilized_gpu_hour
FROM gpu_cost_hour
GROUP BY month, environment, pool, model;
