-- Creation time of the oldest notification not yet delivered (NULL when none):
-- gpuledger_notification_oldest_undelivered_age_seconds.
SELECT min(created_at)
FROM alert_notifications FINAL
WHERE status = 'pending'
HAVING count() > 0
