-- The GPU-hour costs of a window of whole UTC days: the daily rollup. dashboard/queries.py fills
-- the GPU_COST placeholder of a page's query with this file, or with gpu_cost_hour.sql for any other window.
SELECT * FROM gpu_cost_day WHERE day >= {start_day:Date} AND day < {end_day:Date}
