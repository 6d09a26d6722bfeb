-- The first hour of day {d0} whose sample count differs from the samples its gpu_hour rows were
-- derived from (new or late samples); none when the day is unchanged.
SELECT h
FROM
(
    SELECT toStartOfHour(ts) AS h, count() AS n FROM gpu_samples
    WHERE ts >= {d0:DateTime} AND ts < {d0:DateTime} + INTERVAL 1 DAY
    GROUP BY h
) AS s
FULL OUTER JOIN
(
    SELECT hour AS h, sum(samples) AS n FROM gpu_hour
    WHERE hour >= {d0:DateTime} AND hour < {d0:DateTime} + INTERVAL 1 DAY
    GROUP BY h
) AS g USING (h)
WHERE s.n != g.n
ORDER BY h
LIMIT 1
