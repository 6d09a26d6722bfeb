-- gpu_cost_hour for one UTC day {day:Date}, hours from {from:DateTime}.
-- __TEAM_RULES__ is replaced by the attribution rules from config (ingest/rollup/attribution.py):
-- a multiIf over the columns below returning (team, rule name).
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1,
    -- the day's GPU-hours (with the normalised instance key billing is matched on)
    entity_rows AS
    (
        SELECT * FROM gpu_hour WHERE hour >= d0 AND hour < d1
    ),
    -- each GPU entity-hour's part of its GPU (MIG instances by slices: entity_share.sql)
    shares AS
    (
__ENTITY_SHARE__
    ),
    -- a MIG GPU's energy, counted once: the whole-GPU row's when it has power readings, else the
    -- instances' mean power (dcgm-exporter repeats the GPU's power on every instance and has no
    -- whole-GPU series) over their longest coverage; shared by the entities' GPU-hours
    mig_energy AS
    (
        SELECT host, gpu_uuid, hour,
            if(sumIf(entity_power_covered_s, mig_instance = '') > 0, sumIf(entity_energy_j, mig_instance = ''),
               avgIf(entity_energy_j / entity_power_covered_s, mig_instance != '' AND entity_power_covered_s > 0)
               * maxIf(entity_power_covered_s, mig_instance != ''))              AS gpu_energy_j
        FROM
        (
            SELECT host, gpu_uuid, hour, mig_instance, sum(energy_j) AS entity_energy_j,
                sum(power_covered_s) AS entity_power_covered_s
            FROM entity_rows GROUP BY host, gpu_uuid, hour, mig_instance
        )
        GROUP BY host, gpu_uuid, hour
        HAVING countIf(mig_instance != '') > 0
    ),
    -- the bill lines of each instance-hour (line_hours.sql, derived just before): their sum, and
    -- the instance's GPU-seconds in the hour they are split by
    billed AS
    (
        SELECT instance_key, hour, sum(cost) AS usd, count() AS line_count, any(weight) AS weight
        FROM billing_line_hour WHERE hour >= d0 AND hour < d1
        GROUP BY instance_key, hour
    ),
    instance_tags AS
    (
        SELECT resource_key, argMax(Tags, ChargePeriodStart) AS tags, argMax(SubAccountId, ChargePeriodStart) AS account
        FROM billing_line_items
        WHERE resource_key IN (SELECT instance_key FROM entity_rows WHERE instance_key != '')
        GROUP BY resource_key
    )
SELECT
    hour, host, gpu_uuid, mig_instance, environment, region, pool, instance_id, instance_type, model,
    attribution.1 AS team, attribution.2 AS attributed_by, user, job_id, k8s_namespace, held,
    gpu_hours, utilized_gpu_hours, energy_kwh,
    cloud_gpu_usd, onprem_capital_usd, onprem_operations_usd, onprem_energy_usd,
    cloud_gpu_usd + onprem_capital_usd + onprem_operations_usd + onprem_energy_usd AS cost_usd,
    estimated
FROM
(
    SELECT
        r.hour AS hour, r.host AS host, r.gpu_uuid AS gpu_uuid, r.mig_instance AS mig_instance,
        r.environment AS environment, r.region AS region, r.cluster AS cluster, r.pool AS pool,
        r.instance_id AS instance_id, r.instance_type AS instance_type, r.model AS model,
        r.team AS team, r.user AS user, r.job_id AS job_id, r.k8s_namespace AS k8s_namespace,
        r.k8s_pod AS k8s_pod, r.slurm_account AS slurm_account, r.held AS held,
        __TEAM_RULES__ AS attribution,
        s.share AS share,
        r.covered_s / 3600 * share AS gpu_hours,
        gpu_hours * if(r.util_covered_s > 0, r.util_gpu_s / r.util_covered_s, 0) / 100 AS utilized_gpu_hours,
        if(s.mig, coalesce(g.gpu_energy_j, 0) * r.covered_s * share / greatest(s.gpu_share_s, 1e-9), r.energy_j)
            / 3.6e6 AS energy_kwh,
        r.environment NOT IN ('onprem', '') AS cloud,
        b.line_count > 0 AS billed_hour,                      -- (joins give 0 / '' where nothing matches)
        multiIf(NOT cloud, 0.,
                billed_hour, b.usd * r.covered_s * share / greatest(b.weight, 1e-9),
                if(lp.gpus > 0, lp.usd_per_hour / lp.gpus, 0.) * gpu_hours) AS cloud_gpu_usd,
        toUInt8(cloud AND NOT billed_hour) AS estimated,
        if(cloud OR p.depreciation_months = 0, 0., p.capital_usd_per_gpu / (p.depreciation_months * 730) * gpu_hours) AS onprem_capital_usd,
        if(cloud, 0., p.operations_usd_per_gpu_month / 730 * gpu_hours) AS onprem_operations_usd,
        if(cloud, 0., energy_kwh * p.pue * p.energy_usd_per_kwh) AS onprem_energy_usd,
        t.tags AS tags,
        t.account AS account
    FROM entity_rows AS r
    INNER JOIN shares AS s ON s.host = r.host AND s.gpu_uuid = r.gpu_uuid AND s.mig_instance = r.mig_instance AND s.hour = r.hour
    LEFT JOIN mig_energy AS g ON g.host = r.host AND g.gpu_uuid = r.gpu_uuid AND g.hour = r.hour
    LEFT JOIN billed AS b ON b.instance_key = r.instance_key AND b.hour = r.hour
    LEFT JOIN config_list_prices AS lp ON lp.instance_type = r.instance_type
    LEFT JOIN config_pools AS p ON p.pool = r.pool
    LEFT JOIN instance_tags AS t ON t.resource_key = r.instance_key
)
