-- The GPU page: what one GPU entity cost over [start, end), from gpu_cost_hour in buckets of
-- {bucket_s} seconds (whole hours, counted from start): cost, covered GPU-hours (× MIG slice
-- share) and cost per GPU-hour (NULL where the bucket has no GPU-hours), every owner together.
SELECT toDateTime({start:DateTime('UTC')}, 'UTC')
           + toIntervalSecond(intDiv(toUInt32(hour) - toUInt32(toDateTime({start:DateTime('UTC')}, 'UTC')),
                                     {bucket_s:UInt32}) * {bucket_s:UInt32}) AS t,
       sum(cost_usd)                                   AS bucket_usd,
       sum(gpu_hours)                                  AS bucket_gpu_hours,
       sum(cost_usd) / nullIf(sum(gpu_hours), 0)       AS usd_per_gpu_hour,
       max(estimated)                                  AS estimated
FROM gpu_cost_hour
WHERE host = {host:String} AND gpu_uuid = {gpu_uuid:String} AND mig_instance = {mig_instance:String}
  AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
GROUP BY t
ORDER BY t
