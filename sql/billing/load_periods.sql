-- The billing periods (month, provider, account) a load holds: the partitions it replaces.
SELECT DISTINCT formatDateTime(BillingPeriodStart, '%Y-%m'), ProviderName, BillingAccountId
FROM `__STAGE__`
ORDER BY 1, 2, 3
