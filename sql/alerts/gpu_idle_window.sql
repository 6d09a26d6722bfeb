-- GPU idle windows at least {min_hours} long that were open at some time in the last
-- {lookback_days} days: one alert per window and GPU (or MIG instance).
-- value: the window's length in hours (an open window grows; its identity is its start).
SELECT
    host,
    gpu_uuid,
    mig_instance,
    pool,
    environment,
    region,
    kind,
    team,
    user,
    job_id,
    formatDateTime(start, '%Y-%m-%dT%H:%i:%SZ', 'UTC')          AS window_start,
    duration_s / 3600.0                                          AS value,
    formatDateTime(end, '%Y-%m-%dT%H:%i:%SZ', 'UTC')            AS annotation_window_end,
    toString(round(cost_usd, 2))                                 AS annotation_cost_usd,
    if(mig_instance = '', gpu_uuid, concat(gpu_uuid, ' MIG ', mig_instance)) AS annotation_gpu
FROM v_idle_waste
WHERE duration_s >= {min_hours:Float64} * 3600
  AND end >= {now:DateTime64(3, 'UTC')} - toIntervalSecond(toUInt64({lookback_days:Float64} * 86400))
  AND start <= {now:DateTime64(3, 'UTC')}
