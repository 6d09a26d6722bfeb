-- Bytes on disk per table of the store's database (active parts only): gpuledger_store_table_bytes.
SELECT table, sum(bytes_on_disk) AS bytes
FROM system.parts
WHERE active AND database = currentDatabase()
GROUP BY table
ORDER BY table
