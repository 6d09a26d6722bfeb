-- Cloud GPU instances: billed cost per instance and day next to the hosts and GPUs the
-- collectors saw on it, matched on the normalised ResourceId (billing's resource_key = the
-- rollups' instance_key). Reads gpu_hour, so it needs no raw samples and outlives their TTL.
-- Costs stay per currency.
CREATE OR REPLACE VIEW v_billing_instances AS
SELECT
    b.resource_key                      AS resource_key,
    b.day                               AS day,
    b.ProviderName                      AS provider,
    b.BillingAccountId                  AS billing_account_id,
    b.SubAccountId                      AS sub_account_id,
    b.BillingCurrency                   AS currency,
    b.billed_cost                       AS billed_cost,
    b.effective_cost                    AS effective_cost,
    b.list_cost                         AS list_cost,
    h.host                              AS host,
    h.environment                       AS environment,
    h.instance_type                     AS instance_type,
    h.gpus                              AS gpus,
    h.first_seen                        AS first_seen,
    h.last_seen                         AS last_seen
FROM
(
    SELECT resource_key, toDate(ChargePeriodStart) AS day, ProviderName, BillingAccountId, SubAccountId, BillingCurrency,
           sum(BilledCost) AS billed_cost, sum(EffectiveCost) AS effective_cost, sum(ListCost) AS list_cost
    FROM billing_line_items
    WHERE resource_key != ''
    GROUP BY resource_key, day, ProviderName, BillingAccountId, SubAccountId, BillingCurrency
) AS b
INNER JOIN
(
    SELECT instance_key AS resource_key, toDate(hour) AS day, any(host) AS host, any(environment) AS environment,
           any(instance_type) AS instance_type, uniqExact(gpu_uuid) AS gpus,
           min(hour) AS first_seen, max(hour) + INTERVAL 1 HOUR AS last_seen
    FROM gpu_hour
    WHERE instance_key != ''
    GROUP BY resource_key, day
) AS h
ON b.resource_key = h.resource_key AND b.day = h.day;
