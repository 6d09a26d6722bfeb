-- gpu_minute for one UTC day {day:Date}, from {from:DateTime} (the day's start, or the first hour
-- whose samples changed) to the day's end: one row per GPU entity and minute.
-- A sample holds until the next sample of the same GPU entity when that comes within
-- {max_gap_s} seconds; the last sample before a longer gap holds for the interval that preceded
-- it (so "no data" starts where the samples stop), and a lone sample for {default_interval_s}.
-- Each held interval is split exactly across the minutes it overlaps.
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1
SELECT
    toDateTime(toUInt32(m * 60), 'UTC')                           AS minute,
    host, gpu_uuid, mig_instance,
    argMax(mig_profile, t)                                        AS mig_profile,
    argMax(environment, t)                                        AS environment,
    argMax(region, t)                                             AS region,
    argMax(cluster, t)                                            AS cluster,
    argMax(pool, t)                                               AS pool,
    argMax(instance_id, t)                                        AS instance_id,
    multiIf(startsWith(lower(trimBoth(instance_id)), '/subscriptions/'), trim(TRAILING '/' FROM lower(trimBoth(instance_id))),
            match(trimBoth(instance_id), '^arn:[^:]+:ec2:[^:]*:[^:]*:instance/[^/]+$'), extract(trimBoth(instance_id), 'instance/([^/]+)$'),
            match(trimBoth(instance_id), '/instances/[^/]+$'), extract(trimBoth(instance_id), '/instances/([^/]+)$'),
            trimBoth(instance_id)) AS instance_key,
    argMax(instance_type, t)                                      AS instance_type,
    argMax(model, t)                                              AS model,
    argMax(driver_version, t)                                     AS driver_version,
    argMax(cuda_version, t)                                       AS cuda_version,
    argMax(image, t)                                              AS image,
    -- the owner is the one that held the GPU for most of the minute (minute resolution)
    argMax(sample_owner, overlap) AS owner,
    tupleElement(owner, 1) AS team, tupleElement(owner, 2) AS user, tupleElement(owner, 3) AS job_id,
    tupleElement(owner, 4) AS k8s_namespace, tupleElement(owner, 5) AS k8s_pod,
    tupleElement(owner, 6) AS slurm_account, tupleElement(owner, 7) AS held,
    toUInt32(countIf(floor(t / 60) = m))                          AS samples,
    sum(overlap)                                                  AS covered_s,
    sumIf(overlap, util_gpu IS NOT NULL)                          AS util_covered_s,
    sumIf(overlap * util_gpu, util_gpu IS NOT NULL)               AS util_gpu_s,
    sumIf(overlap, util_mem IS NOT NULL)                          AS util_mem_covered_s,
    sumIf(overlap * util_mem, util_mem IS NOT NULL)               AS util_mem_s,
    sumIf(overlap, mem_used_bytes IS NOT NULL)                    AS mem_covered_s,
    sumIf(overlap * mem_used_bytes, mem_used_bytes IS NOT NULL)   AS mem_used_s,
    toUInt64(max(coalesce(mem_total_bytes, 0)))                   AS mem_total_bytes,
    sumIf(overlap, power_w IS NOT NULL)                           AS power_covered_s,
    sumIf(overlap * power_w, power_w IS NOT NULL)                 AS energy_j,
    max(temperature_c)                                            AS temperature_max,
    toUInt32(sumIf(xid_count, floor(t / 60) = m))                 AS xid_count,
    argMaxIf(xid_last, t, xid_last IS NOT NULL AND floor(t / 60) = m) AS xid_last,
    max(ecc_uncorrected_volatile)                                 AS ecc_uncorrected_max,
    max(ecc_corrected_volatile)                                   AS ecc_corrected_max,
    groupBitOr(coalesce(throttle_reasons, 0))                     AS throttle_reasons
FROM
(
    SELECT *,
        toFloat64(arrayJoin(range(toUInt64(floor(a / 60)), toUInt64(ceil(b / 60))))) AS m,
        least(b, (m + 1) * 60) - greatest(a, m * 60)              AS overlap
    FROM
    (
        SELECT *,
            toUnixTimestamp64Milli(ts) / 1000.                    AS t,
            toUnixTimestamp64Milli(next_ts) / 1000. - t           AS gap_next,
            t - toUnixTimestamp64Milli(prev_ts) / 1000.           AS gap_prev,
            multiIf(next_ts IS NOT NULL AND gap_next <= {max_gap_s:UInt32}, gap_next,
                    prev_ts IS NOT NULL AND gap_prev <= {max_gap_s:UInt32}, gap_prev,
                    toFloat64({default_interval_s:UInt32}))       AS hold,
            greatest(t, toFloat64(toUnixTimestamp(d0)))          AS a,
            least(t + hold, toFloat64(toUnixTimestamp(d1)))      AS b,
            tuple(team, user, job_id, k8s_namespace, k8s_pod, slurm_account,
                  toUInt8(coalesce(process_count, 0) > 0
                          OR (process_count IS NULL AND (job_id != '' OR k8s_pod != '' OR user != '')))) AS sample_owner
        FROM
        (
            SELECT *,

                lagInFrame(toNullable(ts)) OVER w                 AS prev_ts,
                leadInFrame(toNullable(ts)) OVER w                AS next_ts
            FROM gpu_samples
            WHERE ts >= d0 - INTERVAL {max_gap_s:UInt32} SECOND AND ts < d1 + INTERVAL {max_gap_s:UInt32} SECOND
            WINDOW w AS (PARTITION BY host, gpu_uuid, mig_instance ORDER BY ts ASC ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)
        )
    )
    WHERE b > a
)
GROUP BY m, host, gpu_uuid, mig_instance
