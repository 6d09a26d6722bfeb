"""Plain, JSON-able facts about a fleet that a gpuledger config can be built from."""
from __future__ import annotations

from . import catalog
from .catalog import INSTANCE_TYPES, MODELS
from .fleet import Fleet


def fleet_metadata(fleet: Fleet) -> dict:
    """Teams, pools, host -> pool assignments, cloud instances and list prices."""
    return {
        "seed": fleet.seed,
        "gpus": fleet.gpus,
        "trace_source": fleet.shapes.source,
        "teams": [_team(t) for t in fleet.teams],
        "pools": [_pool(fleet, p) for p in fleet.pools],
        "hosts": {h.name: h.pool for h in fleet.hosts},
        "instances": [_instance(i) for i in fleet.instances],
        "list_prices": {t.name: {"provider": t.provider, "usd_per_hour": t.price_hour,
                                 "gpus": t.gpus, "model": MODELS[t.model].name}
                        for t in INSTANCE_TYPES.values()},
        "tag_keys": ["team"],
        "onprem": {"depreciation_months": catalog.ONPREM_DEPRECIATION_MONTHS,
                   "ops_usd_per_gpu_month": catalog.ONPREM_OPS_USD_PER_GPU_MONTH},
    }


def _team(team) -> dict:
    return {
        "name": team.name,
        "pattern": team.pattern,
        "monthly_budget_usd": team.budget_usd,
        "users": list(team.users),
        "owners": [f"{team.name}-leads@example.com"],
        "slack_channel": f"#{team.name}-gpu",
        "cloud_tag": {"team": team.name},
        "k8s_namespaces": [team.name],
        "slurm_accounts": [team.name],
        "residency": {"allowed": [dict(a) for a in team.allowed]} if team.allowed else None,
    }


def _pool(fleet: Fleet, pool) -> dict:
    hosts = [h for h in fleet.hosts if h.pool == pool.name]
    gpus = len({e.gpu_uuid for e in fleet.entities if e.pool == pool.name})
    out = {
        "name": pool.name, "environment": pool.environment, "region": pool.region,
        "cluster": pool.cluster, "model": MODELS[pool.model].name, "scheduler": pool.scheduler,
        "mig": pool.mig, "hosts": len(hosts), "gpus": gpus,
        "baseline_driver": catalog.BASELINE_DRIVER, "baseline_cuda": catalog.BASELINE_CUDA,
    }
    if pool.environment == "onprem":
        out["site"] = pool.region
        out["capital_usd_per_gpu"] = MODELS[pool.model].capital_usd
        out["max_power_w_per_gpu"] = MODELS[pool.model].max_w
    if pool.mig:
        out["mig_layout"] = [{"gi": s.gi, "profile": s.profile} for s in catalog.MIG_LAYOUT]
    return out


def _instance(inst) -> dict:
    return {"instance_id": inst.instance_id, "name": inst.name, "host": inst.host,
            "provider": inst.provider, "region": inst.region, "zone": inst.zone,
            "instance_type": inst.instance_type, "account": inst.account,
            "tags": dict(inst.tags), "committed": inst.committed}
