-- Idle windows and the unused part of waste are priced at their owner's own cost per covered second
-- in the GPU-hour (on-prem energy is measured per owner), not the GPU-hour's average: an idle owner
-- sharing an hour with a busy one was charged above its cost. gpu_idle_segments.cost_usd (009 says
-- "at the GPU-hour's cost per covered second") is now at the owner's, the GPU-hour's where the
-- owner has no cost row in the hour. Every day in the lookback is derived again by the next
-- `gpuledger rollup` (or the platform's rollup job); older days keep their rows until
-- `gpuledger rollup --force --since DAY`.
TRUNCATE TABLE IF EXISTS derivation_state;
