-- Idle & waste, GPU focus: the idle window of GPU {gpu} (its MIG instance {mig}, or any of it when
-- {mig} is empty) that starts within the second {window} (alerts write a window's start to the
-- second), whatever the range and filters. More than one row: several MIG instances went idle in
-- that second. All the view's columns (is_open where the store has it).
SELECT *
FROM v_idle_waste
WHERE gpu_uuid = {gpu:String} AND ({mig:String} = '' OR mig_instance = {mig:String})
  AND start >= {window:DateTime('UTC')} AND start < {window:DateTime('UTC')} + INTERVAL 1 SECOND
ORDER BY length(mig_instance), mig_instance, start
LIMIT 10
