-- showback_focus_day for the UTC days from {from:DateTime} through {day:Date}: each day's cost of
-- the whole fleet in FOCUS columns, attributed to teams (sql/README.md "FOCUS showback"). Four kinds of row:
--   gpu-time             a bill line spread over GPU-hours (billing_line_hour), its part in each
--                        hour split among the teams that held the instance's GPUs as gpu_cost_hour
--                        split it: one row per line and team, the line's own FOCUS columns, its
--                        amounts × x_AllocationShare;
--   rule                 a bill line not spread over GPU-hours (storage, egress, an instance with
--                        no telemetry, a non-USD line), whole, to the team the attribution rules
--                        give it (bill_line_team.sql), on the day its charge period starts, as in
--                        team_spend_day;
--   list-price-estimate  cloud GPU-hours whose bill has not arrived, at list price (x_Estimated);
--   on-prem-cost-model   on-prem GPU cost per GPU entity, team and component (amortized capital,
--                        operations, measured energy), ProviderName 'On-premises'.
-- The waste columns are the team's waste (gpu_waste_hour) carried by the row: for a line, in
-- proportion to the line's part of each instance-hour's billed cost; for an on-prem component,
-- in proportion to the component's part of the GPU-hour's cost.
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1,
    -- the GPU cost and waste per GPU entity, hour and team
    owned AS
    (
        SELECT c.*, w.idle_allocated_usd, w.idle_unallocated_usd, w.unused_usd, w.no_data_usd
        FROM
        (
            SELECT hour, host, gpu_uuid, mig_instance, team, any(environment) AS environment, any(region) AS region,
                any(pool) AS pool, any(instance_id) AS instance_id, any(instance_type) AS instance_type,
                any(model) AS model, max(estimated) AS estimated, groupUniqArray(attributed_by) AS rules,
                sum(gpu_hours) AS gpu_hours, sum(energy_kwh) AS energy_kwh, sum(cloud_gpu_usd) AS cloud_gpu_usd,
                sum(onprem_capital_usd) AS onprem_capital_usd, sum(onprem_operations_usd) AS onprem_operations_usd,
                sum(onprem_energy_usd) AS onprem_energy_usd, sum(cost_usd) AS cost_usd
            FROM gpu_cost_hour
            WHERE hour >= d0 AND hour < d1
            GROUP BY hour, host, gpu_uuid, mig_instance, team
        ) AS c
        LEFT JOIN
        (
            SELECT hour, host, gpu_uuid, mig_instance, team, sum(idle_allocated_usd) AS idle_allocated_usd,
                sum(idle_unallocated_usd) AS idle_unallocated_usd, sum(unused_usd) AS unused_usd, sum(no_data_usd) AS no_data_usd
            FROM gpu_waste_hour
            WHERE hour >= d0 AND hour < d1
            GROUP BY hour, host, gpu_uuid, mig_instance, team
        ) AS w USING (hour, host, gpu_uuid, mig_instance, team)
    ),
    -- billed cloud GPU cost per instance, hour and team (the instance key as billing matches it)
    team_hour AS
    (
        SELECT k.instance_key AS instance_key, o.hour AS hour, o.team AS team, groupUniqArrayArray(o.rules) AS rules,
            sum(o.cloud_gpu_usd) AS usd, sum(o.gpu_hours) AS gpu_hours, sum(o.idle_allocated_usd) AS idle_allocated_usd,
            sum(o.idle_unallocated_usd) AS idle_unallocated_usd, sum(o.unused_usd) AS unused_usd, sum(o.no_data_usd) AS no_data_usd
        FROM owned AS o
        INNER JOIN
        (
            SELECT DISTINCT hour, host, gpu_uuid, instance_key FROM gpu_hour
            WHERE hour >= d0 AND hour < d1 AND instance_key != ''
        ) AS k ON k.hour = o.hour AND k.host = o.host AND k.gpu_uuid = o.gpu_uuid
        WHERE o.estimated = 0 AND o.environment NOT IN ('onprem', '')
        GROUP BY instance_key, hour, team
    ),
    -- each line's part in each hour, split among the teams by their share of the hour's billed cost
    -- (by GPU-hours where that is 0), and the team's GPU-hours and waste by the line's part of it
    line_parts AS
    (
        SELECT toDate(lh.hour) AS day, lh.line_item_key AS line_item_key, th.team AS team,
            arrayStringConcat(arraySort(arrayFilter(r -> r != '', groupUniqArrayArray(th.rules))), ', ') AS attributed_by,
            'gpu-time' AS method, 'cloud_gpu' AS component,
            sum(lh.share * if(t.usd != 0, th.usd / t.usd, th.gpu_hours / t.gpu_hours)) AS share,
            sum(th.gpu_hours * (if(b.cost != 0, lh.cost / b.cost, 1 / b.lines) AS line_part)) AS gpu_hours, sum(th.idle_allocated_usd * line_part) AS idle_allocated_usd,
            sum(th.idle_unallocated_usd * line_part) AS idle_unallocated_usd, sum(th.unused_usd * line_part) AS unused_usd,
            sum(th.no_data_usd * line_part) AS no_data_usd, min(lh.hour) AS first_hour, max(lh.hour) + INTERVAL 1 HOUR AS end_hour
        FROM billing_line_hour AS lh
        INNER JOIN team_hour AS th ON th.instance_key = lh.instance_key AND th.hour = lh.hour
        INNER JOIN
        (
            SELECT instance_key, hour, sum(usd) AS usd, sum(gpu_hours) AS gpu_hours FROM team_hour GROUP BY instance_key, hour
        ) AS t ON t.instance_key = lh.instance_key AND t.hour = lh.hour
        INNER JOIN
        (
            SELECT instance_key, hour, sum(cost) AS cost, count() AS lines FROM billing_line_hour
            WHERE hour >= d0 AND hour < d1 GROUP BY instance_key, hour
        ) AS b ON b.instance_key = lh.instance_key AND b.hour = lh.hour
        WHERE lh.hour >= d0 AND lh.hour < d1
        GROUP BY day, line_item_key, team
    ),
    whole_lines AS
    (
        SELECT toDate(ChargePeriodStart, 'UTC') AS day, line_item_key, attribution.1 AS team,
            attribution.2 AS attributed_by, 'rule' AS method,
            'cloud_other' AS component, 1. AS share, 0. AS gpu_hours, 0. AS idle_allocated_usd,
            0. AS idle_unallocated_usd, 0. AS unused_usd, 0. AS no_data_usd,
            toDateTime(ChargePeriodStart, 'UTC') AS first_hour, toDateTime(ChargePeriodEnd, 'UTC') AS end_hour
        FROM (__BILL_LINES__) AS l
        WHERE ChargePeriodStart >= d0 AND ChargePeriodStart < d1
          AND (BillingCurrency NOT IN ('USD', '') OR line_item_key NOT IN
               (SELECT line_item_key FROM billing_line_hour WHERE hour >= d0 - INTERVAL 32 DAY AND hour < d1 + INTERVAL 32 DAY))
    )
