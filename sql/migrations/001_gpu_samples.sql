-- One row per GPU (or MIG instance) per sample.
-- Identity of a GPU entity: (host, gpu_uuid, mig_instance); mig_instance = '' for a whole GPU.
-- Nullable telemetry: NULL means "not reported / not supported", never zero.
CREATE TABLE IF NOT EXISTS gpu_samples
(
    ts                        DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    environment               LowCardinality(String),            -- onprem | aws | gcp | azure | ...
    region                    LowCardinality(String),            -- cloud region or on-prem site
    cluster                   LowCardinality(String),
    pool                      LowCardinality(String),
    host                      LowCardinality(String),
    instance_id               LowCardinality(String),            -- cloud instance / ResourceId ('' on-prem)
    instance_type             LowCardinality(String),
    gpu_uuid                  LowCardinality(String),            -- physical GPU
    gpu_index                 UInt16,
    mig_instance              LowCardinality(String),            -- MIG GPU-instance id, '' for the whole GPU
    mig_profile               LowCardinality(String),            -- e.g. 1g.10gb
    model                     LowCardinality(String),
    pci_bus_id                LowCardinality(String),
    driver_version            LowCardinality(String),
    cuda_version              LowCardinality(String),
    image                     LowCardinality(String),            -- container image of the workload, if known
    util_gpu                  Nullable(Float32) CODEC(ZSTD(1)),  -- % of time a kernel ran, averaged over the interval
    util_mem                  Nullable(Float32) CODEC(ZSTD(1)),  -- % memory-controller activity
    mem_used_bytes            Nullable(UInt64) CODEC(ZSTD(1)),
    mem_total_bytes           Nullable(UInt64) CODEC(ZSTD(1)),
    power_w                   Nullable(Float32) CODEC(ZSTD(1)),
    energy_j                  Nullable(Float64) CODEC(ZSTD(1)),  -- total energy counter since driver load
    temperature_c             Nullable(Float32) CODEC(ZSTD(1)),
    sm_clock_mhz              Nullable(UInt32) CODEC(ZSTD(1)),
    mem_clock_mhz             Nullable(UInt32) CODEC(ZSTD(1)),
    throttle_reasons          Nullable(UInt64) CODEC(ZSTD(1)),   -- NVML clocks-event reason bitmask
    ecc_corrected_volatile    Nullable(UInt64) CODEC(ZSTD(1)),
    ecc_uncorrected_volatile  Nullable(UInt64) CODEC(ZSTD(1)),
    ecc_corrected_aggregate   Nullable(UInt64) CODEC(ZSTD(1)),
    ecc_uncorrected_aggregate Nullable(UInt64) CODEC(ZSTD(1)),
    xid_count                 UInt32 DEFAULT 0,                  -- XID events seen during the interval
    xid_last                  Nullable(UInt32),                  -- code of the last XID seen during the interval
    process_count             Nullable(UInt16),                  -- processes holding the GPU (NULL: unknown)
    team                      LowCardinality(String),
    user                      LowCardinality(String),
    job_id                    LowCardinality(String),
    k8s_namespace             LowCardinality(String),
    k8s_pod                   LowCardinality(String),
    slurm_account             LowCardinality(String),
    source                    LowCardinality(String),            -- nvml | dcgm | remote_write | import | sim

    CONSTRAINT identity_given   CHECK host != '' AND gpu_uuid != '',
    CONSTRAINT ts_plausible     CHECK ts >= '2000-01-01 00:00:00',
    CONSTRAINT util_gpu_percent CHECK util_gpu IS NULL OR (util_gpu >= 0 AND util_gpu <= 100),
    CONSTRAINT util_mem_percent CHECK util_mem IS NULL OR (util_mem >= 0 AND util_mem <= 100),
    CONSTRAINT memory_plausible CHECK mem_used_bytes IS NULL OR mem_total_bytes IS NULL OR mem_used_bytes <= mem_total_bytes,
    CONSTRAINT power_plausible  CHECK power_w IS NULL OR (power_w >= 0 AND power_w < 10000)
)
ENGINE = MergeTree
PARTITION BY toDate(ts)
ORDER BY (host, gpu_uuid, mig_instance, ts)
TTL toDateTime(ts) + INTERVAL 400 DAY
SETTINGS ttl_only_drop_parts = 1, non_replicated_deduplication_window = 10000;

-- Files loaded by `gpuledger ingest samples`: a file already loaded is not loaded twice.
CREATE TABLE IF NOT EXISTS ingested_files
(
    kind        LowCardinality(String),   -- samples | billing
    path        String,
    sha256      FixedString(64),
    rows        UInt64,
    loaded_at   DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(loaded_at)
ORDER BY (kind, sha256);
