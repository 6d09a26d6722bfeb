-- The idle windows of the months {months:Array(String)} that ended before {cutoff:DateTime64(3)}
-- (a rollup from the cutoff on cannot change them), kept as they were, except that one no longer
-- holds its GPU entity's latest sample once a sample of that entity came at or after the cutoff.
SELECT * REPLACE (
    toUInt8(is_open AND (host, gpu_uuid, mig_instance) NOT IN
    (
        SELECT DISTINCT host, gpu_uuid, mig_instance FROM gpu_samples
        WHERE ts >= {cutoff:DateTime64(3)} AND ts < {until:DateTime}
    )) AS is_open)
FROM idle_windows
WHERE _partition_id IN {months:Array(String)} AND end < {cutoff:DateTime64(3)}
