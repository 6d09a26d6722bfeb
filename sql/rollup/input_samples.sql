-- Sample rows per day, from the parts of gpu_samples (partitioned by day): what a day was derived
-- from. A new or late sample changes its day's count, so the day is derived again.
SELECT toDate(partition) AS day, sum(rows) AS sample_rows
FROM system.parts
WHERE database = currentDatabase() AND table = 'gpu_samples' AND active
GROUP BY partition
