-- gpu_minute for one UTC day {day:Date}, from {from:DateTime} (the day's start, or the first hour
-- whose samples changed) to the day's end: one row per GPU entity and minute.
-- A sample holds until the next sample of the same GPU entity when that comes within
-- {max_gap_s} seconds; the last sample before a longer gap holds for the interval that preceded
-- it (so "no data" starts where the samples stop), and a lone sample for {default_interval_s}.
-- Each held interval is split exactly across the minutes it overlaps.
-- Each read takes the hosts of this run: on a day where some hosts' samples arrived in parts
-- (ingest/rollup/run.py sample_parts), every other host ({merged} = 0: not in {split_hosts}) is
-- derived from gpu_samples as stored, then those hosts ({merged} = 1) from split_samples.sql, one
-- row per GPU entity and ts (the placeholder); on any other day, every host at once.
-- The per-sample work carries only numbers: the GPU entity and the owner travel as hashes, and
-- their names (and the labels) are joined back onto the much smaller per-minute result.
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1,
    -- labels (pool, model, versions, instance) per GPU entity and hour, attached to each minute
    -- from the latest hour at or before it. Labels and owner fields stay LowCardinality (argMax and
    -- any return plain String): the join then carries dictionary indexes, and the insert into
    -- gpu_minute's LowCardinality columns merges small dictionaries instead of hashing every
    -- row's strings (a day's minute rollup ~10 % faster)
    labels AS
    (
        SELECT host, gpu_uuid, mig_instance, cityHash64(host, gpu_uuid, mig_instance) AS entity, toStartOfHour(ts) AS label_hour,
            toLowCardinality(argMax(mig_profile, ts)) AS mig_profile,
            toLowCardinality(argMax(environment, ts)) AS environment,
            toLowCardinality(argMax(region, ts)) AS region,
            toLowCardinality(argMax(cluster, ts)) AS cluster,
            toLowCardinality(argMax(pool, ts)) AS pool,
            toLowCardinality(argMax(instance_id, ts)) AS instance_id,
            toLowCardinality(argMax(instance_type, ts)) AS instance_type,
            toLowCardinality(argMax(model, ts)) AS model,
            toLowCardinality(argMax(driver_version, ts)) AS driver_version,
            toLowCardinality(argMax(cuda_version, ts)) AS cuda_version,
            toLowCardinality(argMax(image, ts)) AS image,
            -- the same normalisation as billing_line_items.resource_key (sql/002), so bills meet GPUs
            multiIf(startsWith(lower(trimBoth(instance_id)), '/subscriptions/'), trim(TRAILING '/' FROM lower(trimBoth(instance_id))),
                    match(trimBoth(instance_id), '^arn:[^:]+:ec2:[^:]*:[^:]*:instance/[^/]+$'), extract(trimBoth(instance_id), 'instance/([^/]+)$'),
                    match(trimBoth(instance_id), '/instances/[^/]+$'), extract(trimBoth(instance_id), '/instances/([^/]+)$'),
                    trimBoth(instance_id)) AS instance_key
        FROM gpu_samples
        WHERE ts >= d0 - INTERVAL {max_gap_s:UInt32} SECOND AND ts < d1
          AND (host IN {split_hosts:Array(String)}) = {merged:Bool}
        GROUP BY host, gpu_uuid, mig_instance, label_hour
    ),
    -- the owner fields of each owner hash seen
    owners AS
    (
        SELECT owner_hash,
            toLowCardinality(any(team)) AS team,
            toLowCardinality(any(user)) AS user,
            toLowCardinality(any(job_id)) AS job_id,
            toLowCardinality(any(k8s_namespace)) AS k8s_namespace,
            toLowCardinality(any(k8s_pod)) AS k8s_pod,
            toLowCardinality(any(slurm_account)) AS slurm_account
        FROM
        (
            SELECT cityHash64(team, user, job_id, k8s_namespace, k8s_pod, slurm_account) AS owner_hash,
                team, user, job_id, k8s_namespace, k8s_pod, slurm_account
            FROM gpu_samples
            WHERE ts >= d0 - INTERVAL {max_gap_s:UInt32} SECOND AND ts < d1
              AND (host IN {split_hosts:Array(String)}) = {merged:Bool}
        )
        GROUP BY owner_hash
    ),
    rolled AS
    (
        SELECT entity, toUInt32(m) AS m,
            -- the owner (minute resolution) is the one holding the GPU at the minute's middle: the
            -- one that held most of it when the owner changes at most once in the minute; where no
            -- sample holds the middle (a gap), the one whose sample held longest. Packed as
            -- owner_hash * 2 + held: a number is cheaper to carry than a tuple
            argMax(toUInt128(owner_hash) * 2 + held,
                   overlap + if(a <= m * 60 + 30 AND b > m * 60 + 30, 100, 0)) AS owner,
            toUInt32(countIf(own))                                        AS samples,
            sum(overlap)                                                  AS covered_s,
            sumIf(overlap, util_gpu IS NOT NULL)                          AS util_covered_s,
            sum(overlap * coalesce(util_gpu, 0))                          AS util_gpu_s,
            sumIf(overlap, util_mem IS NOT NULL)                          AS util_mem_covered_s,
            sum(overlap * coalesce(util_mem, 0))                          AS util_mem_s,
            sumIf(overlap, mem_used_bytes IS NOT NULL)                    AS mem_covered_s,
            sum(overlap * coalesce(mem_used_bytes, 0))                    AS mem_used_s,
            max(coalesce(mem_total_bytes, 0))                             AS mem_total_bytes,
            sumIf(overlap, power_w IS NOT NULL)                           AS power_covered_s,
            sum(overlap * coalesce(power_w, 0))                           AS energy_j,
            max(temperature_c)                                            AS temperature_max,
            toUInt32(sumIf(xid_count, own))                               AS xid_count,
            argMaxIf(xid_last, t, xid_last IS NOT NULL AND own)           AS xid_last,
            max(ecc_uncorrected_volatile)                                 AS ecc_uncorrected_max,
            max(ecc_corrected_volatile)                                   AS ecc_corrected_max,
            groupBitOr(coalesce(throttle_reasons, 0))                     AS throttle_reasons
        FROM
        (
            SELECT *,
                toFloat64(arrayJoin(range(toUInt64(floor(a / 60)), toUInt64(ceil(b / 60))))) AS m,
                least(b, (m + 1) * 60) - greatest(a, m * 60)              AS overlap,
                m = floor(t / 60)                                         AS own
            FROM
            (
                SELECT s.*,
                    toUnixTimestamp64Milli(ts) / 1000.                    AS t,
                    toUnixTimestamp64Milli(if(next_ts IS NULL, after.first_ts, next_ts)) / 1000. - t AS gap_next,
                    t - toUnixTimestamp64Milli(prev_ts) / 1000.           AS gap_prev,
                    multiIf(gap_next IS NOT NULL AND gap_next <= {max_gap_s:UInt32}, assumeNotNull(gap_next),
                            prev_ts IS NOT NULL AND gap_prev <= {max_gap_s:UInt32}, assumeNotNull(gap_prev),
                            toFloat64({default_interval_s:UInt32}))       AS hold,
                    greatest(t, toFloat64(toUnixTimestamp(d0)))          AS a,
                    least(t + hold, toFloat64(toUnixTimestamp(d1)))      AS b
                FROM
                (
                    SELECT ts, host, gpu_uuid, mig_instance, util_gpu, util_mem, mem_used_bytes, mem_total_bytes, power_w,
                        temperature_c, xid_count, xid_last, ecc_uncorrected_volatile, ecc_corrected_volatile, throttle_reasons,
                        cityHash64(team, user, job_id, k8s_namespace, k8s_pod, slurm_account) AS owner_hash,
                        -- held (allocated): a process, job, pod or user holds the GPU, whatever the
                        -- process count (a job's GPU with no process running is the job's idle time)
                        toUInt8(coalesce(process_count, 0) > 0 OR job_id != '' OR k8s_pod != '' OR user != '') AS held,
                        cityHash64(host, gpu_uuid, mig_instance)          AS entity,
                        lagInFrame(toNullable(ts)) OVER w                 AS prev_ts,
                        leadInFrame(toNullable(ts)) OVER w                AS next_ts
                    FROM __SAMPLES__
                    WHERE ts >= d0 - INTERVAL {max_gap_s:UInt32} SECOND AND ts < d1
                      AND (host IN {split_hosts:Array(String)}) = {merged:Bool}
                    WINDOW w AS (PARTITION BY host, gpu_uuid, mig_instance ORDER BY ts ASC ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)
                ) AS s
                -- the first sample after the day, for the day's last sample: only its time is
                -- read (reading the next day's samples in the window read their granules whole)
                LEFT JOIN
                (
                    SELECT cityHash64(host, gpu_uuid, mig_instance) AS entity, toNullable(min(ts)) AS first_ts
                    FROM __SAMPLES__
                    WHERE ts >= d1 AND ts < d1 + INTERVAL {max_gap_s:UInt32} SECOND
                      AND (host IN {split_hosts:Array(String)}) = {merged:Bool}
                    GROUP BY host, gpu_uuid, mig_instance
                ) AS after ON after.entity = s.entity
            )
            WHERE b > a
        )
        GROUP BY entity, m
    )
SELECT
    toDateTime(r.m * 60, 'UTC') AS minute, l.host AS host, l.gpu_uuid AS gpu_uuid, l.mig_instance AS mig_instance,
    l.mig_profile AS mig_profile, l.environment AS environment, l.region AS region, l.cluster AS cluster, l.pool AS pool,
    l.instance_id AS instance_id,
    l.instance_key AS instance_key,
    l.instance_type AS instance_type, l.model AS model, l.driver_version AS driver_version, l.cuda_version AS cuda_version,
    l.image AS image,
    o.team AS team, o.user AS user, o.job_id AS job_id, o.k8s_namespace AS k8s_namespace, o.k8s_pod AS k8s_pod,
    o.slurm_account AS slurm_account, toUInt8(r.owner % 2) AS held,
    r.samples AS samples, r.covered_s AS covered_s, r.util_covered_s AS util_covered_s, r.util_gpu_s AS util_gpu_s,
    r.util_mem_covered_s AS util_mem_covered_s, r.util_mem_s AS util_mem_s, r.mem_covered_s AS mem_covered_s,
    r.mem_used_s AS mem_used_s, r.mem_total_bytes AS mem_total_bytes, r.power_covered_s AS power_covered_s,
    r.energy_j AS energy_j, r.temperature_max AS temperature_max, r.xid_count AS xid_count, r.xid_last AS xid_last,
    r.ecc_uncorrected_max AS ecc_uncorrected_max, r.ecc_corrected_max AS ecc_corrected_max, r.throttle_reasons AS throttle_reasons
FROM rolled AS r
ASOF LEFT JOIN labels AS l ON l.entity = r.entity AND toDateTime(r.m * 60, 'UTC') >= l.label_hour
LEFT JOIN owners AS o ON o.owner_hash = toUInt64(intDiv(r.owner, 2))
