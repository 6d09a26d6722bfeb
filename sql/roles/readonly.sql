-- The read-only role for finance, BI tools and the dashboard (server mode; the embedded store has
-- no users: there `gpuledger query` without --write applies the same policy, ingest/sqlguard.py).
-- Apply with an admin account, e.g. clickhouse-client --multiquery < sql/roles/readonly.sql
-- (again after an upgrade: it narrows an older, wider grant). Users are created separately so their
-- passwords never live in this repository (sql/README.md "Read-only access").
--
-- SELECT on the documented views and the tables behind them (the list in sql/README.md), nothing
-- else: not the alert tables (delivery attempts and notifications quote channel endpoints), not
-- the state and bookkeeping tables. No file/url/remote table functions either (they need grants
-- this role does not have). The limits are CONST: a query's SETTINGS or SET cannot raise them.
CREATE SETTINGS PROFILE OR REPLACE gpuledger_readonly SETTINGS
    readonly = 2 CONST,
    max_execution_time = 120 CONST,
    max_memory_usage = 10000000000 CONST,
    max_result_rows = 10000000 CONST,
    result_overflow_mode = 'throw' CONST;
CREATE ROLE IF NOT EXISTS gpuledger_reader SETTINGS PROFILE 'gpuledger_readonly';
REVOKE ALL ON *.* FROM gpuledger_reader;
GRANT SELECT ON gpuledger.v_team_spend TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_team_budget TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_showback_focus TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_team_waste TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_idle_waste TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_unit_cost TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_unallocated TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_allocation_coverage TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_fleet_utilization TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_team_utilization TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_pool_load TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_compliance_open TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_billing_instances TO gpuledger_reader;
GRANT SELECT ON gpuledger.v_runtime_matrix TO gpuledger_reader;
GRANT SELECT ON gpuledger.gpu_samples TO gpuledger_reader;
GRANT SELECT ON gpuledger.gpu_minute TO gpuledger_reader;
GRANT SELECT ON gpuledger.gpu_hour TO gpuledger_reader;
GRANT SELECT ON gpuledger.gpu_cost_hour TO gpuledger_reader;
GRANT SELECT ON gpuledger.gpu_cost_day TO gpuledger_reader;
GRANT SELECT ON gpuledger.gpu_util_day TO gpuledger_reader;
GRANT SELECT ON gpuledger.team_demand_hour TO gpuledger_reader;
GRANT SELECT ON gpuledger.team_spend_day TO gpuledger_reader;
GRANT SELECT ON gpuledger.idle_windows TO gpuledger_reader;
GRANT SELECT ON gpuledger.gpu_idle_segments TO gpuledger_reader;
GRANT SELECT ON gpuledger.gpu_waste_hour TO gpuledger_reader;
GRANT SELECT ON gpuledger.gpu_waste_day TO gpuledger_reader;
GRANT SELECT ON gpuledger.billing_line_hour TO gpuledger_reader;
GRANT SELECT ON gpuledger.showback_focus_day TO gpuledger_reader;
GRANT SELECT ON gpuledger.compliance_findings TO gpuledger_reader;
GRANT SELECT ON gpuledger.billing_line_items TO gpuledger_reader;
GRANT SELECT ON gpuledger.billing_quarantine TO gpuledger_reader;
GRANT SELECT ON gpuledger.config_pools TO gpuledger_reader;
GRANT SELECT ON gpuledger.config_teams TO gpuledger_reader;
GRANT SELECT ON gpuledger.config_list_prices TO gpuledger_reader;
GRANT SELECT ON gpuledger.queue_pending TO gpuledger_reader;
GRANT SELECT ON gpuledger.queue_pending_hour TO gpuledger_reader;
