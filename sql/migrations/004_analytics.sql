-- Derived tables, written by the scheduler (ingest/analytics/). Each day of each table is
-- recomputed as a whole and swapped in with REPLACE PARTITION, so a re-run is idempotent and
-- nothing is ever double counted; no FINAL is needed to read them.
--
-- Time weighting: a sample holds until the next one; a gap longer than the configured limit is
-- *no data* (it counts in neither busy nor idle time). The *_s columns are sums of
-- value × seconds, so averages at any level are  sum(x_s) / sum(x_covered_s).

-- One row per GPU entity (host, gpu_uuid, mig_instance) per minute; the owner is the one that
-- held the GPU for most of that minute.
CREATE TABLE IF NOT EXISTS gpu_minute
(
    minute               DateTime('UTC'),
    host                 LowCardinality(String),
    gpu_uuid             LowCardinality(String),
    mig_instance         LowCardinality(String),
    mig_profile          LowCardinality(String),
    environment          LowCardinality(String),
    region               LowCardinality(String),
    cluster              LowCardinality(String),
    pool                 LowCardinality(String),
    instance_id          LowCardinality(String),
    instance_key         String,                -- instance_id normalised like billing's resource_key
    instance_type        LowCardinality(String),
    model                LowCardinality(String),
    driver_version       LowCardinality(String),
    cuda_version         LowCardinality(String),
    image                LowCardinality(String),
    team                 LowCardinality(String),
    user                 LowCardinality(String),
    job_id               LowCardinality(String),
    k8s_namespace        LowCardinality(String),
    k8s_pod              LowCardinality(String),
    slurm_account        LowCardinality(String),
    held                 UInt8,                 -- a process or job held the GPU
    samples              UInt32,                -- samples whose time falls in this minute
    covered_s            Float32,               -- seconds with data
    util_covered_s       Float32,
    util_gpu_s           Float64,
    util_mem_covered_s   Float32,
    util_mem_s           Float64,
    mem_covered_s        Float32,
    mem_used_s           Float64,
    mem_total_bytes      UInt64,
    power_covered_s      Float32,
    energy_j             Float64,               -- ∫ power dt over covered time
    temperature_max      Nullable(Float32),
    xid_count            UInt32,
    xid_last             Nullable(UInt32),
    ecc_uncorrected_max  Nullable(UInt64),
    ecc_corrected_max    Nullable(UInt64),
    throttle_reasons     UInt64                 -- OR of clocks-event reasons seen
)
ENGINE = MergeTree
PARTITION BY toDate(minute)
ORDER BY (host, gpu_uuid, mig_instance, minute)
TTL minute + INTERVAL 400 DAY
SETTINGS ttl_only_drop_parts = 1;

-- The same, per hour (from gpu_minute). Kept for the life of the store.
CREATE TABLE IF NOT EXISTS gpu_hour
(
    hour                 DateTime('UTC'),
    host                 LowCardinality(String),
    gpu_uuid             LowCardinality(String),
    mig_instance         LowCardinality(String),
    mig_profile          LowCardinality(String),
    environment          LowCardinality(String),
    region               LowCardinality(String),
    cluster              LowCardinality(String),
    pool                 LowCardinality(String),
    instance_id          LowCardinality(String),
    instance_key         String,                -- instance_id normalised like billing's resource_key
    instance_type        LowCardinality(String),
    model                LowCardinality(String),
    driver_version       LowCardinality(String),
    cuda_version         LowCardinality(String),
    image                LowCardinality(String),
    team                 LowCardinality(String),
    user                 LowCardinality(String),
    job_id               LowCardinality(String),
    k8s_namespace        LowCardinality(String),
    k8s_pod              LowCardinality(String),
    slurm_account        LowCardinality(String),
    held                 UInt8,                 -- a process or job held the GPU
    samples              UInt32,                -- samples whose time falls in this hour
    covered_s            Float32,               -- seconds with data
    util_covered_s       Float32,
    util_gpu_s           Float64,
    util_mem_covered_s   Float32,
    util_mem_s           Float64,
    mem_covered_s        Float32,
    mem_used_s           Float64,
    mem_total_bytes      UInt64,
    power_covered_s      Float32,
    energy_j             Float64,               -- ∫ power dt over covered time
    temperature_max      Nullable(Float32),
    xid_count            UInt32,
    xid_last             Nullable(UInt32),
    ecc_uncorrected_max  Nullable(UInt64),
    ecc_corrected_max    Nullable(UInt64),
    throttle_reasons     UInt64                 -- OR of clocks-event reasons seen
)
ENGINE = MergeTree
PARTITION BY toDate(hour)
ORDER BY (host, gpu_uuid, mig_instance, hour);

