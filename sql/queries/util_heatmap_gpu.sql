-- Utilization: heatmap of GPUs × time buckets, MIG instances right after their GPU: the
-- {max_entities} GPU entities with the most cost in the range, narrowed by {search} (found in host,
-- GPU UUID, model or pool, any case; empty: every one), as gpu_top.sql picks them; `matches` is how
-- many match in all. Picked from gpu_cost_day, which has the same entities per day. Buckets of 24
-- hours read util_heatmap_gpu_day.sql instead.
WITH picked AS
(
    SELECT pool, host, gpu_uuid, mig_instance, count() OVER () AS matches
    FROM gpu_cost_day
    WHERE day >= {start_day:Date} AND day < {end_day:Date}
      AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
      AND ({search:String} = '' OR positionCaseInsensitiveUTF8(concat(host, ' ', gpu_uuid, ' ', model, ' ', pool),
                                                               {search:String}) > 0)
    GROUP BY pool, host, gpu_uuid, mig_instance
    ORDER BY round(sum(cost_usd), 6) DESC, pool, host, gpu_uuid, mig_instance
    LIMIT {max_entities:UInt32}
)
SELECT
    toStartOfInterval(hour, toIntervalHour({bucket_h:UInt32}))         AS t,
    pool, host, gpu_uuid, mig_instance,
    100 * sum(utilized_gpu_hours) / nullIf(sum(gpu_hours), 0)          AS utilization_pct,
    any(p.matches)                                                     AS matches
FROM gpu_cost_hour AS c
INNER JOIN picked AS p USING (pool, host, gpu_uuid, mig_instance)
WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
  AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
GROUP BY t, pool, host, gpu_uuid, mig_instance
ORDER BY pool, host, gpu_uuid, mig_instance, t
