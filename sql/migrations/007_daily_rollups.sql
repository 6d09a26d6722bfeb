-- Smaller derived tables for pages and queries over long ranges (written with gpu_cost_hour,
-- one day at a time, by the scheduler).

-- gpu_cost_hour per day: one row per GPU entity, day and owner, with its runtime versions.
CREATE TABLE IF NOT EXISTS gpu_cost_day
(
    day                   Date,
    host                  LowCardinality(String),
    gpu_uuid              LowCardinality(String),
    mig_instance          LowCardinality(String),
    environment           LowCardinality(String),
    region                LowCardinality(String),
    pool                  LowCardinality(String),
    instance_id           LowCardinality(String),
    instance_type         LowCardinality(String),
    model                 LowCardinality(String),
    driver_version        LowCardinality(String),
    cuda_version          LowCardinality(String),
    team                  LowCardinality(String),
    held                  UInt8,
    gpu_hours             Float64,
    utilized_gpu_hours    Float64,
    energy_kwh            Float64,
    cloud_gpu_usd         Float64,
    onprem_capital_usd    Float64,
    onprem_operations_usd Float64,
    onprem_energy_usd     Float64,
    cost_usd              Float64,
    estimated             UInt8
)
ENGINE = MergeTree
PARTITION BY day
ORDER BY (environment, pool, host, gpu_uuid, mig_instance, team, day);

-- Each team's GPU demand per hour and environment (placement: baseline vs burst).
CREATE TABLE IF NOT EXISTS team_demand_hour
(
    hour                  DateTime('UTC'),
    team                  LowCardinality(String),
    environment           LowCardinality(String),
    held                  UInt8,
    gpu_hours             Float64,
    utilized_gpu_hours    Float64,
    cost_usd              Float64
)
ENGINE = MergeTree
PARTITION BY toDate(hour)
ORDER BY (team, environment, hour);
