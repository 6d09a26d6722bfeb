-- GPU demand that waits (issue #18): each read of a scheduler's queue (`[queues]`, ingest/queues.py)
-- stores one row per job or pod pending for GPUs. `queue` is what the scheduler calls the pool (the
-- Slurm partition, the pod's pool node selector), `pool` gpuledger's pool for it (`[queues]
-- pool_map`, else the same). `interval_s` is the reading interval: a row stands for that long.
-- `gpus` are GPU-equivalents (a MIG slice counts its share of the GPU). Every read also stores
-- one marker row with job_id '' and 0 GPUs: the hours with reads, whether or not anything waited.
CREATE TABLE IF NOT EXISTS queue_pending
(
    ts          DateTime('UTC'),
    interval_s  UInt32,
    scheduler   LowCardinality(String),          -- slurm | kubernetes
    cluster     LowCardinality(String),
    queue       LowCardinality(String),
    pool        LowCardinality(String),
    team        LowCardinality(String),          -- Slurm account; the pod's team label
    user        LowCardinality(String),
    job_id      String,                          -- Slurm job id; namespace/pod
    gpus        Float64,
    gpu_model   LowCardinality(String),          -- the GRES type or MIG profile asked for ('' = any)
    reason      LowCardinality(String),          -- why it waits (Slurm's Reason; PodScheduled's reason)
    submitted   DateTime('UTC')                  -- when it could first run: eligible time, else submit time
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(ts)
ORDER BY (scheduler, cluster, job_id, ts)
TTL ts + INTERVAL 400 DAY
SETTINGS ttl_only_drop_parts = 1, non_replicated_deduplication_window = 10000;  -- a retried read is stored once

-- The hourly rollup, kept at insert time: one row per job and hour it waited in. Read it grouped
-- (SimpleAggregateFunction columns fold on merges):
--   pending GPUs of an hour       = sum(pending_gpu_hours) over its rows (GPU-hours in one hour)
--   a job's wait (as last seen)   = max(last_seen) - min(submitted) over its rows (job_id != '')
--   the hours the queues were read = the hours with a row (the markers have job_id '')
CREATE TABLE IF NOT EXISTS queue_pending_hour
(
    hour               DateTime('UTC'),
    scheduler          LowCardinality(String),
    cluster            LowCardinality(String),
    pool               LowCardinality(String),
    team               LowCardinality(String),
    job_id             String,
    gpus               SimpleAggregateFunction(max, Float64),
    pending_gpu_hours  SimpleAggregateFunction(sum, Float64),
    submitted          SimpleAggregateFunction(min, DateTime('UTC')),
    last_seen          SimpleAggregateFunction(max, DateTime('UTC'))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (hour, scheduler, cluster, pool, team, job_id)
TTL hour + INTERVAL 800 DAY
SETTINGS non_replicated_deduplication_window = 10000;   -- with the read's token: a retried read counts once

CREATE MATERIALIZED VIEW IF NOT EXISTS queue_pending_hour_mv TO queue_pending_hour AS
SELECT toStartOfHour(q.ts) AS hour, q.scheduler AS scheduler, q.cluster AS cluster, q.pool AS pool,
       q.team AS team, q.job_id AS job_id, max(q.gpus) AS gpus,
       sum(q.gpus * q.interval_s / 3600) AS pending_gpu_hours, min(q.submitted) AS submitted,
       max(q.ts) AS last_seen
FROM queue_pending AS q
GROUP BY hour, scheduler, cluster, pool, team, job_id;
