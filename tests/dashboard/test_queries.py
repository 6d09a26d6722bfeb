"""The query functions: placement on a hand-computable fleet, and the rules every dashboard
query keeps (views and rollups only, fixed page paths)."""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta

import pytest

from dashboard import queries
from dashboard.filters import Filters
from tests.helpers import ROOT

COLUMNS = ["hour", "host", "gpu_uuid", "environment", "pool", "team", "held", "gpu_hours", "utilized_gpu_hours", "cost_usd"]


@pytest.fixture
def small_fleet(store):
    """48 hours: team inference holds 2 AWS GPUs all the time (50 % busy, $4/GPU-hour); team burst
    holds 1 AWS GPU for 12 hours; team research holds 4 on-prem GPUs (80 % busy, $1.6/GPU-hour)."""
    rows, t0 = [], datetime(2026, 3, 1)
    for h in range(48):
        hour = t0 + timedelta(hours=h)
        rows += [[hour, "ip-1", f"GPU-i{g}", "aws", "aws-p4d", "inference", 1, 1.0, 0.5, 4.0] for g in range(2)]
        rows += [[hour, "dgx-1", f"GPU-r{g}", "onprem", "dgx", "research", 1, 1.0, 0.8, 1.6] for g in range(4)]
        if h < 12:
            rows.append([hour, "ip-2", "GPU-b0", "aws", "aws-g5", "burst", 1, 1.0, 0.5, 4.0])
    store.client.insert("gpu_cost_hour", rows, column_names=COLUMNS)
    derive_daily(store, [date(2026, 3, 1), date(2026, 3, 2)])
    return store, Filters(date(2026, 3, 1), date(2026, 3, 3))


def derive_daily(store, days) -> None:
    """gpu_cost_day and team_demand_hour from gpu_cost_hour, as the scheduler writes them."""
    from ingest.rollup.replace import replace_days

    for table, sql_name in (("gpu_cost_day", "cost_day"), ("team_demand_hour", "team_demand")):
        replace_days(store, table, list(days), sql_name, {})


def test_placement_moves_the_steady_cloud_baseline_on_prem(small_fleet):
    store, f = small_fleet
    rates = queries.placement_rates(store, f).set_index("environment")["usd_per_utilized_gpu_hour"]
    assert rates["aws"] == pytest.approx((96 * 4 + 12 * 4) / (96 * 0.5 + 12 * 0.5)) == pytest.approx(8.0)
    assert rates["onprem"] == pytest.approx(2.0)
    demand = queries.placement_demand(store, f, 0.1).set_index("team")
    assert demand.loc["inference", "baseline_gpus"] == 2 and demand.loc["inference", "burst_gpu_hours"] == 0
    assert demand.loc["burst", "baseline_gpus"] == 0 and demand.loc["burst", "burst_gpu_hours"] == 12
    assert demand.loc["research", "baseline_gpu_hours"] == 4 * 48
    recs = queries.placement(store, f, 0.1, 85.0)
    # the on-prem pool is held all the time at 80 % busy: saturated, so its burst belongs in the cloud
    assert sorted(recs[["kind", "team", "from_environment", "to_environment"]].values.tolist()) == \
        [["burst to cloud", "", "onprem", "aws"], ["move baseline on-prem", "inference", "aws", "onprem"]]
    rec = recs[recs["kind"] == "move baseline on-prem"].iloc[0]
    assert rec["gpus"] == pytest.approx(2) and rec["gpu_hours"] == pytest.approx(96)
    assert rec["utilized_gpu_hours"] == pytest.approx(48)
    assert rec["savings_usd"] == pytest.approx(48 * (8.0 - 2.0))
    research = queries.placement(store, Filters(date(2026, 3, 1), date(2026, 3, 3), teams=("research",)), 0.1, 85.0)
    assert research["team"].tolist() == [""]  # only the pool-level row: research has no cloud baseline to move


def test_filters_reach_sql_as_values(small_fleet):
    store, f = small_fleet
    assert queries.fleet(store, f)["gpus"].sum() == 7
    assert queries.fleet(store, Filters(f.start, f.end, envs=("aws",)))["gpus"].sum() == 3
    assert queries.fleet(store, Filters(f.start, f.end, teams=("x' OR 1=1 --",))).empty
    assert queries.fleet(store, Filters(f.start, f.end, teams=("inference", "burst")))["gpus"].sum() == 3


# The GPU page shows one GPU: its panels read the per-minute rollup for short ranges and its clocks
# (kept in no rollup) from the raw samples, bounded to one GPU and at most 7 days (docs/dashboard.md).
ONE_GPU = {"gpu_series.sql", "gpu_clocks.sql"}


def test_dashboard_queries_read_views_and_rollups_never_raw_samples():
    files = [p for p in (ROOT / "sql" / "queries").glob("*.sql") if p.name not in ONE_GPU]
    files += list((ROOT / "dashboard").rglob("*.py"))
    assert len(files) > 20
    code = {p: "\n".join(line for line in p.read_text().splitlines() if not line.lstrip().startswith(("#", "--")))
            for p in files}
    assert not [p.name for p, t in code.items() if re.search(r"\bFROM\s+gpu_(samples|minute)\b", t)]
    clocks = (ROOT / "sql" / "queries" / "gpu_clocks.sql").read_text()
    assert "{gpu_uuid:String}" in clocks and "{start:DateTime" in clocks


def test_page_paths_are_stable(site):
    import dash

    assert sorted(p["path"] for p in dash.page_registry.values()) == \
        ["/", "/alerts", "/compliance", "/gpu", "/idle", "/placement", "/spend", "/utilization"]


def test_the_environment_filter_narrows_compliance_alerts_by_their_provider(store):
    # compliance findings label their environment `provider`: an on-prem finding is not an Azure
    # alert (the Overview counted 4 firing alerts under env=azure while showing 1 finding)
    at = datetime(2026, 3, 2, 12)
    rows = [["gpu_idle_window", "fp-idle", {"team": "a", "environment": "azure"}],
            ["compliance_runtime_drift", "fp-drift", {"team": "", "provider": "onprem"}],
            ["compliance_untagged_spend", "fp-untagged", {"team": "", "provider": "azure"}],
            ["team_budget_exceeded", "fp-budget", {"team": "a"}]]            # no environment: shown under every one
    store.insert("alert_state", [[rule, fp, labels, {}, "warning", "firing", 1.0, at, at, None, at, 1]
                                 for rule, fp, labels in rows],
                 ["rule", "fingerprint", "labels", "annotations", "severity", "state", "value", "active_since",
                  "fired_at", "resolved_at", "evaluated_at", "version"])
    f = Filters(date(2026, 3, 1), date(2026, 3, 3), envs=("azure",))
    assert queries.alert_counts(store, f)["alerts"].sum() == 3
    assert sorted(queries.alerts(store, f)["rule"]) == ["compliance_untagged_spend", "gpu_idle_window", "team_budget_exceeded"]
    onprem = Filters(date(2026, 3, 1), date(2026, 3, 3), envs=("onprem",))
    assert sorted(queries.alerts(store, onprem)["rule"]) == ["compliance_runtime_drift", "team_budget_exceeded"]
