"""The built-in rule pack against stand-ins of the analytics views (exact contract names and
columns): it fires for the planted problems and nothing else; thresholds come from config."""
from datetime import datetime, timedelta, timezone

import pytest

from alerts.builtin import BUILTIN_RULES
from alerts.config import AlertsConfig, BuiltinRuleConfig
from alerts.engine import Engine
from alerts.rules import builtin_rules
from bench import alerts_standins as standins

NOW = datetime(2026, 3, 20, 12, 0, tzinfo=timezone.utc)


def ago(**kw) -> datetime:
    return (NOW - timedelta(**kw)).replace(tzinfo=None)


def idle(host, gpu, kind, team, start, hours, mig="", cost=10.0, is_open=0, env="onprem"):
    return (host, gpu, mig, "dgx-h100", env, "ams1", kind, team, "maya" if team else "", "nb-1" if team else "",
            start, start + timedelta(hours=hours), int(hours * 3600), cost, is_open, hours * 3600)


def open_idle(host, gpu, kind, team, hours, *, ended_ago_min=1, **kw):
    """A window that holds its GPU's latest sample, ``ended_ago_min`` before NOW (where it is derived to)."""
    return idle(host, gpu, kind, team, ago(hours=hours, minutes=ended_ago_min), hours, is_open=1, **kw)


@pytest.fixture
def planted(astore):
    """A month of a small fleet with the demo's planted problems and plenty of normal rows."""
    standins.create(astore)
    rows = [open_idle("dgx-07", "GPU-a", "allocated", "data-science", 6, cost=19.2),    # idle now: fire
            open_idle("dgx-07", "GPU-b", "allocated", "data-science", 6),
            open_idle("dgx-02", "GPU-m", "allocated", "data-science", 5, mig="1g.10gb-3"),
            open_idle("slurm-1", "GPU-c", "unallocated", "", 4, ended_ago_min=10),
            open_idle("g5-1", "GPU-e", "unallocated", "", 5, env="aws"),
            # past waste never fires: ended long ago, ended a minute ago (a busy sample came),
            # open but the GPU stopped reporting 2 h ago, open but shorter than min_hours
            idle("dgx-07", "GPU-a", "allocated", "data-science", ago(days=20), 6),
            idle("slurm-1", "GPU-d", "unallocated", "", ago(hours=4, minutes=1), 4),
            open_idle("slurm-1", "GPU-f", "unallocated", "", 5, ended_ago_min=120),
            open_idle("dgx-03", "GPU-g", "allocated", "research", 1.5)]
    rows += [idle(f"dgx-{i % 9:02d}", f"GPU-n{i}", "allocated", "research", ago(days=i % 29, hours=i % 7),
                  0.25 + (i % 7) * 0.25) for i in range(60)]                       # 15 min .. 1.75 h
    rows.append(idle("dgx-01", "GPU-old", "allocated", "research", ago(days=45), 8))
    standins.insert(astore, "v_idle_waste", rows)
    util, spend = [], []
    for d in range(1, 31):
        day = (NOW - timedelta(days=d)).date()
        for i, team in enumerate(standins.TEAMS):
            util.append((team, "onprem", day, 35.0 + 5 * i + (d % 3), 200.0))
            spend.append((day, team, "onprem", "onprem_capital", "USD", 900.0 + 30 * i + 40 * (d % 4)))
            spend.append((day, team, "aws", "cloud_gpu", "USD", 300.0 + 25 * (d % 5)))
            spend.append((day, team, "azure", "cloud_gpu", "EUR", 9000.0 * (d == 1)))      # not USD: left out
    util.append(("applied-ml", "aws", (NOW - timedelta(days=2)).date(), 1.0, 10.0))
    standins.insert(astore, "v_team_utilization", util)
    standins.insert(astore, "v_team_spend", spend)
    standins.insert(astore, "gpu_waste_day", [(d, t, 100.0, 20.0, 50.0) for d, t, *_ in spend[::3]])
    month, last_month = NOW.date().replace(day=1), (NOW.date().replace(day=1) - timedelta(days=1)).replace(day=1)
    standins.insert(astore, "v_team_budget", [
        ("llm-finetune", month, 5000.0, 9000.0, 14000.0),
        ("research", month, 40000.0, 15000.0, 30000.0),
        ("research", last_month, 10000.0, 39000.0, 39000.0),          # an old month: not looked at
        ("vision", last_month, 1000.0, 5000.0, 5000.0),               # over only in a month gone by: never fires
        ("search-inference", month, 0.0, 5000.0, 8000.0),             # no budget
    ])
    standins.insert(astore, "v_compliance_open", [
        ("residency", "res-1", "critical", "clinical-ai", "gcp-g2-1", "", "gcp", "us-east4", "i-123",
         "clinical-ai ran on gcp us-east4, not allowed", '[{"ts": "x"}]', 3.5, ago(days=18), ago(days=17)),
        ("residency", "res-0", "critical", "clinical-ai", "gcp-g2-0", "", "gcp", "us-east4", "i-000",
         "old finding", "[]", 1.0, ago(days=80), ago(days=70)),
        ("untagged_spend", "unt-1", "warning", "", "", "", "aws", "us-east-1", "i-untagged",
         "i-untagged has no team tag ($812)", "[]", 812.0, ago(days=30), ago(hours=2)),
        ("runtime_drift", "drift-1", "warning", "research", "dgx-12", "", "onprem", "ams1", "",
         "dgx-12 runs driver 535.104.05, pool baseline 550.90.07", "[]", 0.0, ago(days=30), ago(hours=1)),
        ("gpu_health", "health-1", "bogus", "", "dgx-05", "GPU-h", "onprem", "ams1", "", "XID 48 then 63 on GPU-h",
         "[]", 0.0, ago(days=9), ago(days=9)),
    ])
    return astore


