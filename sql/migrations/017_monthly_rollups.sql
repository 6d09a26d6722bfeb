-- The daily rollups that pages and finance read over weeks and months, partitioned by month
-- instead of by day. A query opens every part it reads; one part per day made each query over
-- 90 days pay ~10 ms for opening parts alone (1,024 GPUs × 90 days, docs/dashboard.md), against
-- 3 or 4 parts now. A day is still derived and swapped in atomically: the derivation copies the
-- month's other days into its staging table and replaces the month's partition
-- (ingest/rollup/replace.py MONTHLY).
--
-- Each table is rebuilt under a new name with every row, then exchanged for the old one in one
-- step; a migration stopped half-way is re-run from the start (its first statement drops the copy).

DROP TABLE IF EXISTS gpu_cost_day_by_month SYNC;
CREATE TABLE gpu_cost_day_by_month
(
    day Date,
    host LowCardinality(String),
    gpu_uuid LowCardinality(String),
    mig_instance LowCardinality(String),
    environment LowCardinality(String),
    region LowCardinality(String),
    pool LowCardinality(String),
    instance_id LowCardinality(String),
    instance_type LowCardinality(String),
    model LowCardinality(String),
    driver_version LowCardinality(String),
    cuda_version LowCardinality(String),
    team LowCardinality(String),
    held UInt8,
    gpu_hours Float64,
    utilized_gpu_hours Float64,
    energy_kwh Float64,
    cloud_gpu_usd Float64,
    onprem_capital_usd Float64,
    onprem_operations_usd Float64,
    onprem_energy_usd Float64,
    cost_usd Float64,
    estimated UInt8
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (environment, pool, host, gpu_uuid, mig_instance, team, day);
INSERT INTO gpu_cost_day_by_month SELECT * FROM gpu_cost_day;
EXCHANGE TABLES gpu_cost_day AND gpu_cost_day_by_month;
DROP TABLE gpu_cost_day_by_month SYNC;

DROP TABLE IF EXISTS team_demand_hour_by_month SYNC;
CREATE TABLE team_demand_hour_by_month
(
    hour DateTime('UTC'),
    team LowCardinality(String),
    environment LowCardinality(String),
    held UInt8,
    gpu_hours Float64,
    utilized_gpu_hours Float64,
    cost_usd Float64
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (team, environment, hour);
INSERT INTO team_demand_hour_by_month SELECT * FROM team_demand_hour;
EXCHANGE TABLES team_demand_hour AND team_demand_hour_by_month;
DROP TABLE team_demand_hour_by_month SYNC;

DROP TABLE IF EXISTS team_spend_day_by_month SYNC;
CREATE TABLE team_spend_day_by_month
(
    day Date,
    team LowCardinality(String),
    environment LowCardinality(String),
    cost_kind LowCardinality(String),
    currency LowCardinality(String),
    cost Float64,
    estimated_cost Float64,
    gpu_hours Float64,
    utilized_gpu_hours Float64
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (team, environment, cost_kind, currency, day);
INSERT INTO team_spend_day_by_month SELECT * FROM team_spend_day;
EXCHANGE TABLES team_spend_day AND team_spend_day_by_month;
DROP TABLE team_spend_day_by_month SYNC;

DROP TABLE IF EXISTS gpu_waste_day_by_month SYNC;
CREATE TABLE gpu_waste_day_by_month
(
    day Date,
    host LowCardinality(String),
    gpu_uuid LowCardinality(String),
    mig_instance LowCardinality(String),
    environment LowCardinality(String),
    region LowCardinality(String),
    pool LowCardinality(String),
    model LowCardinality(String),
    team LowCardinality(String),
    user LowCardinality(String),
    job_id LowCardinality(String),
    k8s_namespace LowCardinality(String),
    gpu_hours Float64,
    cost_usd Float64,
    idle_allocated_usd Float64,
    idle_unallocated_usd Float64,
    unused_usd Float64,
    no_data_usd Float64
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (team, environment, pool, host, gpu_uuid, mig_instance, day);
INSERT INTO gpu_waste_day_by_month SELECT * FROM gpu_waste_day;
EXCHANGE TABLES gpu_waste_day AND gpu_waste_day_by_month;
DROP TABLE gpu_waste_day_by_month SYNC;

DROP TABLE IF EXISTS showback_focus_day_by_month SYNC;
CREATE TABLE showback_focus_day_by_month
(
    day Date,
    BillingPeriodStart DateTime('UTC'),
    BillingPeriodEnd DateTime('UTC'),
    ChargePeriodStart DateTime('UTC'),
    ChargePeriodEnd DateTime('UTC'),
    BillingAccountId LowCardinality(String),
    BillingAccountName LowCardinality(String),
    SubAccountId LowCardinality(String),
    SubAccountName LowCardinality(String),
    ProviderName LowCardinality(String),
    PublisherName LowCardinality(String),
    InvoiceIssuerName LowCardinality(String),
    InvoiceId String,
    BilledCost Float64,
    EffectiveCost Float64,
    ListCost Nullable(Float64),
    ContractedCost Nullable(Float64),
    BillingCurrency LowCardinality(String),
    ChargeCategory LowCardinality(String),
    ChargeClass LowCardinality(String),
    ChargeDescription String,
    ChargeFrequency LowCardinality(String),
    PricingCategory LowCardinality(String),
    PricingQuantity Nullable(Float64),
    PricingUnit LowCardinality(String),
    ListUnitPrice Nullable(Float64),
    ContractedUnitPrice Nullable(Float64),
    ConsumedQuantity Nullable(Float64),
    ConsumedUnit LowCardinality(String),
    CommitmentDiscountId String,
    CommitmentDiscountCategory LowCardinality(String),
    CommitmentDiscountType LowCardinality(String),
    CommitmentDiscountStatus LowCardinality(String),
    CapacityReservationId String,
    RegionId LowCardinality(String),
    RegionName LowCardinality(String),
    AvailabilityZone LowCardinality(String),
    ResourceId String,
    ResourceName String,
    ResourceType LowCardinality(String),
    ServiceCategory LowCardinality(String),
    ServiceSubcategory LowCardinality(String),
    ServiceName LowCardinality(String),
    SkuId String,
    SkuPriceId String,
    SkuMeter LowCardinality(String),
    Tags Map(String, String),
    x_Team LowCardinality(String),
    x_AllocationMethod LowCardinality(String),
    x_AttributedBy LowCardinality(String),
    x_AllocationShare Float64,
    x_Environment LowCardinality(String),
    x_CostComponent LowCardinality(String),
    x_GpuHours Float64,
    x_IdleAllocatedCost Float64,
    x_IdleUnallocatedCost Float64,
    x_UnusedCost Float64,
    x_WasteCost Float64,
    x_NoDataCost Float64,
    x_Estimated UInt8,
    x_LineItemKey String,
    x_SourceFile String,
    x_SourceRow UInt64
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (x_Team, ProviderName, BillingAccountId, ServiceName, ChargePeriodStart);
INSERT INTO showback_focus_day_by_month SELECT * FROM showback_focus_day;
EXCHANGE TABLES showback_focus_day AND showback_focus_day_by_month;
DROP TABLE showback_focus_day_by_month SYNC;
