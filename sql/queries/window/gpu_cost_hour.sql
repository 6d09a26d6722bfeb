-- The GPU-hour costs of a window that is not whole UTC days (Last 24 hours), exactly [start, end),
-- with gpu_cost_day's `day`: what a page's GPU_COST placeholder reads then (dashboard/queries.py).
SELECT *, toDate(hour) AS day FROM gpu_cost_hour WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}