-- Cost of every GPU-hour, per owner, after attribution: one row per GPU entity, hour and owner.
-- Cloud: billed EffectiveCost (USD lines) of the instance, split across its GPUs by covered
-- time; estimated = 1 when billing has not arrived and the list price stands in.
-- On-prem: capital / depreciation + operations (per GPU, MIG instances by slice share) and
-- measured energy × PUE × tariff.
CREATE TABLE IF NOT EXISTS gpu_cost_hour
(
    hour                  DateTime('UTC'),
    host                  LowCardinality(String),
    gpu_uuid              LowCardinality(String),
    mig_instance          LowCardinality(String),
    environment           LowCardinality(String),
    region                LowCardinality(String),
    pool                  LowCardinality(String),
    instance_id           LowCardinality(String),
    instance_type         LowCardinality(String),
    model                 LowCardinality(String),
    team                  LowCardinality(String),  -- after attribution; 'unallocated' when no rule claims it
    attributed_by         LowCardinality(String),  -- the rule that decided the team ('' for unallocated)
    user                  LowCardinality(String),
    job_id                LowCardinality(String),
    held                  UInt8,
    gpu_hours             Float64,                 -- covered hours (× MIG slice share)
    utilized_gpu_hours    Float64,                 -- gpu_hours × average GPU utilization
    energy_kwh            Float64,                 -- measured, before PUE
    cloud_gpu_usd         Float64,
    onprem_capital_usd    Float64,
    onprem_operations_usd Float64,
    onprem_energy_usd     Float64,
    cost_usd              Float64,                 -- the sum of the four above
    estimated             UInt8
)
ENGINE = MergeTree
PARTITION BY toDate(hour)
ORDER BY (team, environment, host, gpu_uuid, mig_instance, hour);

-- Spend per team and day, by environment and cost kind: GPU cost plus the rest of the cloud bill
-- (storage, egress, ...) attributed to teams. Only USD rows are summed here; other billing
-- currencies are kept apart in currency.
CREATE TABLE IF NOT EXISTS team_spend_day
(
    day                  Date,
    team                 LowCardinality(String),
    environment          LowCardinality(String),
    cost_kind            LowCardinality(String),  -- cloud_gpu, cloud_other, onprem_capital, onprem_operations, onprem_energy
    currency             LowCardinality(String),
    cost                 Float64,
    estimated_cost       Float64,                 -- part of cost that is a list-price estimate
    gpu_hours            Float64,
    utilized_gpu_hours   Float64
)
ENGINE = MergeTree
PARTITION BY day
ORDER BY (team, environment, cost_kind, currency, day);

-- Maximal runs of low utilization; see DESIGN.md "Idle window".
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
ORDER BY (host, gpu_uuid, mig_instance, start);

-- Findings of the compliance policies, with their evidence (JSON rows).
CREATE TABLE IF NOT EXISTS compliance_findings
(
    policy               LowCardinality(String),  -- residency | untagged_spend | runtime_drift | gpu_health
    finding_key          String,                  -- stable identity of the finding
    severity             LowCardinality(String),  -- critical | warning | info
    team                 LowCardinality(String),
    environment          LowCardinality(String),
    provider             LowCardinality(String),
    region               LowCardinality(String),
    pool                 LowCardinality(String),
    host                 LowCardinality(String),
    gpu_uuid             LowCardinality(String),
    resource_id          String,
    summary              String,
    evidence             String,                  -- JSON array of the rows that prove it
    cost_usd             Float64,
    first_seen           DateTime('UTC'),
    last_seen            DateTime('UTC'),
    computed_at          DateTime('UTC') DEFAULT now()
)
ENGINE = MergeTree
ORDER BY (policy, finding_key);

-- What the scheduler has derived: per day, the sample rows and billing fingerprint it saw, so
-- late samples or a restated bill make it recompute that day on its own.
CREATE TABLE IF NOT EXISTS derivation_state
(
    day                  Date,
    sample_rows          UInt64,
    billing_fingerprint  UInt64,
    config_fingerprint   UInt64,
    computed_at          DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY day;

-- Configuration snapshots the SQL joins against (rewritten from config on every run).
CREATE TABLE IF NOT EXISTS config_pools
(
    pool                 String,
    environment          String,
    idle_util_gpu_pct    Float32,
    idle_util_mem_pct    Float32,
    idle_min_minutes     UInt32,
    capital_usd_per_gpu  Float64,
    depreciation_months  UInt32,
    operations_usd_per_gpu_month Float64,
    pue                  Float32,
    energy_usd_per_kwh   Float64,
    baseline_driver      String,
    baseline_cuda        String
)
ENGINE = ReplacingMergeTree
ORDER BY pool;

CREATE TABLE IF NOT EXISTS config_teams
(
    team                 String,
    budget_usd_month     Float64,
    contact              String
)
ENGINE = ReplacingMergeTree
ORDER BY team;

CREATE TABLE IF NOT EXISTS config_list_prices
(
    instance_type        String,
    gpus                 UInt16,
    usd_per_hour         Float64
)
ENGINE = ReplacingMergeTree
ORDER BY instance_type;
