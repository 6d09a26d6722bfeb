"""Snapshots of the config the SQL joins against (config_pools, config_teams, config_list_prices).

Rewritten on every derivation, so finance can also see in SQL which cost model produced a number.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

POOL_COLUMNS = ["pool", "environment", "idle_util_gpu_pct", "idle_util_mem_pct", "idle_min_minutes",
                "capital_usd_per_gpu", "depreciation_months", "operations_usd_per_gpu_month", "pue",
                "energy_usd_per_kwh", "baseline_driver", "baseline_cuda"]


def pool_row(name: str, environment: str, pool, defaults) -> list:
    def pick(key):
        value = getattr(pool, key, None) if pool is not None else None
        return getattr(defaults, key) if value is None else value

    return [name, environment, pick("idle_util_gpu_pct"), pick("idle_util_mem_pct"), pick("idle_min_minutes"),
            pick("capital_usd_per_gpu"), pick("depreciation_months"), pick("operations_usd_per_gpu_month"),
            pick("pue"), pick("energy_usd_per_kwh"),
            pool.baseline_driver if pool else "", pool.baseline_cuda if pool else ""]


def refresh(store, cfg) -> None:
    """Write the config snapshot tables; pools seen in the rollups but not configured get defaults
    (run after the rollups, before costs and idle windows, which read them)."""
    configured = {p.name: p for p in cfg.pools}
    seen = dict(store.rows("SELECT pool, any(environment) FROM gpu_hour GROUP BY pool"))
    rows = [pool_row(name, configured[name].environment if name in configured else seen.get(name, ""),
                     configured.get(name), cfg.analytics)
            for name in sorted(set(configured) | set(seen))]
    _rewrite(store, "config_pools", POOL_COLUMNS, rows)
    _rewrite(store, "config_teams", ["team", "budget_usd_month", "contact"],
             [[t.name, t.budget_usd_month, t.contact] for t in cfg.teams])
    _rewrite(store, "config_list_prices", ["instance_type", "gpus", "usd_per_hour"],
             [[p.instance_type, p.gpus, p.usd_per_hour] for p in cfg.list_prices])


def _rewrite(store, table: str, columns: list[str], rows: list[list]) -> None:
    store.command(f"TRUNCATE TABLE {table}")
    if rows:
        store.insert(table, rows, columns)


def fingerprint(cfg) -> int:
    """Changes when anything that changes derived numbers changes (pools, prices, rules, thresholds)."""
    relevant = {
        "analytics": asdict(cfg.analytics),
        "pools": [asdict(p) for p in cfg.pools],
        "prices": [asdict(p) for p in cfg.list_prices],
        "rules": [asdict(r) for r in cfg.attribution],
    }
    digest = hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).digest()
    return int.from_bytes(digest[:8], "little")
