-- Utilization: distribution of per-GPU-day utilization of held GPU time, per team and environment
-- (box: min, quartiles, max), and the time-weighted utilization of the whole group.
SELECT
    team, environment,
    count()                                                            AS gpu_days,
    min(u)                                                             AS min_pct,
    quantileExact(0.25)(u)                                             AS q1_pct,
    quantileExact(0.5)(u)                                              AS median_pct,
    quantileExact(0.75)(u)                                             AS q3_pct,
    max(u)                                                             AS max_pct,
    100 * sum(uh) / nullIf(sum(h), 0)                                  AS utilization_pct,
    sum(h)                                                             AS gpu_hours
FROM
(
    SELECT toDate(hour) AS day, team, environment, host, gpu_uuid, mig_instance,
           sum(gpu_hours) AS h, sum(utilized_gpu_hours) AS uh, 100 * uh / nullIf(h, 0) AS u
    FROM gpu_cost_hour
    WHERE held AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
      AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
    GROUP BY day, team, environment, host, gpu_uuid, mig_instance
    HAVING h > 0
)
GROUP BY team, environment
ORDER BY team, environment
