-- Compliance: driver and CUDA versions per environment and pool seen in the range.
SELECT environment, pool, driver_version, cuda_version,
       uniqExact(host) AS hosts, count() AS gpus, max(seen) AS last_seen
FROM
(
    SELECT environment, pool, driver_version, cuda_version, host, gpu_uuid, max(hour) AS seen
    FROM gpu_hour
    WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
      AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
    GROUP BY environment, pool, driver_version, cuda_version, host, gpu_uuid
)
GROUP BY environment, pool, driver_version, cuda_version
ORDER BY environment, pool, driver_version, cuda_version
