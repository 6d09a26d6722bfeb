"""The built-in rule pack: one SQL file per rule in ``sql/alerts/``, defaults here.

Every threshold is a query parameter with a default below; the config overrides it with
``[alerts.builtin_rules.<name>] params = { min_hours = 4 }`` (and severity, for, channels, ...).
The queries read only the analytics views (``v_idle_waste``, ``v_team_utilization``,
``v_team_budget``, ``v_team_spend``, ``v_compliance_open``) and the daily waste rollup
(``gpu_waste_day``), never raw samples or bills.

Each summary says what happened and what to do. Every rule returns ``annotation_usd``, the money
at stake (so far), which notification subjects add up; ``value`` is shown with the rule's unit.
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
    summary: str = ""                          # what happened and what to do: a template over labels,
                                               # value and annotations
    unit: str = ""                             # what ``value`` counts (h, %, USD, ...)
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


def _compliance(policy: str, severity: str, todo: str) -> BuiltinRule:
    return BuiltinRule(f"compliance_{policy}", severity, "compliance", "compliance",
                       {"lookback_days": 30.0}, "{summary} (${usd:,.2f} of spend): " + todo, "finding", policy=policy)


BUILTIN_RULES: dict[str, BuiltinRule] = {r.name: r for r in (
    BuiltinRule(
        "gpu_idle_window", "warning", "idle", "idle",
        {"min_hours": 2.0, "stale_minutes": 30.0},
        "{situation} since {since} UTC for {value:.1f} h (${usd_per_hour:,.2f}/h, ${usd:,.2f} so far): {action}",
        "h",
    ),
    BuiltinRule(
        "team_utilization_low", "warning", "idle", "utilization",
        {"target_pct": 15.0, "lookback_days": 7.0, "min_gpu_hours": 24.0},
        "team {team} used its GPUs {value:.1f}% over the last {lookback_days:.0f} days (target {target_pct:.0f}%, "
        "{gpu_hours:,.0f} GPU-hours, ${usd:,.0f} wasted): release idle GPUs, right-size jobs, or pack work onto "
        "fewer GPUs",
        "%", group_by=("alertname",),
    ),
    BuiltinRule(
        "team_budget_exceeded", "critical", "spend", "budget",
        {"threshold_pct": 100.0},
        "team {team} spent ${spend_mtd_usd:,.0f} of its ${budget_usd:,.0f} budget for {month} ({value:.0f}%, "
        "${usd:,.0f} over): stop or defer jobs that can wait, or ask finance to raise the budget",
        "% of budget",
    ),
    BuiltinRule(
        "team_budget_forecast", "warning", "spend", "budget",
        {"threshold_pct": 100.0},
        "team {team} is forecast to spend ${forecast_usd:,.0f} against its ${budget_usd:,.0f} budget for {month} "
        "({value:.0f}%, ${usd:,.0f} over): release idle and underused GPUs now (Idle & waste page)",
        "% of budget",
    ),
    BuiltinRule(
        "team_spend_anomaly", "warning", "spend", "spend",
        {"baseline_days": 14.0, "factor": 2.0, "sigmas": 3.0, "min_increase_usd": 200.0,
         "min_baseline_days": 7.0},
        "team {team} spent ${value:,.0f} on {day}, ${usd:,.0f} above its trailing daily average of "
        "${baseline_usd:,.0f}: look for runaway jobs and instances left running",
        "USD",
    ),
    _compliance("residency", "critical", "move the workload to a region its policy allows"),
    _compliance("untagged_spend", "warning", "tag the resources with the team's cost-allocation key"),
    _compliance("runtime_drift", "warning", "bring the driver and CUDA back to the pool's baseline"),
    _compliance("gpu_health", "critical", "drain the node and open a hardware ticket"),
)}
