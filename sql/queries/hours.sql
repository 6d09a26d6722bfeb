-- Placement: the number of hours with any GPU data in the range (the length of the demand series).
-- team_demand_hour has a row for every hour gpu_cost_hour has one.
SELECT toUInt64(uniqExact(hour)) AS hours
FROM team_demand_hour
WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
