-- A fingerprint of each day's billed line items (identity, effective cost, resource): a
-- restated or late bill changes its day's fingerprint, so the day is derived again.
SELECT toDate(ChargePeriodStart) AS day,
       sum(cityHash64(line_item_key, toString(EffectiveCost), ResourceId)) AS billing_fingerprint
FROM billing_line_items
WHERE day >= {since:Date} AND day <= {until:Date}
GROUP BY day
