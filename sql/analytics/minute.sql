-- gpu_minute for one UTC day {day:Date}, from {from:DateTime} (the day's start, or the first hour
-- whose samples changed) to the day's end: one row per GPU entity and minute.
-- A sample holds until the next sample of the same GPU entity when that comes within
-- {max_gap_s} seconds; the last sample before a longer gap holds for the interval that preceded
-- it (so "no data" starts where the samples stop), and a lone sample for {default_interval_s}.
-- Each held interval is split exactly across the minutes it overlaps.
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1,
    -- labels (pool, model, versions, instance) per GPU entity and hour, attached to each minute
    -- from the latest hour at or before it: they rarely change, so the per-sample work stays narrow
    labels AS
    (
        SELECT host, gpu_uuid, mig_instance, toStartOfHour(ts) AS label_hour,
            argMax(mig_profile, ts) AS mig_profile, argMax(environment, ts) AS environment, argMax(region, ts) AS region,
            argMax(cluster, ts) AS cluster, argMax(pool, ts) AS pool, argMax(instance_id, ts) AS instance_id,
            argMax(instance_type, ts) AS instance_type, argMax(model, ts) AS model,
            argMax(driver_version, ts) AS driver_version, argMax(cuda_version, ts) AS cuda_version, argMax(image, ts) AS image
        FROM gpu_samples
        WHERE ts >= d0 - INTERVAL {max_gap_s:UInt32} SECOND AND ts < d1
        GROUP BY host, gpu_uuid, mig_instance, label_hour
    ),
    rolled AS
    (
        SELECT
            toDateTime(toUInt32(m * 60), 'UTC') AS minute, host, gpu_uuid, mig_instance,
            -- the owner is the one that held the GPU for most of the minute (minute resolution)
            argMax(sample_owner, overlap) AS owner,
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
                    SELECT ts, host, gpu_uuid, mig_instance, util_gpu, util_mem, mem_used_bytes, mem_total_bytes, power_w,
                        temperature_c, xid_count, xid_last, ecc_uncorrected_volatile, ecc_corrected_volatile, throttle_reasons,
                        process_count, team, user, job_id, k8s_namespace, k8s_pod, slurm_account,
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
    )
SELECT
    r.minute AS minute, r.host AS host, r.gpu_uuid AS gpu_uuid, r.mig_instance AS mig_instance,
    l.mig_profile AS mig_profile, l.environment AS environment, l.region AS region, l.cluster AS cluster, l.pool AS pool,
    l.instance_id AS instance_id,
    -- the same normalisation as billing_line_items.resource_key (sql/002), so bills meet GPUs
    multiIf(startsWith(lower(trimBoth(l.instance_id)), '/subscriptions/'), trim(TRAILING '/' FROM lower(trimBoth(l.instance_id))),
            match(trimBoth(l.instance_id), '^arn:[^:]+:ec2:[^:]*:[^:]*:instance/[^/]+$'), extract(trimBoth(l.instance_id), 'instance/([^/]+)$'),
            match(trimBoth(l.instance_id), '/instances/[^/]+$'), extract(trimBoth(l.instance_id), '/instances/([^/]+)$'),
            trimBoth(l.instance_id)) AS instance_key,
    l.instance_type AS instance_type, l.model AS model, l.driver_version AS driver_version, l.cuda_version AS cuda_version,
    l.image AS image,
    tupleElement(r.owner, 1) AS team, tupleElement(r.owner, 2) AS user, tupleElement(r.owner, 3) AS job_id,
    tupleElement(r.owner, 4) AS k8s_namespace, tupleElement(r.owner, 5) AS k8s_pod,
    tupleElement(r.owner, 6) AS slurm_account, tupleElement(r.owner, 7) AS held,
    r.samples AS samples, r.covered_s AS covered_s, r.util_covered_s AS util_covered_s, r.util_gpu_s AS util_gpu_s,
    r.util_mem_covered_s AS util_mem_covered_s, r.util_mem_s AS util_mem_s, r.mem_covered_s AS mem_covered_s,
    r.mem_used_s AS mem_used_s, r.mem_total_bytes AS mem_total_bytes, r.power_covered_s AS power_covered_s,
    r.energy_j AS energy_j, r.temperature_max AS temperature_max, r.xid_count AS xid_count, r.xid_last AS xid_last,
    r.ecc_uncorrected_max AS ecc_uncorrected_max, r.ecc_corrected_max AS ecc_corrected_max, r.throttle_reasons AS throttle_reasons
FROM rolled AS r
ASOF LEFT JOIN labels AS l
    ON l.host = r.host AND l.gpu_uuid = r.gpu_uuid AND l.mig_instance = r.mig_instance AND r.minute >= l.label_hour
