-- The waste of a window that is not whole UTC days (Last 24 hours), exactly [start, end), with
-- gpu_waste_day's `day` and `gpu_hours` (covered hours): what a page's GPU_WASTE placeholder reads then.
SELECT *, toDate(hour) AS day, covered_s / 3600 AS gpu_hours
FROM gpu_waste_hour WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