SELECT
    p.day AS day,
    toDateTime(l.BillingPeriodStart, 'UTC') AS BillingPeriodStart, toDateTime(l.BillingPeriodEnd, 'UTC') AS BillingPeriodEnd,
    toDateTime(greatest(p.first_hour, l.ChargePeriodStart), 'UTC') AS ChargePeriodStart,
    toDateTime(least(p.end_hour, l.ChargePeriodEnd), 'UTC') AS ChargePeriodEnd,
    l.BillingAccountId AS BillingAccountId, l.BillingAccountName AS BillingAccountName,
    l.SubAccountId AS SubAccountId, l.SubAccountName AS SubAccountName,
    l.ProviderName AS ProviderName, l.PublisherName AS PublisherName, l.InvoiceIssuerName AS InvoiceIssuerName,
    l.InvoiceId AS InvoiceId,
    toFloat64(l.BilledCost) * p.share AS BilledCost, toFloat64(l.EffectiveCost) * p.share AS EffectiveCost,
    toFloat64(l.ListCost) * p.share AS ListCost, toFloat64(l.ContractedCost) * p.share AS ContractedCost,
    l.BillingCurrency AS BillingCurrency, l.ChargeCategory AS ChargeCategory, l.ChargeClass AS ChargeClass,
    l.ChargeDescription AS ChargeDescription, l.ChargeFrequency AS ChargeFrequency, l.PricingCategory AS PricingCategory,
    toFloat64(l.PricingQuantity) * p.share AS PricingQuantity, l.PricingUnit AS PricingUnit,
    toFloat64(l.ListUnitPrice) AS ListUnitPrice, toFloat64(l.ContractedUnitPrice) AS ContractedUnitPrice,
    toFloat64(l.ConsumedQuantity) * p.share AS ConsumedQuantity, l.ConsumedUnit AS ConsumedUnit,
    l.CommitmentDiscountId AS CommitmentDiscountId, l.CommitmentDiscountCategory AS CommitmentDiscountCategory,
    l.CommitmentDiscountType AS CommitmentDiscountType, l.CommitmentDiscountStatus AS CommitmentDiscountStatus,
    l.CapacityReservationId AS CapacityReservationId,
    l.RegionId AS RegionId, l.RegionName AS RegionName, l.AvailabilityZone AS AvailabilityZone,
    l.ResourceId AS ResourceId, l.ResourceName AS ResourceName, l.ResourceType AS ResourceType,
    l.ServiceCategory AS ServiceCategory, l.ServiceSubcategory AS ServiceSubcategory, l.ServiceName AS ServiceName,
    l.SkuId AS SkuId, l.SkuPriceId AS SkuPriceId, l.SkuMeter AS SkuMeter, l.Tags AS Tags,
    p.team AS x_Team, p.method AS x_AllocationMethod, p.attributed_by AS x_AttributedBy, p.share AS x_AllocationShare,
    l.environment AS x_Environment, p.component AS x_CostComponent, p.gpu_hours AS x_GpuHours,
    p.idle_allocated_usd AS x_IdleAllocatedCost, p.idle_unallocated_usd AS x_IdleUnallocatedCost,
    p.unused_usd AS x_UnusedCost, p.idle_allocated_usd + p.idle_unallocated_usd + p.unused_usd AS x_WasteCost,
    p.no_data_usd AS x_NoDataCost, toUInt8(0) AS x_Estimated, toString(l.line_item_key) AS x_LineItemKey,
    l.source_file AS x_SourceFile, l.source_row AS x_SourceRow
