-- The last notification of each channel and alert group (not tests): which alerts it said were
-- firing and when, so a group is re-notified only when that changes or repeat_interval passes.
SELECT channel, group_key, argMax(firing, created_at), max(created_at)
FROM alert_notifications FINAL
WHERE kind != 'test'
GROUP BY channel, group_key
