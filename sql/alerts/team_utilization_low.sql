-- Teams whose GPU-hour-weighted utilization over the last {lookback_days} complete days is below
-- {target_pct} %, counting only teams with at least {min_gpu_hours} GPU-hours in that time.
-- value: the team's utilization in percent.
SELECT
    team,
    sum(utilization_pct * gpu_hours) / sum(gpu_hours)            AS value,
    toString(round(sum(gpu_hours), 1))                           AS annotation_gpu_hours,
    toString(round(any(w.waste_usd), 2))                         AS annotation_usd
FROM v_team_utilization
LEFT JOIN
(
    SELECT team AS waste_team, sum(idle_allocated_usd + idle_unallocated_usd + unused_usd) AS waste_usd FROM gpu_waste_day
    WHERE day >= toDate({now:DateTime64(3, 'UTC')}) - toUInt32({lookback_days:Float64})
      AND day < toDate({now:DateTime64(3, 'UTC')})
    GROUP BY team
) AS w ON w.waste_team = team
WHERE day >= toDate({now:DateTime64(3, 'UTC')}) - toUInt32({lookback_days:Float64})
  AND day < toDate({now:DateTime64(3, 'UTC')})
  AND team NOT IN ('', 'unallocated')
GROUP BY team
HAVING sum(gpu_hours) >= {min_gpu_hours:Float64}
   AND value < {target_pct:Float64}
