-- Cloud billing in FOCUS (FinOps Open Cost and Usage Specification 1.0 - 1.2) shape.
-- Loaded by `gpuledger ingest billing` and the scheduled API pulls (ingest/billing/load.py); see
-- docs/billing.md for how each provider's columns become these.
--
-- Idempotency: a load replaces, for every (billing month, ProviderName, BillingAccountId) it
-- contains, the whole partition with `ALTER TABLE ... REPLACE PARTITION` from a staging copy.
-- Replacement is exact and atomic per partition, so sums never double, even before merges,
-- and no FINAL is needed.
CREATE TABLE IF NOT EXISTS billing_line_items
(
    BillingPeriodStart                  DateTime64(3, 'UTC'),
    BillingPeriodEnd                    DateTime64(3, 'UTC'),
    ChargePeriodStart                   DateTime64(3, 'UTC'),
    ChargePeriodEnd                     DateTime64(3, 'UTC'),
    BilledCost                          Decimal(38, 12),
    EffectiveCost                       Decimal(38, 12),
    ListCost                            Nullable(Decimal(38, 12)),
    ContractedCost                      Nullable(Decimal(38, 12)),
    ListUnitPrice                       Nullable(Decimal(38, 12)),
    ContractedUnitPrice                 Nullable(Decimal(38, 12)),
    PricingQuantity                     Nullable(Decimal(38, 12)),
    ConsumedQuantity                    Nullable(Decimal(38, 12)),
    CommitmentDiscountQuantity          Nullable(Decimal(38, 12)),
    PricingCurrencyListUnitPrice        Nullable(Decimal(38, 12)),
    PricingCurrencyContractedUnitPrice  Nullable(Decimal(38, 12)),
    PricingCurrencyEffectiveCost        Nullable(Decimal(38, 12)),
    BillingCurrency                     LowCardinality(String),   -- never summed across: group by it
    PricingCurrency                     LowCardinality(String),
    Tags                                Map(String, String),
    AvailabilityZone                    LowCardinality(String),
    BillingAccountId                    LowCardinality(String),
    BillingAccountName                  LowCardinality(String),
    BillingAccountType                  LowCardinality(String),
    CapacityReservationId               String,
    CapacityReservationStatus           LowCardinality(String),
    ChargeCategory                      LowCardinality(String),
    ChargeClass                         LowCardinality(String),
    ChargeDescription                   String,
    ChargeFrequency                     LowCardinality(String),
    CommitmentDiscountCategory          LowCardinality(String),
    CommitmentDiscountId                String,
    CommitmentDiscountName              String,
    CommitmentDiscountStatus            LowCardinality(String),
    CommitmentDiscountType              LowCardinality(String),
    CommitmentDiscountUnit              LowCardinality(String),
    ConsumedUnit                        LowCardinality(String),
    InvoiceId                           String,
    InvoiceIssuerName                   LowCardinality(String),
    PricingCategory                     LowCardinality(String),
    PricingUnit                         LowCardinality(String),
    ProviderName                        LowCardinality(String),
    PublisherName                       LowCardinality(String),
    RegionId                            LowCardinality(String),
    RegionName                          LowCardinality(String),
    ResourceId                          String,
    ResourceName                        String,
    ResourceType                        LowCardinality(String),
    ServiceCategory                     LowCardinality(String),
    ServiceName                         LowCardinality(String),
    ServiceSubcategory                  LowCardinality(String),
    SkuId                               String,
    SkuMeter                            LowCardinality(String),
    SkuPriceDetails                     String,
    SkuPriceId                          String,
    SubAccountId                        LowCardinality(String),
    SubAccountName                      LowCardinality(String),
    SubAccountType                      LowCardinality(String),
    x_extensions                        Map(String, String),      -- provider x_... (and other non-FOCUS) columns
    source_kind                         LowCardinality(String),   -- focus | aws-cur | aws-cost-explorer | azure-actual | azure-amortized | azure-query | gcp-export | gcp-bigquery
    source_file                         String,                   -- file, s3:// object or API pull it came from
    source_row                          UInt64,                   -- 1-based data row in that file (blank lines count)
    line_item_key                       FixedString(32),          -- hex sipHash128 of the line's identity, same across restatements
    load_id                             LowCardinality(String),
    loaded_at                           DateTime64(3, 'UTC'),
    -- ResourceId normalised as in collector/billing/resource_ids.py: matches gpu_samples.instance_id
    resource_key                        String MATERIALIZED multiIf(
        startsWith(lower(trimBoth(ResourceId)), '/subscriptions/'), trim(TRAILING '/' FROM lower(trimBoth(ResourceId))),
        match(trimBoth(ResourceId), '^arn:[^:]+:ec2:[^:]*:[^:]*:instance/[^/]+$'), extract(trimBoth(ResourceId), 'instance/([^/]+)$'),
        match(trimBoth(ResourceId), '/instances/[^/]+$'), extract(trimBoth(ResourceId), '/instances/([^/]+)$'),
        trimBoth(ResourceId)),

    INDEX resource_key_idx resource_key TYPE bloom_filter GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY (toYYYYMM(BillingPeriodStart), ProviderName, BillingAccountId)
ORDER BY (ProviderName, BillingAccountId, SubAccountId, ServiceName, ChargePeriodStart, line_item_key);

-- Rows a load could not use: one row per bad cell, with where it was and why.
CREATE TABLE IF NOT EXISTS billing_quarantine
(
    load_id      LowCardinality(String),
    source_kind  LowCardinality(String),
    source_file  String,
    source_row   UInt64,
    column       LowCardinality(String),
    reason       String,
    value        String,
    raw          Map(String, String),       -- the whole row as read, to fix and reload
    loaded_at    DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(loaded_at)
ORDER BY (source_file, source_row, column)
TTL toDateTime(loaded_at) + INTERVAL 400 DAY;

-- One row per billing load: what it read and which periods it replaced.
CREATE TABLE IF NOT EXISTS billing_loads
(
    load_id      LowCardinality(String),
    source_kind  LowCardinality(String),
    sources      Array(String),
    rows         UInt64,
    quarantined  UInt64,
    periods      Array(String),             -- 'YYYY-MM provider account' replaced by this load
    started_at   DateTime64(3, 'UTC'),
    finished_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY finished_at;
