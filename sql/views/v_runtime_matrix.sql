-- Runtime versions across pools and environments: hosts and physical GPUs (host, gpu_uuid) seen with
-- each driver and CUDA version in the last 7 days (a MIG instance is part of its GPU, as on the
-- Compliance page's matrix).
CREATE OR REPLACE VIEW v_runtime_matrix AS
SELECT environment, pool, driver_version, cuda_version, uniqExact(host) AS hosts,
       uniqExact(host, gpu_uuid) AS gpus, min(hour) AS first_seen, max(hour) AS last_seen
FROM gpu_hour
WHERE hour >= now() - INTERVAL 7 DAY
GROUP BY environment, pool, driver_version, cuda_version;
