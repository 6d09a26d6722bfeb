-- Idle windows starting from {from:DateTime} (per GPU entity, from the start of any window
-- still open at that time, so no window is cut in two) up to {until:DateTime}.
-- A minute is idle when it has data (>= 30 s covered) and both GPU and memory-controller
-- utilization are below the pool's thresholds; no-data gaps up to {max_gap_minutes} minutes do
-- not end a window, longer ones do; a change of kind (allocated / unallocated) or owner does.
WITH
    starts AS
    (
        SELECT host, gpu_uuid, mig_instance, min(start) AS first_open
        FROM idle_windows
        WHERE end >= {from:DateTime} - INTERVAL {max_gap_minutes:UInt32} MINUTE
        GROUP BY host, gpu_uuid, mig_instance
    ),
    minutes AS
    (
        SELECT host, gpu_uuid, mig_instance, minute,
            sum(covered_s)                                           AS covered,
            sum(util_gpu_s) / nullIf(sum(util_covered_s), 0)         AS util_gpu,
            sum(util_mem_s) / nullIf(sum(util_mem_covered_s), 0)     AS util_mem,
            max(held)                                                AS held_any,
            argMax(tuple(team, user, job_id, k8s_namespace, k8s_pod, slurm_account), held * 100000 + covered_s) AS owner,
            any(pool) AS pool, any(environment) AS environment, any(region) AS region,
            any(instance_id) AS instance_id, any(model) AS model
        FROM gpu_minute
        WHERE minute >= least({from:DateTime}, (SELECT coalesce(min(first_open), {from:DateTime}) FROM starts))
          AND minute < {until:DateTime}
        GROUP BY host, gpu_uuid, mig_instance, minute
        HAVING covered >= 30
    ),
    flagged AS
    (
        SELECT m.host AS host, m.gpu_uuid AS gpu_uuid, m.mig_instance AS mig_instance, m.minute AS minute,
            m.covered AS covered, m.util_gpu AS util_gpu, m.util_mem AS util_mem,
            m.pool AS pool, m.environment AS environment, m.region AS region, m.instance_id AS instance_id, m.model AS model,
            m.util_gpu IS NOT NULL
                AND m.util_gpu < p.idle_util_gpu_pct
                AND coalesce(m.util_mem, 0) < p.idle_util_mem_pct              AS idle,
            if(m.held_any, 'allocated', 'unallocated')                            AS kind,
            if(m.held_any, m.owner, tuple('', '', '', '', '', ''))                AS who,
            p.idle_min_minutes                                                 AS min_minutes,
            if(s.first_open > toDateTime(0) AND s.first_open < {from:DateTime}, s.first_open, {from:DateTime}) AS entity_from
        FROM minutes AS m
        LEFT JOIN config_pools AS p ON p.pool = m.pool
        LEFT JOIN starts AS s ON s.host = m.host AND s.gpu_uuid = m.gpu_uuid AND s.mig_instance = m.mig_instance
    ),
    runs AS
    (
        SELECT *,
            sum(toUInt64(new_run)) OVER (PARTITION BY host, gpu_uuid, mig_instance ORDER BY minute ROWS UNBOUNDED PRECEDING) AS run
        FROM
        (
            SELECT *,
                idle AND (NOT prev_idle
                          OR minute - prev_minute > ({max_gap_minutes:UInt32} + 1) * 60
                          OR (kind, who) != (prev_kind, prev_who))                AS new_run
            FROM
            (
                SELECT *,
                    lagInFrame(minute) OVER w AS prev_minute,
                    lagInFrame(idle) OVER w AS prev_idle,
                    lagInFrame(kind) OVER w AS prev_kind,
                    lagInFrame(who) OVER w AS prev_who
                FROM flagged
                WHERE minute >= entity_from
                WINDOW w AS (PARTITION BY host, gpu_uuid, mig_instance ORDER BY minute ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
            )
        )
        WHERE idle
    ),
    rates AS
    (
        -- what a covered second of each GPU entity cost in each hour
        SELECT host, gpu_uuid, mig_instance, hour, sum(cost_usd) / nullIf(sum(gpu_hours) * 3600, 0) AS usd_per_s
        FROM gpu_cost_hour
        WHERE hour >= toStartOfHour((SELECT min(minute) FROM minutes)) AND hour < {until:DateTime}
        GROUP BY host, gpu_uuid, mig_instance, hour
    )
SELECT
    r.host AS host, r.gpu_uuid AS gpu_uuid, r.mig_instance AS mig_instance,
    min(r.minute)                                          AS start,
    max(r.minute) + 60                                     AS end,
    toUInt32(end - start)                                  AS duration_s,
    any(r.kind)                                            AS kind,
    any(r.environment) AS environment, any(r.region) AS region, any(r.pool) AS pool,
    any(r.instance_id) AS instance_id, any(r.model) AS model,
    any(r.who).1 AS team, any(r.who).2 AS user, any(r.who).3 AS job_id,
    any(r.who).4 AS k8s_namespace, any(r.who).5 AS k8s_pod, any(r.who).6 AS slurm_account,
    toFloat32(sum(r.util_gpu * r.covered) / sum(r.covered)) AS avg_util_gpu,
    toFloat32(sum(coalesce(r.util_mem, 0) * r.covered) / sum(r.covered)) AS avg_util_mem,
    sum(r.covered * coalesce(c.usd_per_s, 0))             AS cost_usd,
    any(r.min_minutes)                                     AS min_minutes
FROM runs AS r
LEFT JOIN rates AS c ON c.host = r.host AND c.gpu_uuid = r.gpu_uuid AND c.mig_instance = r.mig_instance
                     AND c.hour = toStartOfHour(r.minute)
GROUP BY r.host, r.gpu_uuid, r.mig_instance, r.run
HAVING duration_s >= min_minutes * 60
