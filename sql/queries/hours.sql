-- Placement: the number of hours with any GPU data in the range (the length of the demand series).
SELECT toUInt64(uniqExact(hour)) AS hours
FROM gpu_cost_hour
WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