def engine(store, **cfg) -> Engine:
    c = AlertsConfig(**cfg)
    return Engine(store, builtin_rules(c), c, {})


def firing(report) -> list[tuple[str, str]]:
    keys = {"gpu_idle_window": "gpu_uuid", "team_budget_exceeded": "team", "team_budget_forecast": "team",
            "team_utilization_low": "team", "team_spend_anomaly": "team"}
    return sorted((st.rule, st.labels.get(keys.get(st.rule, "policy"), "")) for st in report.firing)


def test_fires_exactly_for_the_planted_problems(planted):
    report = engine(planted).evaluate(NOW, apply=False)
    assert report.errors == {}
    assert firing(report) == [
        ("compliance_gpu_health", "gpu_health"), ("compliance_residency", "residency"),
        ("compliance_runtime_drift", "runtime_drift"), ("compliance_untagged_spend", "untagged_spend"),
        ("gpu_idle_window", "GPU-a"), ("gpu_idle_window", "GPU-b"), ("gpu_idle_window", "GPU-c"),
        ("gpu_idle_window", "GPU-e"), ("gpu_idle_window", "GPU-m"),
        ("team_budget_exceeded", "llm-finetune"), ("team_budget_forecast", "llm-finetune"),
    ]
    muted = {st.rule for st in report.firing if st.fingerprint in report.muted}
    assert muted == {"team_budget_forecast"}              # inhibited by team_budget_exceeded
    by_rule = {st.rule: st for st in report.firing}
    idle_a = next(st for st in report.firing if st.labels.get("gpu_uuid") == "GPU-a")
    assert idle_a.value == 6.0 and idle_a.labels["severity"] == "warning" and idle_a.labels["category"] == "idle"
    assert idle_a.summary == ("job nb-1 of user maya (team data-science) has held an idle NVIDIA H100 80GB HBM3 on "
                              "dgx-07 since 2026-03-20 05:59 UTC for 6.0 h ($3.20/h, $19.20 so far): "
                              "stop the job or release the GPU")
    assert idle_a.labels["window_start"] == "2026-03-20T05:59:00Z"
    assert idle_a.annotations["value"] == "6 h" and idle_a.annotations["usd"] == "19.2"
    assert idle_a.annotations["runbook_url"].endswith("/docs/runbooks.md#gpu_idle_window")
    mig = next(st for st in report.firing if st.labels.get("gpu_uuid") == "GPU-m")
    assert "idle NVIDIA H100 80GB HBM3 (MIG 1g.10gb-3) on dgx-02 since" in mig.summary
    cloud = next(st for st in report.firing if st.labels.get("gpu_uuid") == "GPU-e")
    assert cloud.summary.startswith("the unallocated NVIDIA H100 80GB HBM3 on g5-1 has sat idle since")
    assert cloud.summary.endswith("stop the instance or scale its node group down")
    assert by_rule["compliance_gpu_health"].severity == "critical"    # 'bogus' severity: the rule's
    assert by_rule["compliance_untagged_spend"].summary == \
        "i-untagged has no team tag ($812) ($812.00 of spend): tag the resources with the team's cost-allocation key"
    assert by_rule["team_budget_exceeded"].summary == \
        "team llm-finetune spent $9,000 of its $5,000 budget for 2026-03-01 (180%, $4,000 over): " \
        "stop or defer jobs that can wait, or ask finance to raise the budget"
    assert by_rule["team_budget_exceeded"].annotations["value"] == "180 % of budget"


