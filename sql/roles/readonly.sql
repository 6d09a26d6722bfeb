-- A read-only role for finance, the dashboard and anyone else who only reads (server mode;
-- the embedded store has no users). Apply with an admin account:
--   gpuledger --store http://admin@clickhouse:8123/gpuledger query --write "$(cat sql/roles/readonly.sql)"
-- one statement at a time, or with clickhouse-client --multiquery < sql/roles/readonly.sql.
-- Users are created separately so their passwords never live in this repository (sql/README.md).
CREATE SETTINGS PROFILE IF NOT EXISTS gpuledger_readonly SETTINGS readonly = 2, max_execution_time = 120;
CREATE ROLE IF NOT EXISTS gpuledger_reader SETTINGS PROFILE 'gpuledger_readonly';
GRANT SELECT ON gpuledger.* TO gpuledger_reader;
