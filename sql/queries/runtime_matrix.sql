-- Compliance: driver and CUDA versions per environment and pool seen in the range.
-- Reads gpu_cost_day, which has each GPU's last driver / CUDA version of each day; last_seen is
-- the last day the GPU was seen with that version.
SELECT environment, pool, driver_version, cuda_version,
       uniqExact(host) AS hosts, count() AS gpus, max(seen) AS last_seen
FROM
(
    SELECT environment, pool, driver_version, cuda_version, host, gpu_uuid, max(day) AS seen
    FROM gpu_cost_day
    WHERE day >= {start_day:Date} AND day < {end_day:Date}
      AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
    GROUP BY environment, pool, driver_version, cuda_version, host, gpu_uuid
)
GROUP BY environment, pool, driver_version, cuda_version
ORDER BY environment, pool, driver_version, cuda_version
