-- Whether an idle window is still open: it holds its GPU entity's latest sample (no sample of that
-- GPU came after the window's last idle one when it was derived). The gpu_idle_window alert fires
-- only for open windows; windows derived before this column existed read 0 until the next
-- `gpuledger rollup`, which recomputes every window that can still be open.
ALTER TABLE idle_windows ADD COLUMN IF NOT EXISTS is_open UInt8 AFTER covered_s;
