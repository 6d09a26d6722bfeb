-- idle_windows partitioned by the month of a window's start, so a rollup swaps whole partitions
-- (REPLACE PARTITION) like every other derived table instead of deleting rows. The table is
-- derived: it is rebuilt, and derivation_state is emptied so the next `gpuledger rollup`
-- recomputes every day (and with them every idle window).
DROP TABLE IF EXISTS idle_windows;

CREATE TABLE IF NOT EXISTS idle_windows
(
    host                 LowCardinality(String),
    gpu_uuid             LowCardinality(String),
    mig_instance         LowCardinality(String),
    start                DateTime('UTC'),
    end                  DateTime('UTC'),
    duration_s           UInt32,
    kind                 LowCardinality(String),  -- allocated | unallocated
    environment          LowCardinality(String),
    region               LowCardinality(String),
    pool                 LowCardinality(String),
    instance_id          LowCardinality(String),
    model                LowCardinality(String),
    team                 LowCardinality(String),
    user                 LowCardinality(String),
    job_id               LowCardinality(String),
    k8s_namespace        LowCardinality(String),
    k8s_pod              LowCardinality(String),
    slurm_account        LowCardinality(String),
    avg_util_gpu         Float32,
    avg_util_mem         Float32,
    cost_usd             Float64,
    computed_at          DateTime('UTC') DEFAULT now()
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(start)
ORDER BY (host, gpu_uuid, mig_instance, start);

TRUNCATE TABLE IF EXISTS derivation_state;
