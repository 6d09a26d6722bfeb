-- Fleet utilization per day, environment and pool, from the daily GPU-hours (gpu_cost_day): a
-- GPU is a physical GPU, and its MIG instances count by their part of it (entity_share.sql), so
-- a partitioned GPU is 24 GPU-hours a day and its energy is counted once, as in v_pool_load and
-- the costs. Utilization is time-weighted over covered GPU-hours (no-data time excluded; time
-- covered without a utilization reading, such as the NVML agent's whole-GPU row of a MIG GPU
-- holding the slices no instance holds, counts as unutilized). Memory activity is the
-- time-weighted mean of the samples that read it (gpu_hour).
CREATE OR REPLACE VIEW v_fleet_utilization AS
SELECT c.day AS day, c.environment AS environment, c.region AS region, c.pool AS pool, c.model AS model,
       c.gpus AS gpus, c.hours AS gpu_hours, c.held_hours AS held_gpu_hours,
       100 * c.utilized / nullIf(c.hours, 0)                        AS utilization_pct,
       m.memory_activity_pct                                        AS memory_activity_pct,
       100 * c.held_hours / nullIf(c.hours, 0)                      AS allocated_pct,
       c.energy_kwh AS energy_kwh
FROM
(
    SELECT day, environment, region, pool, model, uniqExact(host, gpu_uuid) AS gpus,
           sum(gpu_hours) AS hours, sumIf(gpu_hours, held = 1) AS held_hours,
           sum(utilized_gpu_hours) AS utilized, sum(energy_kwh) AS energy_kwh
    FROM gpu_cost_day
    GROUP BY day, environment, region, pool, model
) AS c
LEFT JOIN
(
    SELECT toDate(hour) AS day, environment, region, pool, model,
           sum(util_mem_s) / nullIf(sum(util_mem_covered_s), 0) AS memory_activity_pct
    FROM gpu_hour
    GROUP BY day, environment, region, pool, model
) AS m ON m.day = c.day AND m.environment = c.environment AND m.region = c.region AND m.pool = c.pool AND m.model = c.model;
