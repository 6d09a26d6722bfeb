-- Staging tables (names starting with {prefix}) older than {older_than_s} seconds: left behind
-- by a process that was killed before it could drop them.
SELECT name
FROM system.tables
WHERE database = currentDatabase() AND startsWith(name, {prefix:String})
  AND metadata_modification_time <= now() - {older_than_s:UInt32}
