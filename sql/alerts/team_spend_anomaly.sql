-- A team's spend yesterday (the last complete UTC day) against its trailing daily baseline of
-- {baseline_days} days: it fires when the day is at least {factor} times the baseline average,
-- {sigmas} standard deviations above it, and {min_increase_usd} USD more, and the baseline has
-- at least {min_baseline_days} days with spend. USD rows only. value: the day's spend in USD.
WITH toDate({now:DateTime64(3, 'UTC')}) - 1 AS target
SELECT
    team,
    toString(target)                                             AS day,
    spend                                                        AS value,
    toString(round(baseline, 2))                                 AS annotation_baseline_usd,
    toString(round(spread, 2))                                   AS annotation_baseline_stddev_usd,
    toString(round(spend - baseline, 2))                         AS annotation_usd
FROM
(
    SELECT
        team,
        sumIf(total, d = target)                                 AS spend,
        avgIf(total, d < target)                                 AS baseline,
        stddevPopIf(total, d < target)                           AS spread,
        countIf(d < target)                                      AS baseline_days
    FROM
    (
        SELECT team, toDate(day) AS d, sum(cost_usd) AS total
        FROM v_team_spend
        WHERE day >= target - toUInt32({baseline_days:Float64})
          AND day <= target
          AND team NOT IN ('', 'unallocated')
          AND currency = 'USD'
        GROUP BY team, d
    )
    GROUP BY team
)
WHERE baseline_days >= {min_baseline_days:Float64}
  AND spend >= baseline * {factor:Float64}
  AND spend >= baseline + {sigmas:Float64} * spread
  AND spend - baseline >= {min_increase_usd:Float64}
