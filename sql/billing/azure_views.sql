-- The Azure cost views (source_kind azure-actual / azure-amortized) a load meets, per billing
-- month and account: in its own rows (origin 'loaded') and in the stored months it replaces
-- (origin 'stored'). Months where both views meet are warned about (ingest/billing/load.py).
SELECT month, account, groupArray((origin, view, file))
FROM (
    SELECT DISTINCT formatDateTime(BillingPeriodStart, '%Y-%m') AS month, BillingAccountId AS account,
        'loaded' AS origin, source_kind AS view, source_file AS file
    FROM `__STAGE__`
    WHERE source_kind IN {views:Array(String)}
    UNION ALL
    SELECT DISTINCT formatDateTime(BillingPeriodStart, '%Y-%m'), BillingAccountId, 'stored', source_kind, source_file
    FROM billing_line_items
    WHERE source_kind IN {views:Array(String)}
      AND (toYYYYMM(BillingPeriodStart), ProviderName, BillingAccountId) IN (
          SELECT DISTINCT toYYYYMM(BillingPeriodStart), ProviderName, BillingAccountId
          FROM `__STAGE__`
          WHERE source_kind IN {views:Array(String)})
)
GROUP BY month, account
HAVING uniqExact(view) > 1
ORDER BY month, account
