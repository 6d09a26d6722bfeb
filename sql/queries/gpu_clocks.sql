-- The GPU page: one GPU entity's SM and memory clocks over [start, end) in buckets of {bucket_s}
-- seconds (counted from start), from the raw samples (gpu_samples; the rollups keep no clocks):
-- the mean and the highest reading of the samples in each bucket (NULL: not reported).
SELECT toDateTime({start:DateTime('UTC')}, 'UTC')
           + toIntervalSecond(intDiv(toUInt32(toDateTime(ts)) - toUInt32(toDateTime({start:DateTime('UTC')}, 'UTC')),
                                     {bucket_s:UInt32}) * {bucket_s:UInt32}) AS t,
       count()              AS samples,
       avg(sm_clock_mhz)    AS sm_mhz,
       max(sm_clock_mhz)    AS sm_max_mhz,
       avg(mem_clock_mhz)   AS mem_mhz
FROM gpu_samples
WHERE host = {host:String} AND gpu_uuid = {gpu_uuid:String} AND mig_instance = {mig_instance:String}
  AND ts >= {start:DateTime('UTC')} AND ts < {end:DateTime('UTC')}
GROUP BY t
ORDER BY t
