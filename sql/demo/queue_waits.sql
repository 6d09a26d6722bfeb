-- The demo summary's queue line: jobs that waited for GPUs, and their p95 wait in hours (the
-- Placement page's definition: sql/queries/queue_pressure.sql).
SELECT count(), ifNull(quantileExact(0.95)(wait_h), 0)
FROM
(
    SELECT dateDiff('second', min(submitted), max(last_seen)) / 3600 AS wait_h
    FROM queue_pending_hour
    WHERE job_id != ''
    GROUP BY scheduler, cluster, job_id
)
