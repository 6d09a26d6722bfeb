-- The held GPU-hours of each GPU entity per UTC day, team and environment, and how many of them
-- were utilized: one row per GPU-day, the unit of the Utilization page's spread (its box plot,
-- util_distribution.sql). gpu_cost_day splits a GPU-day further (region, pool, instance, model,
-- runtime versions, held or not), so the page had to group its rows back into GPU-days at every
-- view: on 10,000 GPUs × 90 days, 1.72 M rows into 910,000 GPU-days, ~150 ms of the page; read
-- from here, ~45 ms (docs/deploy.md). Derived with the other daily rollups from gpu_cost_hour
-- (sql/rollup/util_day.sql); partitioned by month like them. The days derived before this
-- migration are filled here from gpu_cost_day, which holds the same sums; a migration stopped
-- half-way is re-run from the start (its first statement drops the table).
DROP TABLE IF EXISTS gpu_util_day SYNC;
CREATE TABLE gpu_util_day
(
    day                Date,
    team               LowCardinality(String),
    environment        LowCardinality(String),
    host               LowCardinality(String),
    gpu_uuid           LowCardinality(String),
    mig_instance       LowCardinality(String),
    gpu_hours          Float64,
    utilized_gpu_hours Float64
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (team, environment, day, host, gpu_uuid, mig_instance);

INSERT INTO gpu_util_day
SELECT day, team, environment, host, gpu_uuid, mig_instance, sum(gpu_hours), sum(utilized_gpu_hours)
FROM gpu_cost_day
WHERE held
GROUP BY day, team, environment, host, gpu_uuid, mig_instance;
