-- billing_line_hour for one UTC day {day:Date}, hours from {from:DateTime}: every USD bill line of
-- an instance with GPU telemetry, spread over the hours of its charge period by the instance's
-- GPU-seconds (a MIG instance weighs its part of the GPU, entity_share.sql). gpu_cost_hour
-- (cost.sql) splits each hour's lines across the instance's GPUs the same way; the FOCUS
-- showback (showback.sql) follows each line to the teams.
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1,
    keys AS
    (
        SELECT DISTINCT instance_key FROM gpu_hour WHERE hour >= d0 AND hour < d1 AND instance_key != ''
    ),
    lines AS
    (
        SELECT resource_key, ChargePeriodStart AS ps, ChargePeriodEnd AS pe, toFloat64(EffectiveCost) AS cost, line_item_key
        FROM billing_line_items
        WHERE ChargePeriodStart < d1 AND ChargePeriodEnd > d0 AND BillingCurrency IN ('USD', '')
          AND resource_key IN (SELECT instance_key FROM keys)
    ),
    -- the GPU-hours of those instances over the whole span of those lines (may reach other days)
    entity_rows AS
    (
        SELECT * FROM gpu_hour
        -- constant bounds first (a bill line spans at most a month), so partitions are pruned
        WHERE hour >= d0 - INTERVAL 32 DAY AND hour < d1 + INTERVAL 32 DAY
          AND hour >= (SELECT toStartOfHour(min(ps)) FROM lines) AND hour < (SELECT max(pe) FROM lines)
          AND instance_key IN (SELECT resource_key FROM lines)
    ),
    shares AS
    (
__ENTITY_SHARE__
    ),
    -- GPU-seconds of each instance per hour, MIG instances by their part of the GPU (entity_share.sql)
    instance_hours AS
    (
        SELECT instance_key, hour, sum(covered_s * share) AS weight FROM shares GROUP BY instance_key, hour
    )
SELECT ih.hour AS hour, l.resource_key AS instance_key, l.line_item_key AS line_item_key,
       ih.weight / t.total AS share, l.cost * share AS cost, ih.weight AS weight
FROM lines AS l
INNER JOIN instance_hours AS ih ON ih.instance_key = l.resource_key
INNER JOIN
(
    SELECT l2.line_item_key AS line_item_key, sum(ih2.weight) AS total
    FROM lines AS l2 INNER JOIN instance_hours AS ih2 ON ih2.instance_key = l2.resource_key
    WHERE ih2.hour >= toStartOfHour(l2.ps) AND ih2.hour < l2.pe
    GROUP BY l2.line_item_key
) AS t ON t.line_item_key = l.line_item_key
WHERE ih.hour >= toStartOfHour(l.ps) AND ih.hour < l.pe AND ih.hour >= d0 AND ih.hour < d1 AND t.total > 0
