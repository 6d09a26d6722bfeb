-- The idle windows as gpuledger computed them before they were exact to the sample: from
-- gpu_minute, at minute resolution. Kept only as the derivation benchmark's before-figure
-- (bench/bench_derive.py times it on the same store); nothing else reads it.
-- Idle windows starting from {from:DateTime} (per GPU entity, from the start of any window
-- still open at that time, so no window is cut in two) up to {until:DateTime}. {scan_from:DateTime}
-- is the earliest of those starts (given as a constant so partitions are pruned).
-- A minute is idle when it has data (>= 30 s covered) and both GPU and memory-controller
-- utilization are below the pool's thresholds; no-data gaps up to {max_gap_minutes} minutes do
-- not end a window, longer ones do, and so does any minute with data that is not idle, or a
-- change of kind (allocated / unallocated) or owner.
WITH
    starts AS
    (
        SELECT host, gpu_uuid, mig_instance, min(start) AS first_open
        FROM idle_windows
        WHERE end >= {from:DateTime} - INTERVAL {max_gap_minutes:UInt32} MINUTE
        GROUP BY host, gpu_uuid, mig_instance
    ),
    -- the minutes with data (gpu_minute has one row per GPU entity and minute)
    minutes AS
    (
        SELECT host, gpu_uuid, mig_instance, minute, covered_s AS covered,
            util_gpu_s / nullIf(util_covered_s, 0)                   AS util_gpu,
            util_mem_s / nullIf(util_mem_covered_s, 0)               AS util_mem,
            held                                                     AS held_any,
            cityHash64(team, user, job_id, k8s_namespace, k8s_pod, slurm_account) AS owner_hash,
            pool                                                     AS pool_name
        FROM gpu_minute
        WHERE minute >= {scan_from:DateTime} AND minute < {until:DateTime} AND covered_s >= 30
    ),
    -- data minutes numbered per entity, so two idle minutes with a busy one between are told apart
    ranked AS
    (
        SELECT m.host AS host, m.gpu_uuid AS gpu_uuid, m.mig_instance AS mig_instance, m.minute AS minute,
            m.covered AS covered, m.util_gpu AS util_gpu, m.util_mem AS util_mem,
            m.util_gpu IS NOT NULL AND m.util_gpu < p.idle_util_gpu_pct AND coalesce(m.util_mem, 0) < p.idle_util_mem_pct AS idle,
            if(m.held_any, m.owner_hash, 0) * 2 + m.held_any                              AS owner_key,
            p.idle_min_minutes                                                            AS min_minutes,
            row_number() OVER (PARTITION BY m.host, m.gpu_uuid, m.mig_instance ORDER BY m.minute) AS rank
        FROM minutes AS m
        LEFT JOIN config_pools AS p ON p.pool = m.pool_name
        LEFT JOIN starts AS s ON s.host = m.host AND s.gpu_uuid = m.gpu_uuid AND s.mig_instance = m.mig_instance
        WHERE m.minute >= if(s.first_open > toDateTime(0) AND s.first_open < {from:DateTime}, s.first_open, {from:DateTime})
    ),
    runs AS
    (
        SELECT *, sum(toUInt64(new_run)) OVER (PARTITION BY host, gpu_uuid, mig_instance ORDER BY minute ROWS UNBOUNDED PRECEDING) AS run
        FROM
        (
            SELECT *,
                prev_rank = 0
                OR rank - prev_rank != 1
                OR minute - prev_minute > ({max_gap_minutes:UInt32} + 1) * 60
                OR owner_key != prev_key                                      AS new_run
            FROM
            (
                SELECT *,
                    lagInFrame(rank) OVER w        AS prev_rank,
                    lagInFrame(minute) OVER w      AS prev_minute,
                    lagInFrame(owner_key) OVER w   AS prev_key
                FROM ranked
                WHERE idle
                WINDOW w AS (PARTITION BY host, gpu_uuid, mig_instance ORDER BY minute ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
            )
        )
    ),
    rates AS
    (
        -- what a covered second of each GPU entity cost in each hour
        SELECT host, gpu_uuid, mig_instance, hour, sum(cost_usd) / nullIf(sum(gpu_hours) * 3600, 0) AS usd_per_s
        FROM gpu_cost_hour
        WHERE hour >= toStartOfHour({scan_from:DateTime}) AND hour < {until:DateTime}
        GROUP BY host, gpu_uuid, mig_instance, hour
    ),
    windows AS
    (
        SELECT r.host AS host, r.gpu_uuid AS gpu_uuid, r.mig_instance AS mig_instance,
            min(r.minute) AS start, max(r.minute) + 60 AS end, toUInt32(end - start) AS duration_s,
            if(any(r.owner_key) % 2 = 1, 'allocated', 'unallocated') AS kind,
            toFloat32(sum(r.util_gpu * r.covered) / sum(r.covered)) AS avg_util_gpu,
            toFloat32(sum(coalesce(r.util_mem, 0) * r.covered) / sum(r.covered)) AS avg_util_mem,
            sum(r.covered * c.usd_per_s) AS cost_usd
        FROM runs AS r
        LEFT JOIN rates AS c ON c.host = r.host AND c.gpu_uuid = r.gpu_uuid AND c.mig_instance = r.mig_instance
                             AND c.hour = toStartOfHour(r.minute)
        GROUP BY r.host, r.gpu_uuid, r.mig_instance, r.run
        HAVING duration_s >= any(r.min_minutes) * 60
    )
-- labels and owner of each window, from its minutes
SELECT
    w.host AS host, w.gpu_uuid AS gpu_uuid, w.mig_instance AS mig_instance, w.start AS start, w.end AS end,
    any(w.duration_s) AS duration_s, any(w.kind) AS kind,
    any(g.environment) AS environment, any(g.region) AS region, any(g.pool) AS pool,
    any(g.instance_id) AS instance_id, any(g.model) AS model,
    if(any(w.kind) = 'allocated', argMax(g.team, g.held), '') AS team,
    if(any(w.kind) = 'allocated', argMax(g.user, g.held), '') AS user,
    if(any(w.kind) = 'allocated', argMax(g.job_id, g.held), '') AS job_id,
    if(any(w.kind) = 'allocated', argMax(g.k8s_namespace, g.held), '') AS k8s_namespace,
    if(any(w.kind) = 'allocated', argMax(g.k8s_pod, g.held), '') AS k8s_pod,
    if(any(w.kind) = 'allocated', argMax(g.slurm_account, g.held), '') AS slurm_account,
    any(w.avg_util_gpu) AS avg_util_gpu, any(w.avg_util_mem) AS avg_util_mem, any(w.cost_usd) AS cost_usd
FROM gpu_minute AS g
INNER JOIN windows AS w ON g.host = w.host AND g.gpu_uuid = w.gpu_uuid AND g.mig_instance = w.mig_instance
WHERE g.minute >= {scan_from:DateTime} AND g.minute < {until:DateTime} AND g.minute >= w.start AND g.minute < w.end
GROUP BY w.host, w.gpu_uuid, w.mig_instance, w.start, w.end
