-- idle_windows exact to the sample (times in ms, as samples are) and partitioned by the month of
-- a window's start, so a rollup swaps whole partitions (REPLACE PARTITION) like every other derived
-- table instead of deleting rows; gpu_idle_segments, the idle time they are stitched from; and
-- waste in money per GPU-hour and per GPU and day (DESIGN.md "Waste"). All are derived:
-- derivation_state is emptied so the next `gpuledger rollup` recomputes every day.
DROP TABLE IF EXISTS idle_windows;

CREATE TABLE IF NOT EXISTS idle_windows
(
    host                 LowCardinality(String),
    gpu_uuid             LowCardinality(String),
    mig_instance         LowCardinality(String),
    start                DateTime64(3, 'UTC'),       -- the first idle sample's time
    end                  DateTime64(3, 'UTC'),       -- when the last idle sample stops holding
    duration_s           Float64,                    -- end - start, bridged no-data gaps included
    covered_s            Float64,                    -- seconds with data inside the window
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

-- Idle time per GPU entity and hour: each row is a maximal run of idle samples (held until the
-- next one) within one hour, with what it cost. idle_windows are stitched from these runs.
CREATE TABLE IF NOT EXISTS gpu_idle_segments
(
    hour                 DateTime('UTC'),
    host                 LowCardinality(String),
    gpu_uuid             LowCardinality(String),
    mig_instance         LowCardinality(String),
    start                DateTime64(3, 'UTC'),
    end                  DateTime64(3, 'UTC'),
    -- where the idle time before this run ended when no busy sample and no owner change lies
    -- between (the run continues it, across a no-data gap of start - joins_at); NULL otherwise
    joins_at             Nullable(DateTime64(3, 'UTC')),
    covered_s            Float64,
    util_gpu_s           Float64,
    util_mem_s           Float64,
    cost_usd             Float64,                -- covered_s at the GPU-hour's cost per covered second
    environment          LowCardinality(String),
    region               LowCardinality(String),
    pool                 LowCardinality(String),
    instance_id          LowCardinality(String),
    model                LowCardinality(String),
    held                 UInt8,
    team                 LowCardinality(String),
    user                 LowCardinality(String),
    job_id               LowCardinality(String),
    k8s_namespace        LowCardinality(String),
    k8s_pod              LowCardinality(String),
    slurm_account        LowCardinality(String)
)
ENGINE = MergeTree
PARTITION BY toDate(hour)
ORDER BY (host, gpu_uuid, mig_instance, start);

-- Waste per GPU-hour (DESIGN.md "Waste"; the formula is in sql/README.md): the hour's cost, the
-- part of it inside idle windows (allocated / unallocated), the unused part outside them, and
-- what the hour's time without data would cost at the same rate (shown apart, never waste).
CREATE TABLE IF NOT EXISTS gpu_waste_hour
(
    hour                  DateTime('UTC'),
    host                  LowCardinality(String),
    gpu_uuid              LowCardinality(String),
    mig_instance          LowCardinality(String),
    environment           LowCardinality(String),
    region                LowCardinality(String),
    pool                  LowCardinality(String),
    model                 LowCardinality(String),
    team                  LowCardinality(String),  -- after attribution, as in gpu_cost_hour
    user                  LowCardinality(String),
    job_id                LowCardinality(String),
    k8s_namespace         LowCardinality(String),
    held                  UInt8,
    covered_s             Float64,                 -- seconds with data
    cost_usd              Float64,                 -- the GPU-hour's cost (gpu_cost_hour)
    idle_allocated_s      Float64,                 -- covered seconds inside allocated idle windows
    idle_unallocated_s    Float64,
    idle_allocated_usd    Float64,
    idle_unallocated_usd  Float64,
    unused_usd            Float64,                 -- outside idle windows: cost × (1 - utilization)
    no_data_s             Float64,                 -- 3600 - covered_s
    no_data_usd           Float64                  -- no_data_s at the hour's cost per covered second
)
ENGINE = MergeTree
PARTITION BY toDate(hour)
ORDER BY (team, environment, host, gpu_uuid, mig_instance, hour);

-- The same per GPU entity, day and owner: what the dashboard reads.
CREATE TABLE IF NOT EXISTS gpu_waste_day
(
    day                   Date,
    host                  LowCardinality(String),
    gpu_uuid              LowCardinality(String),
    mig_instance          LowCardinality(String),
    environment           LowCardinality(String),
    region                LowCardinality(String),
    pool                  LowCardinality(String),
    model                 LowCardinality(String),
    team                  LowCardinality(String),
    user                  LowCardinality(String),
    job_id                LowCardinality(String),
    k8s_namespace         LowCardinality(String),
    gpu_hours             Float64,                 -- covered hours
    cost_usd              Float64,
    idle_allocated_usd    Float64,
    idle_unallocated_usd  Float64,
    unused_usd            Float64,
    no_data_usd           Float64
)
ENGINE = MergeTree
PARTITION BY day
ORDER BY (team, environment, pool, host, gpu_uuid, mig_instance, day);

TRUNCATE TABLE IF EXISTS derivation_state;