def test_thresholds_are_config_keys(planted):
    overrides = {
        "gpu_idle_window": BuiltinRuleConfig(params={"min_hours": 5.5}),
        "team_utilization_low": BuiltinRuleConfig(params={"target_pct": 47.0}),
        "team_budget_exceeded": BuiltinRuleConfig(enabled=False),
        "compliance_runtime_drift": BuiltinRuleConfig(severity="info", labels={"owner": "platform"}),
    }
    report = engine(planted, builtin_rules=overrides).evaluate(NOW, apply=False)
    got = firing(report)
    assert [g for g in got if g[0] == "gpu_idle_window"] == [("gpu_idle_window", "GPU-a"), ("gpu_idle_window", "GPU-b")]
    assert [g for g in got if g[0] == "team_utilization_low"] == \
        [("team_utilization_low", t) for t in ("llm-finetune", "research", "search-inference")]
    low = next(st for st in report.firing if st.rule == "team_utilization_low")
    # waste = idle (allocated and unallocated) + unused: 7 days x $170
    assert "(target 47%, 1,400 GPU-hours, $1,190 wasted): release idle GPUs" in low.summary
    assert "team_budget_exceeded" not in {r for r, _ in got}
    drift = next(st for st in report.firing if st.rule == "compliance_runtime_drift")
    assert drift.labels["severity"] == "info" and drift.labels["owner"] == "platform"
    assert report.muted == {}                # nothing critical about the budget any more


def test_spend_anomaly_fires_on_a_day_far_above_the_baseline(planted):
    yesterday = (NOW - timedelta(days=1)).date()
    standins.insert(planted, "v_team_spend", [(yesterday, "applied-ml", "aws", "cloud_gpu", "USD", 4000.0)])
    report = engine(planted).evaluate(NOW, apply=False)
    [st] = [st for st in report.firing if st.rule == "team_spend_anomaly"]
    assert st.labels["team"] == "applied-ml" and st.labels["day"] == str(yesterday)
    assert 5000 < st.value < 6000 and float(st.annotations["baseline_usd"]) < 1500
    strict = engine(planted, builtin_rules={"team_spend_anomaly": BuiltinRuleConfig(params={"factor": 5.0})})
    assert [s for s in strict.evaluate(NOW, apply=False).firing if s.rule == "team_spend_anomaly"] == []


def test_missing_views_are_rule_errors_not_crashes(astore):
    report = engine(astore).evaluate(NOW, apply=False)
    assert set(report.errors) == set(BUILTIN_RULES) and report.alerts == []
    assert "rule gpu_idle_window: its query failed" in report.errors["gpu_idle_window"]
    assert "v_idle_waste" in report.errors["gpu_idle_window"]


def test_every_builtin_rule_has_its_sql_and_documented_params():
    for rule in BUILTIN_RULES.values():
        sql = rule.sql()
        assert "__POLICY__" not in sql
        for param in rule.params:
            assert f"{{{param}:Float64}}" in sql, f"{rule.name}: {param} is not used by its query"


def test_idle_alerts_only_for_windows_open_now(planted):
    """Loosened thresholds bring in the open windows they exclude, never the ended ones."""
    def idle_gpus(**params):
        report = engine(planted, builtin_rules={"gpu_idle_window": BuiltinRuleConfig(params=params)}).evaluate(
            NOW, apply=False)
        return sorted(st.labels["gpu_uuid"] for st in report.firing if st.rule == "gpu_idle_window")

    assert idle_gpus() == ["GPU-a", "GPU-b", "GPU-c", "GPU-e", "GPU-m"]
    assert idle_gpus(stale_minutes=180) == ["GPU-a", "GPU-b", "GPU-c", "GPU-e", "GPU-f", "GPU-m"]
    assert idle_gpus(min_hours=1) == ["GPU-a", "GPU-b", "GPU-c", "GPU-e", "GPU-g", "GPU-m"]
    assert idle_gpus(stale_minutes=5) == ["GPU-a", "GPU-b", "GPU-e", "GPU-m"]     # GPU-c's data is 10 min old
