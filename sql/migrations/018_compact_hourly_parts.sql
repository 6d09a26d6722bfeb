-- The hourly rollups that the GPU page reads for one GPU over a long range (gpu_hour: its telemetry;
-- gpu_cost_hour: its cost) keep their daily partitions, which the derivation swaps in a day at a
-- time, but store a day's part in ClickHouse's Compact format (every column in one file) up to
-- 256 MiB uncompressed (a 10,000-GPU fleet's day of gpu_hour is ~22 MiB). A query for one GPU over
-- 90 days reads one granule of each of 91 parts: with a file per column (Wide parts) that is ~25
-- files opened per part, with Compact parts one, and the query takes ~0.6× the time (measured on
-- 10,000 GPUs × 90 days, docs/deploy.md). Larger parts stay Wide, where reading a few columns of
-- whole days is what counts. Parts written before this migration change format when their day
-- is derived again or merged.
ALTER TABLE gpu_hour MODIFY SETTING min_bytes_for_wide_part = 268435456;
ALTER TABLE gpu_cost_hour MODIFY SETTING min_bytes_for_wide_part = 268435456;
