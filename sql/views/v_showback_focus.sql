-- Showback in FOCUS shape, attributed to teams (x_Team): GPU cost per day, team and resource,
-- plus the rest of the cloud bill per day and team.
CREATE OR REPLACE VIEW v_showback_focus AS
SELECT
    toDateTime(toDate(hour), 'UTC')                                AS ChargePeriodStart,
    ChargePeriodStart + INTERVAL 1 DAY                             AS ChargePeriodEnd,
    'Usage'                                                        AS ChargeCategory,
    multiIf(environment = 'onprem', 'On-premises', environment = 'aws', 'AWS', environment = 'gcp', 'Google Cloud',
            environment = 'azure', 'Microsoft', environment)       AS ProviderName,
    'GPU compute'                                                  AS ServiceName,
    'Compute'                                                      AS ServiceCategory,
    if(instance_id != '', instance_id, host)                       AS ResourceId,
    any(instance_type)                                             AS ResourceType,
    region                                                         AS RegionId,
    sum(cost_usd)                                                  AS EffectiveCost,
    sum(cost_usd)                                                  AS BilledCost,
    'USD'                                                          AS BillingCurrency,
    sum(gpu_hours)                                                 AS ConsumedQuantity,
    'GPU-Hours'                                                    AS ConsumedUnit,
    team                                                           AS x_Team,
    max(estimated)                                                 AS x_Estimated
FROM gpu_cost_hour
GROUP BY ChargePeriodStart, environment, ResourceId, region, team
UNION ALL
SELECT
    toDateTime(day, 'UTC'), toDateTime(day, 'UTC') + INTERVAL 1 DAY, 'Usage',
    multiIf(environment = 'aws', 'AWS', environment = 'gcp', 'Google Cloud', environment = 'azure', 'Microsoft', environment),
    'Other cloud services', 'Other', '', '', '', cost, cost, currency, 0, '', team, 0
FROM team_spend_day WHERE cost_kind = 'cloud_other';
