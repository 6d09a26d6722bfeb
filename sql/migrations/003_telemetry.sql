-- Per-process GPU use and GPU health events, written by the collector agent (NVML) through the
-- ingest spool / batch endpoint. Columns are collector.records.GpuProcess / GpuHealthEvent.
-- Both keep a deduplication window so a batch replayed after a crash (same
-- insert_deduplication_token) is stored once.

-- One row per compute process holding a GPU (or MIG instance) at one sample.
CREATE TABLE IF NOT EXISTS gpu_processes
(
    ts                DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    host              LowCardinality(String),
    gpu_uuid          LowCardinality(String),
    pid               UInt32,
    mig_instance      LowCardinality(String),            -- '' for a whole GPU
    process_name      LowCardinality(String),
    used_memory_bytes Nullable(UInt64) CODEC(ZSTD(1)),
    sm_util           Nullable(Float32) CODEC(ZSTD(1)),  -- % averaged over the interval (NULL on MIG)
    mem_util          Nullable(Float32) CODEC(ZSTD(1)),
    container_id      LowCardinality(String),
    team              LowCardinality(String),
    user              LowCardinality(String),
    job_id            LowCardinality(String),
    k8s_namespace     LowCardinality(String),
    k8s_pod           LowCardinality(String),
    slurm_account     LowCardinality(String),

    CONSTRAINT process_identity CHECK host != '' AND gpu_uuid != ''
)
ENGINE = MergeTree
PARTITION BY toDate(ts)
ORDER BY (host, gpu_uuid, mig_instance, ts, pid)
TTL toDateTime(ts) + INTERVAL 400 DAY
SETTINGS ttl_only_drop_parts = 1, non_replicated_deduplication_window = 10000;

-- Something that happened to a GPU: gpu_lost, gpu_recovered, xid (code = XID number).
CREATE TABLE IF NOT EXISTS gpu_health_events
(
    ts           DateTime64(3, 'UTC'),
    host         LowCardinality(String),
    gpu_uuid     LowCardinality(String),
    kind         LowCardinality(String),                 -- gpu_lost | gpu_recovered | xid
    gpu_index    UInt16,
    mig_instance LowCardinality(String),
    code         Nullable(UInt32),                       -- XID number, or the NVML error code
    detail       String
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (host, gpu_uuid, ts, kind)
SETTINGS non_replicated_deduplication_window = 10000;
