-- Placement: each team's hourly held GPU demand over the range (an hour without demand counts
-- as 0 GPUs), split into baseline (the {baseline_q} quantile of it: steady, suits on-prem) and
-- burst (the rest: suits cloud). GPU-hours under the baseline line are baseline, above it burst.
-- Reads team_demand_hour (gpu_cost_hour summed per hour, team, environment and held); the series
-- is as long as the range has hours with any GPU data, counted as hours.sql counts them.
WITH
    assumeNotNull((
        SELECT toUInt64(uniqExact(hour)) FROM team_demand_hour
        WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
    )) AS data_hours,
    hourly AS
    (
        SELECT team, hour, sum(gpu_hours) AS gpus, sumIf(gpu_hours, environment != 'onprem') AS cloud_gpus
        FROM team_demand_hour
        WHERE held AND team != 'unallocated' AND hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
          AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
        GROUP BY team, hour
    )
SELECT team, hours, baseline_gpus, peak_gpus, avg_gpus, baseline_gpu_hours, burst_gpu_hours, cloud_gpu_hours,
       cloud_baseline_gpus
FROM
(
    SELECT
        team,
        greatest(data_hours, count())                                         AS hours,
        arraySort(arrayConcat(groupArray(gpus), arrayWithConstant(hours - count(), 0.)))       AS demand,
        arraySort(arrayConcat(groupArray(cloud_gpus), arrayWithConstant(hours - count(), 0.))) AS cloud,
        demand[toUInt64(floor({baseline_q:Float64} * (hours - 1))) + 1]           AS baseline_gpus,
        cloud[toUInt64(floor({baseline_q:Float64} * (hours - 1))) + 1]            AS cloud_baseline_gpus,
        max(gpus)                                                                 AS peak_gpus,
        sum(gpus) / hours                                                         AS avg_gpus,
        arraySum(arrayMap(x -> least(x, baseline_gpus), demand))                  AS baseline_gpu_hours,
        greatest(round(sum(gpus) - baseline_gpu_hours, 6), 0)                     AS burst_gpu_hours,
        sum(cloud_gpus)                                                           AS cloud_gpu_hours
    FROM hourly
    GROUP BY team
)
ORDER BY baseline_gpu_hours + burst_gpu_hours DESC, team
