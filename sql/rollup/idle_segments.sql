-- gpu_idle_segments for one UTC day {day:Date}, hours from {from:DateTime}: the day's idle time,
-- exact to the sample, as maximal runs of idle samples of one GPU entity and owner, cut at hours.
-- A sample holds as in gpu_minute: until the next sample when that comes within {max_gap_s}
-- seconds; the last sample before a longer gap holds for the interval that preceded it; a lone
-- sample for {default_interval_s}. A sample is idle when its GPU utilization is known and below
-- the pool's idle_util_gpu_pct, and its memory-controller activity (unknown: 0) below
-- idle_util_mem_pct. A run ends at a busy sample, at a change of owner, or where the samples
-- stop (a no-data gap); joins_at says where the idle time before a run ended when only a no-data
-- gap (not a busy sample, not another owner) separates them, so idle windows can bridge it.
-- Samples from {lookback_s} seconds before the first hour are read for what came before. The
-- pools' thresholds come as parameters ({pools}, {gpu_pct}, {mem_pct}; others {default_*_pct}).
-- The samples are read as minute.sql reads them (this run's hosts, the placeholder): one row per
-- GPU entity and ts.
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1,
    -- pass 1, over every sample, numbers only (read in the table's order): how long it holds, and
    -- whether it may be idle (below the highest threshold of any pool: {max_gpu_pct}, {max_mem_pct})
    candidates AS
    (
        SELECT c.*,
            if(c.n1 IS NULL, toUnixTimestamp64Milli(after.first_ts) / 1000., c.n1)  AS next_t,
            multiIf(next_t IS NOT NULL AND next_t - t <= {max_gap_s:UInt32}, assumeNotNull(next_t) - t,
                    p1 IS NOT NULL AND t - p1 <= {max_gap_s:UInt32}, t - p1,
                    toFloat64({default_interval_s:UInt32}))                    AS hold
        FROM
        (
            SELECT host, gpu_uuid, mig_instance, ts, util_gpu, util_mem, pool, process_count,
                environment, region, instance_id, model, team, user, job_id, k8s_namespace, k8s_pod, slurm_account,
                toUnixTimestamp64Milli(ts) / 1000.                             AS t,
                util_gpu IS NOT NULL AND util_gpu < {max_gpu_pct:Float64}
                    AND coalesce(util_mem, 0) < {max_mem_pct:Float64}          AS cand,
                lagInFrame(toNullable(t), 1) OVER w                            AS p1,
                leadInFrame(toNullable(t), 1) OVER w                           AS n1,
                lagInFrame(cand, 1) OVER w                                     AS p_cand
            FROM __SAMPLES__
            WHERE ts >= d0 - INTERVAL {lookback_s:UInt32} SECOND AND ts < d1
              AND (host IN {split_hosts:Array(String)}) = {merged:Bool}
            WINDOW w AS (PARTITION BY host, gpu_uuid, mig_instance ORDER BY ts ASC ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)
        ) AS c
        -- the first sample after the day, which ends the hold of the day's last (its time only)
        LEFT JOIN
        (
            SELECT host, gpu_uuid, mig_instance, toNullable(min(ts)) AS first_ts
            FROM __SAMPLES__
            WHERE ts >= d1 AND ts < d1 + INTERVAL {max_gap_s:UInt32} SECOND
              AND (host IN {split_hosts:Array(String)}) = {merged:Bool}
            GROUP BY host, gpu_uuid, mig_instance
        ) AS after ON after.host = c.host AND after.gpu_uuid = c.gpu_uuid AND after.mig_instance = c.mig_instance
        WHERE c.cand
    ),
    -- pass 2, over the candidates: the pool's own thresholds and the owner. The candidate before
    -- a candidate is the sample before it exactly when p_cand.
    marked AS
    (
        SELECT *,
            p_cand AND coalesce(c_idle, 0) AND c_owner = owner                  AS after_idle,
            NOT (after_idle AND p_end >= t - 0.0005)                           AS run_start,
            if(after_idle, p_end, NULL)                                        AS joins
        FROM
        (
            SELECT *,
                lagInFrame(toNullable(idle), 1) OVER c                         AS c_idle,
                lagInFrame(owner, 1) OVER c                                    AS c_owner,
                lagInFrame(t + hold, 1) OVER c                                 AS p_end
            FROM
            (
                SELECT *,
                    util_gpu < transform(pool, {pools:Array(String)}, {gpu_pct:Array(Float64)}, {default_gpu_pct:Float64})
                    AND coalesce(util_mem, 0) < transform(pool, {pools:Array(String)}, {mem_pct:Array(Float64)},
                                                          {default_mem_pct:Float64}) AS idle,
                    toUInt8(coalesce(process_count, 0) > 0 OR job_id != '' OR k8s_pod != '' OR user != '') AS held,
                    cityHash64(team, user, job_id, k8s_namespace, k8s_pod, slurm_account) * 2 + held AS owner
                FROM candidates
            )
            WINDOW c AS (PARTITION BY host, gpu_uuid, mig_instance ORDER BY ts ASC ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
        )
        WHERE idle
    ),
    -- runs numbered per entity; each sample's held interval clipped to [d0, d1) and cut at hours
    pieces AS
    (
        SELECT *,
            toFloat64(arrayJoin(range(toUInt64(floor(a / 3600)), toUInt64(ceil(b / 3600))))) AS h,
            greatest(a, h * 3600)                                                  AS pa,
            least(b, (h + 1) * 3600)                                               AS pb
        FROM
        (
            SELECT *,
                sum(toUInt64(run_start)) OVER (PARTITION BY host, gpu_uuid, mig_instance ORDER BY ts ASC
                                               ROWS UNBOUNDED PRECEDING)           AS run,
                greatest(t, toFloat64(toUnixTimestamp(d0)))                        AS a,
                least(t + hold, toFloat64(toUnixTimestamp(d1)))                    AS b
            FROM marked
        )
        WHERE b > a
    ),
    -- what a covered second of each GPU entity cost in each hour of the day: each owner's own (its
    -- cost rows over its covered time; on-prem energy is measured per owner; -1: no covered time),
    -- and the GPU-hour's (for an owner with none, or no minute of the hour's cost rows)
    rates AS
    (
        SELECT host, gpu_uuid, mig_instance, hour,
            sum(cost_usd) / nullIf(sum(covered_s), 0)                         AS usd_per_s,
            groupArray((user, job_id, k8s_namespace, held))                   AS owners,
            groupArray(if(covered_s > 0, cost_usd / covered_s, -1.))          AS owner_usd_per_s
        FROM
        (
            SELECT c.host AS host, c.gpu_uuid AS gpu_uuid, c.mig_instance AS mig_instance, c.hour AS hour,
                c.user AS user, c.job_id AS job_id, c.k8s_namespace AS k8s_namespace, c.held AS held,
                c.cost_usd AS cost_usd, g.covered_s AS covered_s
            FROM
            (
                SELECT host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held, sum(cost_usd) AS cost_usd
                FROM gpu_cost_hour
                WHERE hour >= d0 AND hour < d1 AND (host IN {split_hosts:Array(String)}) = {merged:Bool}
                GROUP BY host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held
            ) AS c
            INNER JOIN
            (
                SELECT host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held, sum(covered_s) AS covered_s
                FROM gpu_hour
                WHERE hour >= d0 AND hour < d1 AND (host IN {split_hosts:Array(String)}) = {merged:Bool}
                GROUP BY host, gpu_uuid, mig_instance, hour, user, job_id, k8s_namespace, held
            ) AS g ON g.host = c.host AND g.gpu_uuid = c.gpu_uuid AND g.mig_instance = c.mig_instance AND g.hour = c.hour
                  AND g.user = c.user AND g.job_id = c.job_id AND g.k8s_namespace = c.k8s_namespace AND g.held = c.held
        )
        GROUP BY host, gpu_uuid, mig_instance, hour
    ),
    segments AS
    (
        SELECT host, gpu_uuid, mig_instance, run, toDateTime(h * 3600, 'UTC') AS hour,
            min(pa)                                                                AS seg_start,
            max(pb)                                                                AS seg_end,
            -- the run's first sample, when this piece begins with it, says what the run follows;
            -- a piece that begins at an hour or the day's start continues the one before
            anyIf(joins, run_start AND pa = t)                                     AS first_joins,
            countIf(run_start AND pa = t) > 0                                      AS begins_run,
            sum(pb - pa)                                                           AS covered_s,
            sum((pb - pa) * util_gpu)                                              AS util_gpu_s,
            sum((pb - pa) * coalesce(util_mem, 0))                                 AS util_mem_s,
            any(environment) AS environment, any(region) AS region, any(pool) AS pool,
            any(instance_id) AS instance_id, any(model) AS model, any(held) AS held,
            any(team) AS team, any(user) AS user, any(job_id) AS job_id, any(k8s_namespace) AS k8s_namespace,
            any(k8s_pod) AS k8s_pod, any(slurm_account) AS slurm_account
        FROM pieces
        GROUP BY host, gpu_uuid, mig_instance, run, h
    )
SELECT
    s.hour AS hour, s.host AS host, s.gpu_uuid AS gpu_uuid, s.mig_instance AS mig_instance,
    fromUnixTimestamp64Milli(toInt64(round(s.seg_start * 1000)), 'UTC')            AS start,
    fromUnixTimestamp64Milli(toInt64(round(s.seg_end * 1000)), 'UTC')              AS end,
    if(s.begins_run,
       if(s.first_joins IS NULL, NULL, fromUnixTimestamp64Milli(toInt64(round(assumeNotNull(s.first_joins) * 1000)), 'UTC')),
       start)                                                                     AS joins_at,
    s.covered_s AS covered_s, s.util_gpu_s AS util_gpu_s, s.util_mem_s AS util_mem_s,
    indexOf(r.owners, (s.user, s.job_id, s.k8s_namespace, s.held))                 AS owner_at,
    s.covered_s * if(owner_at > 0 AND r.owner_usd_per_s[owner_at] >= 0, r.owner_usd_per_s[owner_at],
                     coalesce(r.usd_per_s, 0))                                    AS cost_usd,
    s.environment AS environment, s.region AS region, s.pool AS pool, s.instance_id AS instance_id, s.model AS model,
    s.held AS held, s.team AS team, s.user AS user, s.job_id AS job_id, s.k8s_namespace AS k8s_namespace,
    s.k8s_pod AS k8s_pod, s.slurm_account AS slurm_account
FROM segments AS s
LEFT JOIN rates AS r ON r.host = s.host AND r.gpu_uuid = s.gpu_uuid AND r.mig_instance = s.mig_instance AND r.hour = s.hour
