-- The hosts that have, between {from:DateTime} and {until:DateTime}, a GPU entity with more than one
-- row at one sample time: samples that arrived in parts (see split_samples.sql). Samples are kept
-- in (host, gpu_uuid, mig_instance, ts) order, so this reads four columns of the range and counts
-- per entity (the times as integers: uniqExact hashes those ~3× faster than DateTime64); on 256
-- GPUs at 15 s, ~0.12 s of one core a day (~4 % of the derivation).
SELECT DISTINCT host
FROM
(
    SELECT host, count() AS row_count, uniqExact(toUnixTimestamp64Milli(ts)) AS times
    FROM gpu_samples
    WHERE ts >= toDateTime({from:DateTime}, 'UTC') AND ts < toDateTime({until:DateTime}, 'UTC')
    GROUP BY host, gpu_uuid, mig_instance
    HAVING row_count > times
)
ORDER BY host
SETTINGS max_threads = 1
