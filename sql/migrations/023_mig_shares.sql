-- A MIG GPU's cost adds up to the GPU's whatever the shape of its telemetry (entity_share.sql):
-- an A30 shares it in quarters, not sevenths; with no whole-GPU row the instances share all of it;
-- instances without a profile share it equally; a cloud bill leaves nothing on the whole-GPU row
-- of a partitioned GPU. Every day in the lookback is derived again by the next `gpuledger rollup`
-- (or the platform's rollup job); older days keep their rows until `gpuledger rollup --force --since DAY`.
TRUNCATE TABLE IF EXISTS derivation_state;
