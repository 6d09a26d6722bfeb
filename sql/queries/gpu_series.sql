-- The GPU page: one GPU entity's telemetry over [start, end) in buckets of {bucket_s} seconds
-- (counted from start), from gpu_minute when {hourly} = 0 (ranges of a couple of days) or
-- gpu_hour when {hourly} = 1. Time-weighted like every utilization (sql/migrations/004): an
-- average is sum(x_s) / sum(x_covered_s) and is NULL where the bucket has no covered time for it
-- (no data, never zero); buckets without a row are not returned (the page draws them as gaps).
-- ECC: the highest volatile counter in the bucket; throttle: the OR of NVML clocks-event reasons.
-- The owner (team, user, job, namespace/pod as labelled on the samples, before attribution rules)
-- is that of the bucket's row with the most covered time (rows are per minute or hour and owner);
-- the runtime (MIG profile, driver, CUDA, image) the last one seen in the bucket.
SELECT toDateTime({start:DateTime('UTC')}, 'UTC')
           + toIntervalSecond(intDiv(toUInt32(t0) - toUInt32(toDateTime({start:DateTime('UTC')}, 'UTC')),
                                     {bucket_s:UInt32}) * {bucket_s:UInt32}) AS t,
       sum(covered_s)                                                   AS covered_total_s,
       sum(util_gpu_s) / nullIf(sum(util_covered_s), 0)                 AS util_gpu_pct,
       sum(util_mem_s) / nullIf(sum(util_mem_covered_s), 0)             AS util_mem_pct,
       sum(mem_used_s) / nullIf(sum(mem_covered_s), 0) / pow(2, 30)     AS mem_used_gib,
       nullIf(max(mem_total_bytes), 0) / pow(2, 30)                     AS mem_total_gib,
       sum(energy_j) / nullIf(sum(power_covered_s), 0)                  AS power_w,
       if(sum(power_covered_s) > 0, sum(energy_j) / 3600000, NULL)      AS energy_kwh,
       max(temperature_max)                                             AS temperature_c,
       sum(xid_count)                                                   AS xid_count,
       argMaxIf(xid_last, t0, xid_last IS NOT NULL)                     AS xid_last,
       max(ecc_corrected_max)                                           AS ecc_corrected,
       max(ecc_uncorrected_max)                                         AS ecc_uncorrected,
       groupBitOr(throttle_reasons)                                     AS throttle_reasons,
       argMaxIf((team, user, job_id, k8s_namespace, k8s_pod, held), covered_s, covered_s > 0) AS owner,
       owner.1 AS owner_team, owner.2 AS owner_user, owner.3 AS owner_job, owner.4 AS owner_namespace,
       owner.5 AS owner_pod, owner.6 AS owner_held,
       argMaxIf(mig_profile, t0, mig_profile != '')                     AS last_mig_profile,
       argMaxIf(driver_version, t0, driver_version != '')               AS last_driver,
       argMaxIf(cuda_version, t0, cuda_version != '')                   AS last_cuda,
       argMaxIf(image, t0, image != '')                                 AS last_image
FROM
(
    SELECT minute AS t0, covered_s, util_covered_s, util_gpu_s, util_mem_covered_s, util_mem_s, mem_covered_s,
           mem_used_s, mem_total_bytes, power_covered_s, energy_j, temperature_max, xid_count, xid_last,
           ecc_corrected_max, ecc_uncorrected_max, throttle_reasons, team, user, job_id, k8s_namespace, k8s_pod, held,
           mig_profile, driver_version, cuda_version, image
    FROM gpu_minute
    WHERE {hourly:UInt8} = 0 AND host = {host:String} AND gpu_uuid = {gpu_uuid:String}
      AND mig_instance = {mig_instance:String} AND minute >= {start:DateTime('UTC')} AND minute < {end:DateTime('UTC')}
    UNION ALL
    SELECT hour AS t0, covered_s, util_covered_s, util_gpu_s, util_mem_covered_s, util_mem_s, mem_covered_s,
           mem_used_s, mem_total_bytes, power_covered_s, energy_j, temperature_max, xid_count, xid_last,
           ecc_corrected_max, ecc_uncorrected_max, throttle_reasons, team, user, job_id, k8s_namespace, k8s_pod, held,
           mig_profile, driver_version, cuda_version, image
    FROM gpu_hour
    WHERE {hourly:UInt8} = 1 AND host = {host:String} AND gpu_uuid = {gpu_uuid:String}
      AND mig_instance = {mig_instance:String} AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
)
GROUP BY t
ORDER BY t
