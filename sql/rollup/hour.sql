-- gpu_hour for one UTC day {day:Date} from {from:DateTime}, from gpu_minute: sums stay sums, so
-- averages stay exact.
SELECT
    toStartOfHour(minute)                  AS hour,
    host, gpu_uuid, mig_instance,
    argMax(mig_profile, minute)            AS mig_profile,
    argMax(environment, minute)            AS environment,
    argMax(region, minute)                 AS region,
    argMax(cluster, minute)                AS cluster,
    argMax(pool, minute)                   AS pool,
    argMax(instance_id, minute)            AS instance_id,
    argMax(instance_key, minute)           AS instance_key,
    argMax(instance_type, minute)          AS instance_type,
    argMax(model, minute)                  AS model,
    argMax(driver_version, minute)         AS driver_version,
    argMax(cuda_version, minute)           AS cuda_version,
    argMax(image, minute)                  AS image,
    team, user, job_id, k8s_namespace, k8s_pod, slurm_account, held,
    sum(samples)                           AS samples,
    sum(covered_s)                         AS covered_s,
    sum(util_covered_s)                    AS util_covered_s,
    sum(util_gpu_s)                        AS util_gpu_s,
    sum(util_mem_covered_s)                AS util_mem_covered_s,
    sum(util_mem_s)                        AS util_mem_s,
    sum(mem_covered_s)                     AS mem_covered_s,
    sum(mem_used_s)                        AS mem_used_s,
    max(mem_total_bytes)                   AS mem_total_bytes,
    sum(power_covered_s)                   AS power_covered_s,
    sum(energy_j)                          AS energy_j,
    max(temperature_max)                   AS temperature_max,
    sum(xid_count)                         AS xid_count,
    argMaxIf(xid_last, minute, xid_last IS NOT NULL) AS xid_last,
    max(ecc_uncorrected_max)               AS ecc_uncorrected_max,
    max(ecc_corrected_max)                 AS ecc_corrected_max,
    groupBitOr(throttle_reasons)           AS throttle_reasons
FROM gpu_minute
WHERE minute >= toDateTime({from:DateTime}, 'UTC') AND minute < toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY
GROUP BY hour, host, gpu_uuid, mig_instance, team, user, job_id, k8s_namespace, k8s_pod, slurm_account, held
