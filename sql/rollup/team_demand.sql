-- team_demand_hour for the UTC days from {from:DateTime} through {day:Date}, from gpu_cost_hour.
SELECT hour, team, environment, held,
       sum(gpu_hours) AS gpu_hours, sum(utilized_gpu_hours) AS utilized_gpu_hours, sum(cost_usd) AS cost_usd
FROM gpu_cost_hour
WHERE hour >= toDateTime({from:DateTime}, 'UTC') AND hour < toDateTime({day:Date}, 'UTC') + INTERVAL 1 DAY
GROUP BY hour, team, environment, held
