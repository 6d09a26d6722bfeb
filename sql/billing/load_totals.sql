-- What a load holds per currency: billed and effective cost (printed after `ingest billing`).
SELECT BillingCurrency, sum(BilledCost), sum(EffectiveCost)
FROM `__STAGE__`
GROUP BY 1
ORDER BY 1
