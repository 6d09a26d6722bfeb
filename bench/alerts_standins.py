"""Stand-ins for the analytics views (and the daily waste rollup) the built-in alert rules read — the columns the rules use,
with the names and types of ``sql/views/`` — so the alerts tests and benchmark control
every row.

``create(store)`` makes them as tables; ``fill_fleet(store, now, gpus, days)`` fills them with a
fleet of realistic size (idle windows and daily spend of ``gpus`` GPUs over ``days`` days).
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

DDL = {
    "v_idle_waste": """(host String, gpu_uuid String, mig_instance String, pool String, environment String,
        region String, kind String, team String, user String, job_id String, start DateTime('UTC'),
        end DateTime('UTC'), duration_s UInt32, cost_usd Float64, is_open UInt8, covered_s Float64,
        model String DEFAULT 'NVIDIA H100 80GB HBM3', k8s_namespace String DEFAULT '', k8s_pod String DEFAULT '')
        ENGINE = MergeTree ORDER BY (host, gpu_uuid, start)""",
    "gpu_waste_day": """(day Date, team String, idle_allocated_usd Float64, idle_unallocated_usd Float64, unused_usd Float64)
        ENGINE = MergeTree ORDER BY (team, day)""",
    "v_team_utilization": """(team String, environment String, day Date, utilization_pct Float64,
        gpu_hours Float64) ENGINE = MergeTree ORDER BY (team, day)""",
    "v_team_budget": """(team String, month Date, budget_usd Float64, spend_mtd_usd Float64,
        forecast_usd Float64) ENGINE = MergeTree ORDER BY (team, month)""",
    "v_team_spend": """(day Date, team String, environment String, cost_kind String, currency String, cost_usd Float64)
        ENGINE = MergeTree ORDER BY (team, day)""",
    "v_compliance_open": """(policy String, finding_key String, severity String, team String, host String, gpu_uuid String,
        provider String, region String, resource_id String, summary String, evidence String, cost_usd Float64,
        first_seen DateTime('UTC'), last_seen DateTime('UTC')) ENGINE = MergeTree ORDER BY (policy, first_seen)""",
}
COLUMNS = {
    "v_idle_waste": ["host", "gpu_uuid", "mig_instance", "pool", "environment", "region", "kind", "team", "user",
                     "job_id", "start", "end", "duration_s", "cost_usd", "is_open", "covered_s"],
    "gpu_waste_day": ["day", "team", "idle_allocated_usd", "idle_unallocated_usd", "unused_usd"],
    "v_team_utilization": ["team", "environment", "day", "utilization_pct", "gpu_hours"],
    "v_team_budget": ["team", "month", "budget_usd", "spend_mtd_usd", "forecast_usd"],
    "v_team_spend": ["day", "team", "environment", "cost_kind", "currency", "cost_usd"],
    "v_compliance_open": ["policy", "finding_key", "severity", "team", "host", "gpu_uuid", "provider", "region",
                          "resource_id", "summary", "evidence", "cost_usd", "first_seen", "last_seen"],
}
TEAMS = ("research", "llm-finetune", "search-inference", "data-science", "applied-ml", "clinical-ai")
ENVIRONMENTS = ("onprem", "aws", "gcp", "azure")
COST_KINDS = ("cloud_gpu", "cloud_other", "onprem_capital", "onprem_operations", "onprem_energy")


def create(store) -> None:
    for name, ddl in DDL.items():
        store.command(f"CREATE TABLE {name} {ddl}")


def insert(store, table: str, rows: list) -> None:
    if rows:
        store.client.insert(table, [list(r) for r in rows], column_names=COLUMNS[table])


def fill_fleet(store, now: datetime, gpus: int = 256, days: int = 30, seed: int = 1) -> dict[str, int]:
    """A fleet's worth of rows: ~8 idle windows per GPU per day (lognormal lengths, a few over two
    hours; each GPU's last one still open), daily spend per team x environment x cost kind, daily
    utilization and waste, budgets, findings."""
    rng = np.random.default_rng(seed)
    start = int((now - timedelta(days=days)).timestamp())
    per_gpu = 8 * days
    n = gpus * per_gpu
    gpu = np.repeat(np.arange(gpus), per_gpu)
    begin = start + np.sort(rng.integers(0, days * 86400, size=(gpus, per_gpu)), axis=1).ravel()
    length = np.clip(rng.lognormal(np.log(1800), 0.8, n), 900, 10 * 3600).astype("uint32")
    team = np.array(TEAMS)[gpu % len(TEAMS)]
    env = np.array(ENVIRONMENTS)[(gpu // 64) % len(ENVIRONMENTS)]
    kind = np.where(rng.random(n) < 0.6, "allocated", "unallocated")
    idle = [
        [f"node-{g // 8:03d}" for g in gpu], [f"GPU-{g:08x}" for g in gpu], [""] * n, [f"pool-{e}" for e in env],
        list(env), ["ams1"] * n, list(kind), [t if k == "allocated" else "" for t, k in zip(team, kind)],
        ["user"] * n, ["job"] * n, [datetime.fromtimestamp(int(b), timezone.utc) for b in begin],
        [datetime.fromtimestamp(int(b + d), timezone.utc) for b, d in zip(begin, length)], length, length / 3600 * 2.5,
        list((np.arange(n) % per_gpu == per_gpu - 1).astype("uint8")), length.astype("float64"),
    ]
    store.client.insert("v_idle_waste", list(zip(*idle)), column_names=COLUMNS["v_idle_waste"])
    today = now.date()
    spend, util, waste = [], [], []
    for d in range(days):
        day = today - timedelta(days=days - d)
        for t in TEAMS:
            for e in ENVIRONMENTS:
                util.append((t, e, day, float(rng.uniform(35, 70)), float(rng.uniform(50, 400))))
                waste.append((day, t, float(rng.uniform(50, 200)), float(rng.uniform(0, 50)), float(rng.uniform(100, 400))))
                for k in COST_KINDS:
                    spend.append((day, t, e, k, "USD", float(rng.uniform(100, 300))))
    insert(store, "v_team_spend", spend)
    insert(store, "v_team_utilization", util)
    insert(store, "gpu_waste_day", waste)
    month = today.replace(day=1)
    insert(store, "v_team_budget", [(t, month, 60000.0, 20000.0, 45000.0) for t in TEAMS])
    findings = [("runtime_drift", f"drift-{i}", "warning", TEAMS[i % 6], f"node-{i:03d}", "", "onprem", "ams1", "",
                 f"drift {i}", "[]", 0.0, now - timedelta(days=3), now - timedelta(hours=1)) for i in range(20)]
    insert(store, "v_compliance_open", findings)
    return {"v_idle_waste": n, "v_team_spend": len(spend), "v_team_utilization": len(util)}
