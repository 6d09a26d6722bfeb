-- The partitions table {t} holds rows in.
SELECT DISTINCT partition_id
FROM system.parts
WHERE database = currentDatabase() AND table = {t:String} AND active
ORDER BY partition_id
