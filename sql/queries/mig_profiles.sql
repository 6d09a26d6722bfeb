-- The MIG profile of each listed instance: the one gpu_hour has at the instance's latest hour on the
-- day given with it (mig_tree.sql's last_day: its last day with GPU-hours in the window), within
-- [start, end). Arrays {hosts}, {gpu_uuids}, {mig_instances}, {days}, one element per instance:
-- gpu_hour is partitioned by day and sorted by host, GPU and instance, so only those days'
-- granules of those instances are read.
SELECT host, gpu_uuid, mig_instance, argMax(mig_profile, hour) AS mig_profile
FROM gpu_hour
WHERE toDate(hour) IN {days:Array(Date)}
  AND (host, gpu_uuid, mig_instance, toDate(hour))
      IN arrayZip({hosts:Array(String)}, {gpu_uuids:Array(String)}, {mig_instances:Array(String)}, {days:Array(Date)})
  AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
GROUP BY host, gpu_uuid, mig_instance
