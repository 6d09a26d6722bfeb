-- gpu_cost_day keeps, beside its rows, their sums per day, environment, pool, model, team, held and
-- whole GPU (not a MIG slice): an aggregate projection, which the engine reads instead of the rows
-- when a query groups and filters on those columns only. The Utilization heatmap of pools × days
-- (util_heatmap_pool_day.sql) and the Placement page's usage (placement_usage.sql) are such
-- queries; on 10,000 GPUs × 90 days they read 362,320 projected rows, not 1.72 M (docs/deploy.md).
-- The projection is part of the table's structure, so the derivation's staging copies (CREATE TABLE
-- ... AS) have it and the partitions they swap in carry it; on a cluster it is added to the
-- shard-local tables. Partitions written before this migration are projected here (MATERIALIZE,
-- at once).
ALTER TABLE gpu_cost_day ADD PROJECTION IF NOT EXISTS pool_day
(
    SELECT day, environment, pool, model, team, held, mig_instance = '',
           sum(cost_usd), sum(gpu_hours), sum(utilized_gpu_hours)
    GROUP BY day, environment, pool, model, team, held, mig_instance = ''
);
ALTER TABLE gpu_cost_day MATERIALIZE PROJECTION pool_day SETTINGS mutations_sync = 1;
