"""On the demo fleet, the derived tables show every planted problem and invent none; the idle
windows beside the planted ones are exactly the simulator's natural waste."""
from datetime import datetime

from sim import natural_idle_windows


def iso(value) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(value, datetime) else value


def planted(demo, *kinds):
    return [p for p in demo.planted if p["kind"] in kinds]


def natural(demo):
    return natural_idle_windows(demo.files["fleet"], 30, 60, demo.end)


def test_idle_windows_are_exactly_the_planted_and_the_natural_ones(demo):
    found = sorted((h, g, m, iso(s), iso(e), k) for h, g, m, s, e, k in demo.store.rows(
        "SELECT host, gpu_uuid, mig_instance, start, end, kind FROM idle_windows"))
    expected = [(p["host"], p["gpu_uuid"], p["mig_instance"], p["start"], p["end"],
                 "allocated" if p["kind"] == "idle_allocated" else "unallocated")
                for p in planted(demo, "idle_allocated", "idle_unallocated", "idle_cloud_unused")]
    natural_windows = [(w["host"], w["gpu_uuid"], w["mig_instance"], w["start"], w["end"], w["idle_kind"])
                       for w in natural(demo)]
    assert {w[5] for w in natural_windows} == {"allocated", "unallocated"}
    assert found == sorted(expected + natural_windows)


def test_allocated_idle_windows_name_their_owner(demo):
    owners = {(h, g, m, iso(s)): (t, u, j) for h, g, m, s, t, u, j in demo.store.rows(
        "SELECT host, gpu_uuid, mig_instance, start, team, user, job_id FROM idle_windows WHERE kind = 'allocated'")}
    notebooks = [w for w in natural(demo) if w["kind"] == "notebook_overnight"]
    assert notebooks
    for p in planted(demo, "idle_allocated") + notebooks:
        key = (p["host"], p["gpu_uuid"], p["mig_instance"], p["start"])
        assert owners[key] == (p["team"], p["user"], p["job_id"])


def test_idle_windows_cost_money(demo):
    assert demo.store.scalar("SELECT countIf(cost_usd <= 0) FROM idle_windows") == 0


def test_findings_are_exactly_the_planted_problems(demo):
    rows = demo.store.rows("SELECT policy, team, provider, region, host, gpu_uuid, resource_id FROM compliance_findings")
    assert sorted(r[0] for r in rows) == ["gpu_health", "residency", "runtime_drift", "untagged_spend"]
    by_policy = {r[0]: r for r in rows}
    (residency,) = planted(demo, "residency_violation")
    assert by_policy["residency"][1:4] == (residency["team"], residency["provider"], residency["region"])
    (drift,) = planted(demo, "driver_drift")
    assert by_policy["runtime_drift"][4] == drift["host"]
    (health,) = planted(demo, "gpu_health")
    assert by_policy["gpu_health"][4:6] == (health["host"], health["gpu_uuid"])
    (untagged,) = planted(demo, "untagged_instance")
    assert by_policy["untagged_spend"][6].lower() == untagged["instance_id"].lower()


def test_budget_overrun_is_the_planted_team_only(demo):
    (overrun,) = planted(demo, "budget_overrun")
    over = demo.store.rows("SELECT DISTINCT team FROM v_team_budget WHERE over_budget OR forecast_over_budget")
    assert over == [(overrun["team"],)]


def test_cloud_gpu_spend_equals_the_bill(demo):
    """Every USD of billed EffectiveCost lands in team spend exactly once."""
    billed = demo.store.scalar("SELECT sum(toFloat64(EffectiveCost)) FROM billing_line_items WHERE BillingCurrency = 'USD'")
    spent = demo.store.scalar(
        "SELECT sum(cost) FROM team_spend_day WHERE cost_kind IN ('cloud_gpu', 'cloud_other') AND estimated_cost = 0 AND currency = 'USD'")
    estimated = demo.store.scalar("SELECT sum(cost) FROM team_spend_day WHERE cost_kind = 'cloud_gpu' AND estimated_cost > 0")
    assert abs(spent - billed) < 0.01 * billed, (spent, billed, estimated)


def test_daily_rollups_agree_with_the_hourly_costs(demo):
    hourly = demo.store.rows("SELECT round(sum(gpu_hours), 6), round(sum(utilized_gpu_hours), 6), round(sum(cost_usd), 6) "
                             "FROM gpu_cost_hour")
    daily = demo.store.rows("SELECT round(sum(gpu_hours), 6), round(sum(utilized_gpu_hours), 6), round(sum(cost_usd), 6) "
                            "FROM gpu_cost_day")
    demand = demo.store.rows("SELECT round(sum(gpu_hours), 6), round(sum(utilized_gpu_hours), 6), round(sum(cost_usd), 6) "
                             "FROM team_demand_hour")
    assert hourly == daily == demand
    assert demo.store.scalar("SELECT countIf(driver_version = '') FROM gpu_cost_day") == 0
