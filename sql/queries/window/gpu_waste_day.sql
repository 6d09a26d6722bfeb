-- The waste of a window of whole UTC days: the daily rollup. dashboard/queries.py fills a page's
-- GPU_WASTE placeholder with this file, or with gpu_waste_hour.sql for any other window.
SELECT * FROM gpu_waste_day WHERE day >= {start_day:Date} AND day < {end_day:Date}
