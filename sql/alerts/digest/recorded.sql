-- The waste digest: which of these digest keys the outbox already holds, whatever their status
-- (pending, delivered or failed): a digest recorded once is never recorded or sent again.
SELECT DISTINCT key
FROM alert_notifications
WHERE key IN {keys:Array(String)}
