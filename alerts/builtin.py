"""The built-in rule pack: one SQL file per rule in ``sql/alerts/``, defaults here.

Every threshold is a query parameter with a default below; the config overrides it with
``[alerts.builtin_rules.<name>] params = { min_hours = 4 }`` (and severity, for, channels, ...).
The queries read only the analytics views (``v_idle_waste``, ``v_team_utilization``,
``v_team_budget``, ``v_team_spend``, ``v_compliance_open``), never raw tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from base.sqlfiles import sql


@dataclass(frozen=True)
class BuiltinRule:
    name: str
    severity: str
    page: str                                  # dashboard page the notification links to
    category: str
    params: dict[str, float] = field(default_factory=dict)
    summary: str = ""                          # template over labels, value and annotations
    for_duration: str = "0s"
    repeat_interval: str = "24h"
    group_by: tuple[str, ...] = ("alertname", "team")
    policy: str = ""                           # compliance rules: the policy whose findings they raise

    def sql(self) -> str:
        """The rule's query; the compliance rules share one, for their own policy (a constant of
        this module, never user input)."""
        if self.policy:
            return sql("alerts/compliance", policy=self.policy)
        return sql(f"alerts/{self.name}")


def _compliance(policy: str, severity: str, summary: str) -> BuiltinRule:
    return BuiltinRule(f"compliance_{policy}", severity, "compliance", "compliance",
                       {"lookback_days": 30.0}, summary, policy=policy)


BUILTIN_RULES: dict[str, BuiltinRule] = {r.name: r for r in (
    BuiltinRule(
        "gpu_idle_window", "warning", "idle", "idle",
        {"min_hours": 2.0, "lookback_days": 30.0},
        "{kind} GPU idle {value:.1f} h on {host} {gpu} (owner {team}), wasting ${cost_usd:,.2f}",
    ),
    BuiltinRule(
        "team_utilization_low", "warning", "idle", "utilization",
        {"target_pct": 15.0, "lookback_days": 7.0, "min_gpu_hours": 24.0},
        "team {team} used its GPUs {value:.1f}% over the last {lookback_days:.0f} days "
        "(target {target_pct:.0f}%, {gpu_hours:,.0f} GPU-hours)",
        group_by=("alertname",),
    ),
    BuiltinRule(
        "team_budget_exceeded", "critical", "spend", "budget",
        {"threshold_pct": 100.0},
        "team {team} spent ${spend_mtd_usd:,.0f} of its ${budget_usd:,.0f} budget for {month} ({value:.0f}%)",
    ),
    BuiltinRule(
        "team_budget_forecast", "warning", "spend", "budget",
        {"threshold_pct": 100.0},
        "team {team} is forecast to spend ${forecast_usd:,.0f} against its ${budget_usd:,.0f} budget "
        "for {month} ({value:.0f}%)",
    ),
    BuiltinRule(
        "team_spend_anomaly", "warning", "spend", "spend",
        {"baseline_days": 14.0, "factor": 2.0, "sigmas": 3.0, "min_increase_usd": 200.0,
         "min_baseline_days": 7.0},
        "team {team} spent ${value:,.0f} on {day}, against a trailing daily average of "
        "${baseline_usd:,.0f}",
    ),
    _compliance("residency", "critical", "{summary}"),
    _compliance("untagged_spend", "warning", "{summary}"),
    _compliance("runtime_drift", "warning", "{summary}"),
    _compliance("gpu_health", "critical", "{summary}"),
)}
