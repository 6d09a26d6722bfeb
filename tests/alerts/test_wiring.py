"""The alerts engine in the platform: migration 005 in the full chain, the scheduler job."""
from types import SimpleNamespace

from alerts.config import AlertsConfig
from alerts.scheduler import install

TABLES = {"alert_state", "alert_events", "alert_notifications", "alert_delivery_attempts", "alert_silences"}


def test_migration_005_applies_in_the_full_chain(store):
    names = {r[0] for r in store.rows("SELECT name FROM system.tables WHERE database = currentDatabase()")}
    assert TABLES <= names
    assert 5 in {r[0] for r in store.rows("SELECT version FROM schema_migrations")}


def test_scheduler_job_runs_rounds_and_reports_rule_errors(astore):
    from gpuledger.platform import Platform

    cfg = SimpleNamespace(alerts=AlertsConfig(interval_s=15), teams=[], source="defaults")
    platform = Platform(cfg, astore)
    engine = install(platform, cfg)
    job = platform.scheduler.get_job("alerts")
    assert engine is not None and job.trigger.interval.total_seconds() == 15
    job.func()                            # the views are missing here: the round runs, the part is degraded
    part = platform.parts["alerts"]
    assert part["last_ok"] is None and "RuleError: rule gpu_idle_window: its query failed" in part["last_error"]
    cfg_off = SimpleNamespace(alerts=AlertsConfig(enabled=False), teams=[], source="defaults")
    assert install(Platform(cfg_off, astore), cfg_off) is None
