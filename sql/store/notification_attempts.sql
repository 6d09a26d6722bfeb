-- Delivery attempts per channel and outcome: gpuledger_notifications_{sent,failed}_total.
SELECT channel, countIf(ok) AS sent, countIf(NOT ok) AS failed
FROM alert_delivery_attempts
GROUP BY channel
ORDER BY channel
