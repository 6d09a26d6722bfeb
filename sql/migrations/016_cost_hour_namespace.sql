-- The Kubernetes namespace on every GPU-hour's cost (issue #17: "aggregate by" namespace): the
-- owner columns of gpu_cost_hour were team, user and job; the namespace was only in gpu_hour
-- and gpu_waste_hour. Written by sql/rollup/cost.sql from gpu_hour; hours derived before this
-- migration read '' until their day is derived again (`gpuledger rollup --force`).
-- No DEFAULT: the derivation must yield it (ingest/store.py Stage.fill fills the columns without one).
ALTER TABLE gpu_cost_hour ADD COLUMN IF NOT EXISTS k8s_namespace LowCardinality(String) AFTER job_id;
