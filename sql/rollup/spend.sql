-- team_spend_day for the UTC days from {from:DateTime} through {day:Date}: each day's GPU-hour
-- costs by kind, plus the cloud lines that were not spread over GPU-hours (storage, egress,
-- support, instances with no telemetry, non-USD lines), attributed by the same rules
-- (bill_line_team.sql) to the day their charge period starts.
WITH
    toDateTime({from:DateTime}, 'UTC') AS d0,
    toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY AS d1
SELECT day, team, environment, cost_kind, currency,
       sum(cost) AS cost, sum(estimated_cost) AS estimated_cost,
       sum(gpu_hours) AS gpu_hours, sum(utilized_gpu_hours) AS utilized_gpu_hours
FROM
(
    SELECT toDate(hour) AS day, team, environment, kind.1 AS cost_kind, 'USD' AS currency, kind.2 AS cost,
           if(estimated, kind.2, 0.) AS estimated_cost,
           if(kind.3, gpu_hours, 0.) AS gpu_hours, if(kind.3, utilized_gpu_hours, 0.) AS utilized_gpu_hours
    FROM gpu_cost_hour
    ARRAY JOIN [('cloud_gpu', cloud_gpu_usd, environment NOT IN ('onprem', '')),
                ('onprem_capital', onprem_capital_usd, environment IN ('onprem', '')),
                ('onprem_operations', onprem_operations_usd, false),
                ('onprem_energy', onprem_energy_usd, false)] AS kind
    WHERE hour >= d0 AND hour < d1 AND (kind.2 != 0 OR kind.3)

    UNION ALL

    SELECT toDate(ChargePeriodStart, 'UTC') AS day, attribution.1 AS team, environment, 'cloud_other' AS cost_kind, currency, cost,
           0. AS estimated_cost, 0. AS gpu_hours, 0. AS utilized_gpu_hours
    FROM
    (
        SELECT toFloat64(EffectiveCost) AS cost, if(BillingCurrency = '', 'USD', BillingCurrency) AS currency, environment, attribution,
               ChargePeriodStart, line_item_key
        FROM (__BILL_LINES__) AS l
        WHERE ChargePeriodStart >= d0 AND ChargePeriodStart < d1
          AND (BillingCurrency NOT IN ('USD', '') OR line_item_key NOT IN
          (
              -- lines spread over GPU-hours by cost.sql: USD lines with telemetry in their period
              SELECT DISTINCT l2.line_item_key
              FROM billing_line_items AS l2
              INNER JOIN
              (
                  SELECT DISTINCT hour, instance_key
                  FROM gpu_hour
                  WHERE instance_key != '' AND covered_s > 0 AND hour >= d0 - INTERVAL 31 DAY AND hour < d1 + INTERVAL 31 DAY
              ) AS h ON h.instance_key = l2.resource_key
              WHERE l2.ChargePeriodStart >= d0 AND l2.ChargePeriodStart < d1
                AND h.hour >= toStartOfHour(l2.ChargePeriodStart) AND h.hour < l2.ChargePeriodEnd
          ))
    )
)
GROUP BY day, team, environment, cost_kind, currency
