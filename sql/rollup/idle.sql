-- Idle windows (DESIGN.md "Idle window"), stitched from gpu_idle_segments between
-- {scan_from:DateTime} (the start of any window still open at {from:DateTime}, or earlier) and
-- {until:DateTime}: per GPU entity, consecutive idle runs of one owner form a window while
-- nothing but a no-data gap of at most {max_gap_minutes} minutes separates them; a busy sample,
-- a change of owner or a longer gap ends it. A window is kept when it lasts (end - start, bridged
-- gaps included) at least the pool's idle_min_minutes. Exact to the sample: a window starts at
-- its first idle sample and ends when its last idle sample stops holding.
-- Only windows ending at or after {cutoff:DateTime64(3)} are returned (older ones cannot change).
-- is_open: the window holds its GPU entity's latest sample before {until:DateTime} (its end, where
-- that sample stops holding, lies after every sample of the entity), so it may still grow.
-- team: the one the attribution rules give the window's GPU-time (DESIGN.md "Attribution"), as its
-- first hour's costs have it (gpu_cost_hour, derived before), so that an idle window, its alert and
-- the waste per team name the same team; '' where that hour has no cost row of the window's owner.
SELECT w.host AS host, w.gpu_uuid AS gpu_uuid, w.mig_instance AS mig_instance, w.w_start AS start, w.w_end AS end,
    toFloat64(toUnixTimestamp64Milli(w.w_end) - toUnixTimestamp64Milli(w.w_start)) / 1000 AS duration_s,
    w.w_covered AS covered_s, toUInt8(w.w_end > l.last_ts) AS is_open, w.w_kind AS kind, w.w_environment AS environment, w.w_region AS region, w.w_pool AS pool,
    w.w_instance_id AS instance_id, w.w_model AS model,
    a.a_team AS team, if(w.w_kind = 'allocated', w.w_user, '') AS user,
    if(w.w_kind = 'allocated', w.w_job_id, '') AS job_id, if(w.w_kind = 'allocated', w.w_k8s_namespace, '') AS k8s_namespace,
    if(w.w_kind = 'allocated', w.w_k8s_pod, '') AS k8s_pod, if(w.w_kind = 'allocated', w.w_slurm_account, '') AS slurm_account,
    toFloat32(w.w_util_gpu_s / w.w_covered) AS avg_util_gpu, toFloat32(w.w_util_mem_s / w.w_covered) AS avg_util_mem,
    w.w_cost AS cost_usd
FROM
(
    SELECT host, gpu_uuid, mig_instance,
        min(start) AS w_start, max(end) AS w_end, sum(covered_s) AS w_covered,
        sum(util_gpu_s) AS w_util_gpu_s, sum(util_mem_s) AS w_util_mem_s, sum(cost_usd) AS w_cost,
        if(any(held) = 1, 'allocated', 'unallocated') AS w_kind,
        any(environment) AS w_environment, any(region) AS w_region, any(pool) AS w_pool,
        any(instance_id) AS w_instance_id, any(model) AS w_model,
        any(user) AS w_user, any(job_id) AS w_job_id, any(k8s_namespace) AS w_k8s_namespace,
        any(k8s_pod) AS w_k8s_pod, any(slurm_account) AS w_slurm_account
    FROM
    (
        SELECT *,
            sum(toUInt64(new_window)) OVER (PARTITION BY host, gpu_uuid, mig_instance ORDER BY start ASC
                                            ROWS UNBOUNDED PRECEDING)      AS window
        FROM
        (
            SELECT *,
                -- the first segment scanned, one that follows nothing idle, or one after a longer gap
                row_number() OVER (PARTITION BY host, gpu_uuid, mig_instance ORDER BY start ASC) = 1
                OR joins_at IS NULL
                OR toUnixTimestamp64Milli(start) - toUnixTimestamp64Milli(assumeNotNull(joins_at))
                   > {max_gap_minutes:UInt32} * 60000                       AS new_window
            FROM gpu_idle_segments
            WHERE hour >= toStartOfHour({scan_from:DateTime}) AND hour < {until:DateTime} AND start >= {scan_from:DateTime}
        )
    )
    GROUP BY host, gpu_uuid, mig_instance, window
    HAVING w_end >= {cutoff:DateTime64(3)}
) AS w
LEFT JOIN config_pools AS p ON p.pool = w.w_pool
-- the latest sample of each entity since the cutoff (none: 1970, before any window's end)
LEFT JOIN
(
    SELECT host, gpu_uuid, mig_instance, max(ts) AS last_ts FROM gpu_samples
    WHERE ts >= {cutoff:DateTime64(3)} AND ts < {until:DateTime}
    GROUP BY host, gpu_uuid, mig_instance
) AS l ON l.host = w.host AND l.gpu_uuid = w.gpu_uuid AND l.mig_instance = w.mig_instance
LEFT JOIN
(
    SELECT host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held, argMax(team, gpu_hours) AS a_team
    FROM gpu_cost_hour
    WHERE hour >= toStartOfHour({scan_from:DateTime}) AND hour < {until:DateTime}
    GROUP BY host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held
) AS a ON a.host = w.host AND a.gpu_uuid = w.gpu_uuid AND a.mig_instance = w.mig_instance
    AND a.hour = toStartOfHour(w.w_start) AND a.held = toUInt8(w.w_kind = 'allocated')
    AND a.user = w.w_user AND a.job_id = w.w_job_id AND a.k8s_namespace = w.w_k8s_namespace
WHERE toUnixTimestamp64Milli(w.w_end) - toUnixTimestamp64Milli(w.w_start) >= p.idle_min_minutes * 60000
