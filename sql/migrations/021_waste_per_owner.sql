-- Derived numbers change meaning, so every day in the lookback is derived again by the next
-- `gpuledger rollup` (or the platform's rollup job): gpu_waste_hour holds a row per GPU-hour and
-- owner (it charged a shared hour's waste to one of its owners); a job, pod or user named on a
-- sample holds the GPU whatever its process count (allocated, not unallocated, idle); a minute's
-- owner is the one holding the GPU at its middle. Days older than the lookback keep their rows
-- until `gpuledger rollup --force --since DAY`.
TRUNCATE TABLE IF EXISTS derivation_state;
