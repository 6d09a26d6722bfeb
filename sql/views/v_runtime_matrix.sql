-- Runtime versions across pools and environments.
CREATE OR REPLACE VIEW v_runtime_matrix AS
SELECT environment, pool, driver_version, cuda_version, uniqExact(host) AS hosts,
       uniqExact(host, gpu_uuid, mig_instance) AS gpus, min(hour) AS first_seen, max(hour) AS last_seen
FROM gpu_hour
WHERE hour >= now() - INTERVAL 7 DAY
GROUP BY environment, pool, driver_version, cuda_version;
