-- Fleet utilization per day, environment and pool (time-weighted; no-data time excluded).
CREATE OR REPLACE VIEW v_fleet_utilization AS
SELECT
    toDate(hour)                                                   AS day,
    environment, region, pool, model,
    uniqExact(host, gpu_uuid, mig_instance)                        AS gpus,
    sum(covered_s) / 3600                                          AS gpu_hours,
    sumIf(covered_s, held) / 3600                                  AS held_gpu_hours,
    sum(util_gpu_s) / nullIf(sum(util_covered_s), 0)               AS utilization_pct,
    sum(util_mem_s) / nullIf(sum(util_mem_covered_s), 0)           AS memory_activity_pct,
    100 * sumIf(covered_s, held) / nullIf(sum(covered_s), 0)       AS allocated_pct,
    sum(energy_j) / 3.6e6                                          AS energy_kwh
FROM gpu_hour
GROUP BY day, environment, region, pool, model;
