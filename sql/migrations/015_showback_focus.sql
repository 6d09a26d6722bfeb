-- FOCUS showback of the whole fleet (issue #17): every cloud bill line and every on-prem GPU
-- cost, attributed to teams, in FOCUS columns. See sql/README.md "FOCUS showback".

-- Each USD bill line of an instance with GPU telemetry, spread over the hours of its charge
-- period by the instance's GPU-seconds (MIG instances by their slices): what gpu_cost_hour's
-- cloud cost is made of, kept per line so a line's cost can be followed to the teams that used it.
-- `weight` is the instance's GPU-seconds in the hour (the same on every line of that hour).
CREATE TABLE IF NOT EXISTS billing_line_hour
(
    hour           DateTime('UTC'),
    instance_key   String,
    line_item_key  FixedString(32),
    share          Float64,          -- the part of the line's charge period this hour carries
    cost           Float64,          -- the line's EffectiveCost × share
    weight         Float64
)
ENGINE = MergeTree
PARTITION BY toDate(hour)
ORDER BY (instance_key, hour, line_item_key);

-- One row per UTC day, team and charge: a bill line's share of the day attributed to a team
-- (cloud), or one cost component of an on-prem GPU entity (x_CostComponent). Amounts are the
-- team's share of the line (x_AllocationShare of it); `v_showback_focus` reads this table.
CREATE TABLE IF NOT EXISTS showback_focus_day
(
    day                          Date,
    BillingPeriodStart           DateTime('UTC'),
    BillingPeriodEnd             DateTime('UTC'),
    ChargePeriodStart            DateTime('UTC'),
    ChargePeriodEnd              DateTime('UTC'),
    BillingAccountId             LowCardinality(String),
    BillingAccountName           LowCardinality(String),
    SubAccountId                 LowCardinality(String),
    SubAccountName               LowCardinality(String),
    ProviderName                 LowCardinality(String),
    PublisherName                LowCardinality(String),
    InvoiceIssuerName            LowCardinality(String),
    InvoiceId                    String,
    BilledCost                   Float64,
    EffectiveCost                Float64,
    ListCost                     Nullable(Float64),
    ContractedCost               Nullable(Float64),
    BillingCurrency              LowCardinality(String),
    ChargeCategory               LowCardinality(String),
    ChargeClass                  LowCardinality(String),
    ChargeDescription            String,
    ChargeFrequency              LowCardinality(String),
    PricingCategory              LowCardinality(String),
    PricingQuantity              Nullable(Float64),
    PricingUnit                  LowCardinality(String),
    ListUnitPrice                Nullable(Float64),
    ContractedUnitPrice          Nullable(Float64),
    ConsumedQuantity             Nullable(Float64),
    ConsumedUnit                 LowCardinality(String),
    CommitmentDiscountId         String,
    CommitmentDiscountCategory   LowCardinality(String),
    CommitmentDiscountType       LowCardinality(String),
    CommitmentDiscountStatus     LowCardinality(String),
    CapacityReservationId        String,
    RegionId                     LowCardinality(String),
    RegionName                   LowCardinality(String),
    AvailabilityZone             LowCardinality(String),
    ResourceId                   String,
    ResourceName                 String,
    ResourceType                 LowCardinality(String),
    ServiceCategory              LowCardinality(String),
    ServiceSubcategory           LowCardinality(String),
    ServiceName                  LowCardinality(String),
    SkuId                        String,
    SkuPriceId                   String,
    SkuMeter                     LowCardinality(String),
    Tags                         Map(String, String),
    x_Team                       LowCardinality(String),
    x_AllocationMethod           LowCardinality(String),   -- gpu-time | rule | list-price-estimate | on-prem-cost-model
    x_AttributedBy               LowCardinality(String),   -- the attribution rule(s) that decided the team
    x_AllocationShare            Float64,                  -- the part of the line this row carries (1 = all of it)
    x_Environment                LowCardinality(String),   -- gpuledger's environment: onprem, aws, gcp, azure, ...
    x_CostComponent              LowCardinality(String),   -- cloud_gpu | cloud_other | onprem_capital | onprem_operations | onprem_energy
    x_GpuHours                   Float64,
    x_IdleAllocatedCost          Float64,
    x_IdleUnallocatedCost        Float64,
    x_UnusedCost                 Float64,
    x_WasteCost                  Float64,
    x_NoDataCost                 Float64,
    x_Estimated                  UInt8,
    x_LineItemKey                String,                   -- billing_line_items.line_item_key ('' for on-prem and estimates)
    x_SourceFile                 String,
    x_SourceRow                  UInt64
)
ENGINE = MergeTree
PARTITION BY day
ORDER BY (x_Team, ProviderName, BillingAccountId, ServiceName, ChargePeriodStart);
