-- The held GPU-hours per GPU-day (GPU entity, UTC day, team, environment) of a window of whole UTC
-- days: the daily rollup. dashboard/queries.py fills a page's GPU_UTIL placeholder with this file,
-- or with gpu_util_hour.sql for any other window.
SELECT * FROM gpu_util_day WHERE day >= {start_day:Date} AND day < {end_day:Date}
