-- Views for people: the dashboard, the alert rules and finance read these, never raw samples.
-- Documented with examples in sql/README.md. Money is USD unless a currency column says otherwise.

-- Fleet utilization per day, environment and pool (time-weighted; no-data time excluded).
CREATE OR REPLACE VIEW v_fleet_utilization AS
SELECT
    toDate(hour)                                                   AS day,
    environment, region, pool, model,
    uniqExact(host, gpu_uuid, mig_instance)                        AS gpus,
    sum(covered_s) / 3600                                          AS gpu_hours,
    sumIf(covered_s, held) / 3600                                  AS held_gpu_hours,
    sum(util_gpu_s) / nullIf(sum(util_covered_s), 0)               AS utilization_pct,
    sum(util_mem_s) / nullIf(sum(util_mem_covered_s), 0)           AS memory_activity_pct,
    100 * sumIf(covered_s, held) / nullIf(sum(covered_s), 0)       AS allocated_pct,
    sum(energy_j) / 3.6e6                                          AS energy_kwh
FROM gpu_hour
GROUP BY day, environment, region, pool, model;

-- Utilization of each team's GPU time, per day and environment.
CREATE OR REPLACE VIEW v_team_utilization AS
SELECT day, team, environment, hours AS gpu_hours, utilized AS utilized_gpu_hours,
       100 * utilized / nullIf(hours, 0) AS utilization_pct
FROM
(
    SELECT toDate(hour) AS day, team, environment, sum(gpu_hours) AS hours, sum(utilized_gpu_hours) AS utilized
    FROM gpu_cost_hour
    WHERE held
    GROUP BY day, team, environment
);

-- Every idle window with its owner and the money it cost.
CREATE OR REPLACE VIEW v_idle_waste AS
SELECT
    host, gpu_uuid, mig_instance, pool, environment, region, instance_id, model, kind,
    if(team = '', 'unallocated', team) AS team,
    user, job_id, k8s_namespace, k8s_pod, slurm_account,
    start, end, duration_s, duration_s / 3600 AS gpu_hours, avg_util_gpu, avg_util_mem, cost_usd
FROM idle_windows;

-- Spend per team and day by environment and cost kind.
CREATE OR REPLACE VIEW v_team_spend AS
SELECT day, team, environment, cost_kind, currency, cost AS cost_usd, estimated_cost AS estimated_usd,
       gpu_hours, utilized_gpu_hours
FROM team_spend_day;

-- Per team and month: budget, spend month-to-date and the forecast to month end
-- (month-to-date + the average of the last 7 complete days × days left). Past months: actuals.
CREATE OR REPLACE VIEW v_team_budget AS
WITH
    today() AS d,
    monthly AS
    (
        SELECT team, toStartOfMonth(day) AS month, sum(cost) AS spend,
               sumIf(cost, day >= d - 7 AND day < d) / 7 AS daily_recent
        FROM team_spend_day
        WHERE currency = 'USD'
        GROUP BY team, month
    )
SELECT
    coalesce(m.team, t.team)                                       AS team,
    if(m.team = '', toStartOfMonth(d), m.month)                    AS month,
    t.budget_usd_month                                             AS budget_usd,
    m.spend                                                        AS spend_mtd_usd,
    if(month = toStartOfMonth(d),
       m.spend + m.daily_recent * (toDayOfMonth(toLastDayOfMonth(d)) - toDayOfMonth(d) + 1),
       m.spend)                                                    AS forecast_usd,
    if(t.budget_usd_month > 0, 100 * spend_mtd_usd / t.budget_usd_month, NULL) AS budget_used_pct,
    t.budget_usd_month > 0 AND spend_mtd_usd > t.budget_usd_month  AS over_budget,
    t.budget_usd_month > 0 AND forecast_usd > t.budget_usd_month   AS forecast_over_budget
FROM monthly AS m
FULL OUTER JOIN config_teams AS t ON t.team = m.team;

-- Spend no rule attributed to a team, and what it consists of.
CREATE OR REPLACE VIEW v_unallocated AS
SELECT toDate(hour) AS day, environment, region, pool, host, instance_id, 'gpu' AS what,
       sum(cost_usd) AS cost_usd, sum(gpu_hours) AS gpu_hours
FROM gpu_cost_hour WHERE team = 'unallocated'
GROUP BY day, environment, region, pool, host, instance_id
UNION ALL
SELECT day, environment, '' AS region, '' AS pool, '' AS host, '' AS instance_id, cost_kind AS what,
       cost AS cost_usd, 0 AS gpu_hours
FROM team_spend_day WHERE team = 'unallocated' AND cost_kind = 'cloud_other' AND currency = 'USD';

-- Allocation coverage: the share of spend that rules attributed to a team.
CREATE OR REPLACE VIEW v_allocation_coverage AS
SELECT day, sum(cost) AS cost_usd, sumIf(cost, team != 'unallocated') AS allocated_usd,
       100 * allocated_usd / nullIf(cost_usd, 0) AS coverage_pct
FROM team_spend_day WHERE currency = 'USD'
GROUP BY day;

-- Unit cost: what a *utilized* GPU-hour costs, per month, environment, pool and model.
CREATE OR REPLACE VIEW v_unit_cost AS
SELECT toStartOfMonth(hour) AS month, environment, pool, model,
       sum(cost_usd) AS cost_usd, sum(gpu_hours) AS gpu_hours, sum(utilized_gpu_hours) AS utilized_gpu_hours,
       cost_usd / nullIf(gpu_hours, 0) AS usd_per_gpu_hour,
       cost_usd / nullIf(utilized_gpu_hours, 0) AS usd_per_utilized_gpu_hour
FROM gpu_cost_hour
GROUP BY month, environment, pool, model;

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

-- On-prem pools: saturated (burst candidates) or under-used (consolidation candidates), per day.
CREATE OR REPLACE VIEW v_pool_load AS
SELECT day, pool, region, model, gpus, gpu_hours, utilization_pct, allocated_pct,
       multiIf(allocated_pct >= 85 AND utilization_pct >= 60, 'saturated',
               allocated_pct < 30 OR utilization_pct < 20, 'under-used', 'ok') AS status
FROM v_fleet_utilization
WHERE environment = 'onprem';

-- Open compliance findings.
CREATE OR REPLACE VIEW v_compliance_open AS
SELECT policy, finding_key, severity, team, environment, provider, region, pool, host, gpu_uuid, resource_id,
       summary, evidence, cost_usd, first_seen, last_seen
FROM compliance_findings;

-- Runtime versions across pools and environments.
CREATE OR REPLACE VIEW v_runtime_matrix AS
SELECT environment, pool, driver_version, cuda_version, uniqExact(host) AS hosts,
       uniqExact(host, gpu_uuid, mig_instance) AS gpus, min(hour) AS first_seen, max(hour) AS last_seen
FROM gpu_hour
WHERE hour >= now() - INTERVAL 7 DAY
GROUP BY environment, pool, driver_version, cuda_version;
