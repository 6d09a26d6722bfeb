"""Configuration of the derived data: pools (idle thresholds, on-prem cost model, runtime
baselines), list prices, attribution rules and compliance policies. Assembled into the one
config by gpuledger/config.py; documented key by key in gpuledger.example.toml."""
from __future__ import annotations

from dataclasses import dataclass, field

FIELDS = ("team", "user", "job_id", "k8s_namespace", "k8s_pod", "slurm_account", "host", "pool", "cluster",
          "environment", "region", "instance_id", "instance_type", "account")


@dataclass
class PoolConfig:
    name: str
    environment: str = "onprem"
    idle_util_gpu_pct: float | None = None      # default: analytics.idle_util_gpu_pct
    idle_util_mem_pct: float | None = None
    idle_min_minutes: int | None = None
    capital_usd_per_gpu: float | None = None    # purchase price per GPU (server share included)
    depreciation_months: int | None = None
    operations_usd_per_gpu_month: float | None = None  # power-independent operations: space, staff, support
    pue: float | None = None
    energy_usd_per_kwh: float | None = None
    baseline_driver: str = ""                   # expected driver version ('' = the pool's most common)
    baseline_cuda: str = ""


@dataclass
class ListPrice:
    instance_type: str
    gpus: int
    usd_per_hour: float


@dataclass
class AttributionRule:
    """First matching rule decides the team. ``when`` maps a field (see FIELDS, or ``tag:KEY``)
    to a glob pattern (``*`` and ``?``); all must match. The team is ``team``, or the value of the
    field named by ``team_from`` (e.g. ``tag:team``) when that is not empty."""

    name: str
    team: str = ""
    team_from: str = ""
    when: dict[str, str] = field(default_factory=dict)

    def validate(self):
        if bool(self.team) == bool(self.team_from):
            return "team", "exactly one of team or team_from"
        for key in [*self.when, *([self.team_from] if self.team_from else [])]:
            if key not in FIELDS and not key.startswith("tag:"):
                return "when" if key in self.when else "team_from", f"a field among {', '.join(FIELDS)} or tag:KEY, got {key!r}"
        return None


def default_rules() -> list[AttributionRule]:
    return [
        AttributionRule(name="team label", team_from="team"),
        AttributionRule(name="cloud tag team", team_from="tag:team"),
    ]


@dataclass
class ResidencyPolicy:
    """Where a team's workloads (and so its data) may run: entries are ``onprem``,
    ``PROVIDER`` (any region) or ``PROVIDER:REGION`` (globs allowed), e.g. ``aws:eu-central-1``."""

    team: str
    allowed: list[str] = field(default_factory=list)


@dataclass
class PoliciesConfig:
    residency: list[ResidencyPolicy] = field(default_factory=list)
    untagged_tag_keys: list[str] = field(default_factory=lambda: ["team"])  # cloud GPU spend lacking all of these is untagged
    untagged_min_usd: float = 1.0
    drift_within_pool: bool = True
    drift_across_environments: bool = True
    health_ecc_uncorrected: bool = True
    health_xid: bool = True
    health_throttle_mask: int = 0x68            # HW slowdown | HW thermal | HW power brake (NVML clocks-event bits)


@dataclass
class AnalyticsConfig:
    max_gap_s: int = 300                         # a longer silence between samples is "no data"
    default_interval_s: int = 60                 # how long a lone sample holds
    idle_util_gpu_pct: float = 5.0
    idle_util_mem_pct: float = 5.0
    idle_min_minutes: int = 15
    idle_max_gap_minutes: int = 2                # no-data gaps this short do not end an idle window
    capital_usd_per_gpu: float = 30000.0         # 4x A100 server ≈ $120k amortized over 36 months
    depreciation_months: int = 36
    operations_usd_per_gpu_month: float = 290.0
    pue: float = 1.4
    energy_usd_per_kwh: float = 0.12
    lookback_days: int = 35                      # how far back late data is looked for
    interval_minutes: int = 15                   # how often `gpuledger up` derives
    workers: int = 2                             # days derived at once (each on its own store handle)
    baseline_quantile: float = 0.1               # placement: a team's baseline demand = this quantile of its hourly GPUs
    saturated_pct: float = 85.0                  # placement: on-prem pool utilization above which it is saturated
    underused_pct: float = 30.0                  # not read (v_pool_load has its own thresholds); accepted for old configs
    queue_burst_wait_hours: float = 1.0          # placement: a team's p95 queue wait for a pool above which it should burst
    # placement: relative throughput per GPU model (A100 = 1.0), over dashboard/throughput.py's defaults
    throughput: dict[str, float] = field(default_factory=dict)

    def validate(self):
        if not 1 <= self.max_gap_s <= 3600:
            return "max_gap_s", "seconds between 1 and 3600 (a sample never holds for more than an hour)"
        if not 1 <= self.default_interval_s <= self.max_gap_s:
            return "default_interval_s", "seconds between 1 and max_gap_s"
        if not 1 <= self.workers <= 16:
            return "workers", "a number of parallel workers from 1 to 16"
        if self.depreciation_months < 1:
            return "depreciation_months", "a number of months >= 1"
        if not 0 < self.baseline_quantile < 1:
            return "baseline_quantile", "a fraction between 0 and 1"
        for model, factor in self.throughput.items():
            if not factor > 0:
                return f"throughput.{model}", "a throughput relative to an A100 (1.0), above 0"
        return None