FROM (SELECT * FROM line_parts UNION ALL SELECT * FROM whole_lines) AS p
INNER JOIN
(
    SELECT * FROM (__BILL_LINES__)
    WHERE ChargePeriodStart < d1 + INTERVAL 32 DAY AND ChargePeriodEnd > d0 - INTERVAL 32 DAY
      AND line_item_key IN (SELECT line_item_key FROM line_parts UNION ALL SELECT line_item_key FROM whole_lines)
) AS l ON l.line_item_key = p.line_item_key

UNION ALL

-- GPU-hours with no bill yet (list price), and on-prem GPU cost by component
SELECT
    toDate(hour) AS day, toDateTime(toStartOfMonth(day), 'UTC') AS BillingPeriodStart,
    BillingPeriodStart + INTERVAL 1 MONTH AS BillingPeriodEnd,
    toDateTime(min(hour), 'UTC') AS ChargePeriodStart, toDateTime(max(hour) + INTERVAL 1 HOUR, 'UTC') AS ChargePeriodEnd,
    if(onprem, 'on-prem', '') AS BillingAccountId, if(onprem, 'On-premises GPU fleet', '') AS BillingAccountName,
    if(onprem, pool, '') AS SubAccountId, if(onprem, pool, '') AS SubAccountName,
    multiIf(onprem, 'On-premises', environment = 'aws', 'AWS', environment = 'gcp', 'Google Cloud',
            environment = 'azure', 'Microsoft', environment) AS ProviderName,
    ProviderName AS PublisherName, ProviderName AS InvoiceIssuerName, '' AS InvoiceId,
    sum(component.2) AS BilledCost, BilledCost AS EffectiveCost, BilledCost AS ListCost, BilledCost AS ContractedCost,
    'USD' AS BillingCurrency, 'Usage' AS ChargeCategory, '' AS ChargeClass,
    multiIf(component.1 = 'onprem_capital', 'GPU capital, amortized over the depreciation period',
            component.1 = 'onprem_operations', 'GPU operations (power infrastructure, space, support, staff)',
            component.1 = 'onprem_energy', 'GPU energy, measured, × PUE × tariff',
            'Cloud GPU time at list price (the bill has not arrived)') AS ChargeDescription,
    'Usage-Based' AS ChargeFrequency, if(onprem, 'Committed', 'Standard') AS PricingCategory,
    sum(if(component.1 = 'onprem_energy', energy_kwh, gpu_hours)) AS PricingQuantity,
    if(component.1 = 'onprem_energy', 'kWh', 'GPU-Hours') AS PricingUnit,
    if(PricingQuantity != 0, BilledCost / PricingQuantity, NULL) AS ListUnitPrice, ListUnitPrice AS ContractedUnitPrice,
    PricingQuantity AS ConsumedQuantity, PricingUnit AS ConsumedUnit,
    '' AS CommitmentDiscountId, '' AS CommitmentDiscountCategory, '' AS CommitmentDiscountType,
    '' AS CommitmentDiscountStatus, '' AS CapacityReservationId,
    region AS RegionId, region AS RegionName, '' AS AvailabilityZone,
    if(onprem, concat(host, '/', gpu_uuid, if(mig_instance = '', '', concat('/', mig_instance))),
       if(instance_id != '', instance_id, host)) AS ResourceId,
    if(onprem, host, instance_id) AS ResourceName,
    multiIf(NOT onprem, 'Virtual Machine', mig_instance = '', 'GPU', 'GPU MIG instance') AS ResourceType,
    'Compute' AS ServiceCategory, 'GPU' AS ServiceSubcategory, if(onprem, 'On-premises GPU compute', 'GPU compute') AS ServiceName,
    if(onprem, concat('gpuledger:', component.1, ':', model), instance_type) AS SkuId, SkuId AS SkuPriceId,
    if(onprem, component.1, instance_type) AS SkuMeter,
    map('pool', pool, 'model', model, 'host', host) AS Tags,
    team AS x_Team, if(onprem, 'on-prem-cost-model', 'list-price-estimate') AS x_AllocationMethod,
    arrayStringConcat(arraySort(arrayFilter(r -> r != '', groupUniqArrayArray(rules))), ', ') AS x_AttributedBy,
    1. AS x_AllocationShare, if(environment = '', 'onprem', environment) AS x_Environment, component.1 AS x_CostComponent,
    sum(if(component.3, gpu_hours, 0.)) AS x_GpuHours,
    sum(idle_allocated_usd * cost_part) AS x_IdleAllocatedCost, sum(idle_unallocated_usd * cost_part) AS x_IdleUnallocatedCost,
    sum(unused_usd * cost_part) AS x_UnusedCost, x_IdleAllocatedCost + x_IdleUnallocatedCost + x_UnusedCost AS x_WasteCost,
    sum(no_data_usd * cost_part) AS x_NoDataCost, toUInt8(NOT onprem) AS x_Estimated, '' AS x_LineItemKey,
    '' AS x_SourceFile, toUInt64(0) AS x_SourceRow
FROM
(
    SELECT *, component, environment IN ('onprem', '') AS onprem,
        if(cost_usd != 0, component.2 / cost_usd, if(component.3, 1., 0.)) AS cost_part
    FROM owned
    ARRAY JOIN [('cloud_gpu', cloud_gpu_usd, true),
                ('onprem_capital', onprem_capital_usd, true),
                ('onprem_operations', onprem_operations_usd, false),
                ('onprem_energy', onprem_energy_usd, false)] AS component
    WHERE if(environment IN ('onprem', ''), component.1 != 'cloud_gpu', component.1 = 'cloud_gpu' AND estimated = 1)
      AND (component.2 != 0 OR component.3)
)
-- a row per day, GPU entity, team and component (by its name: its amount differs hour by hour)
GROUP BY day, environment, onprem, region, pool, host, gpu_uuid, mig_instance, instance_id, instance_type, model, team, component.1
