-- Placement: GPU demand that waited in the Slurm and Kubernetes queues over the range, per pool
-- and team (queue_pending_hour, kept as the platform reads the queues: ingest/queues.py).
--
--   jobs               jobs and pods that waited for GPUs in the range
--   pending_gpu_hours  GPU-hours asked for while waiting (each read counts gpus x its interval)
--   pending_gpus       that over the hours of the range in which the queues were read (each read
--                      stores a marker row, job_id ''): the average GPUs waiting
--   peak_pending_gpus  the most GPUs waiting on average in one hour
--   wait_p50_h/p95_h   the jobs' waits, each from when it could first run (Slurm's eligible time,
--                      else its submission; a pod's creation) to the last read that saw it
--                      pending (a job still waiting counts its wait so far); ClickHouse's
--                      quantileExact: the value at position floor(q x n) of the n sorted waits
--   burst_usd_per_h    what pending_gpus would cost per hour at {cloud_usd_per_gpu_hour}, the
--                      cheapest cloud's cost of a GPU-hour over the range (placement_rates(), placement_usage.sql)
-- GPUs are GPU-equivalents: a MIG slice counts its share of the GPU.
WITH
    read_hours AS
    (
        SELECT toUInt64(uniqExact(hour)) AS n
        FROM queue_pending_hour
        WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
    ),
    jobs AS
    (
        SELECT pool, team, scheduler, cluster, job_id, max(gpus) AS gpus, sum(pending_gpu_hours) AS gpu_hours,
               dateDiff('second', min(submitted), max(last_seen)) / 3600 AS wait_h
        FROM queue_pending_hour
        WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')} AND job_id != ''
          AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
        GROUP BY pool, team, scheduler, cluster, job_id
    ),
    peaks AS
    (
        SELECT pool, team, max(gpus) AS peak_pending_gpus
        FROM
        (
            SELECT pool, team, hour, sum(pending_gpu_hours) AS gpus
            FROM queue_pending_hour
            WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')} AND job_id != ''
              AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
            GROUP BY pool, team, hour
        )
        GROUP BY pool, team
    )
SELECT j.pool AS pool, j.team AS team, count() AS jobs, sum(j.gpu_hours) AS pending_gpu_hours,
       pending_gpu_hours / greatest((SELECT n FROM read_hours), 1) AS pending_gpus, any(p.peak_pending_gpus) AS peak_pending_gpus,
       quantileExact(0.5)(j.wait_h) AS wait_p50_h, quantileExact(0.95)(j.wait_h) AS wait_p95_h,
       pending_gpus * {cloud_usd_per_gpu_hour:Float64} AS burst_usd_per_h
FROM jobs AS j
LEFT JOIN peaks AS p ON p.pool = j.pool AND p.team = j.team
GROUP BY j.pool, j.team
ORDER BY wait_p95_h DESC, pending_gpu_hours DESC, pool, team
