"""Compliance findings: residency, untagged GPU spend, runtime drift, GPU health.

Each policy is a query in ``sql/rollup/compliance_*.sql`` returning finding rows with their
evidence; all of them replace the ``compliance_findings`` table in one swap, so a finding that
no longer holds disappears and a reader never sees a half-written set.
"""
from __future__ import annotations

from datetime import date, datetime, time, timedelta

from base.sqlfiles import sql
from ingest.rollup.attribution import glob_to_like


def residency_condition(policies, params: dict) -> str:
    """SQL true for rows of a policy's team outside every allowed location ('0' if no policies)."""
    clauses = []
    for policy in policies:
        team_key = f"res_team{len(params)}"
        params[team_key] = policy.team
        allowed = []
        for entry in policy.allowed:
            provider, _, region = entry.partition(":")
            p_key, r_key = f"res_p{len(params)}", f"res_r{len(params) + 1}"
            params[p_key], params[r_key] = glob_to_like(provider), glob_to_like(region or "*")
            allowed.append(f"(environment ILIKE {{{p_key}:String}} AND region ILIKE {{{r_key}:String}})")
        clauses.append(f"(team = {{{team_key}:String}} AND NOT ({' OR '.join(allowed) or '0'}))")
    return " OR ".join(clauses) or "0"


def finding_queries(cfg, since: datetime, until: datetime) -> list[tuple[str, dict]]:
    policies = cfg.policies
    window = {"since": since, "until": until}
    params: dict = dict(window)
    queries = [(sql("rollup/compliance_residency", allowed=residency_condition(policies.residency, params)), params),
               (sql("rollup/compliance_untagged"),
                window | {"tag_keys": list(policies.untagged_tag_keys), "min_usd": policies.untagged_min_usd}),
               (sql("rollup/compliance_health"),
                window | {"throttle_mask": policies.health_throttle_mask, "ecc": int(policies.health_ecc_uncorrected),
                          "xid": int(policies.health_xid)})]
    if policies.drift_within_pool:
        queries.append((sql("rollup/compliance_drift"), window))
    if policies.drift_across_environments:
        queries.append((sql("rollup/compliance_drift_teams"), window))
    return queries


def derive_findings(store, cfg, since: date, until: date) -> int:
    """Recompute every finding over [since, until]; return how many there are."""
    start = datetime.combine(since, time.min)
    end = datetime.combine(until + timedelta(days=1), time.min)
    with store.staging("compliance_findings") as stage:
        for text, params in finding_queries(cfg, start, end):
            stage.fill(text, parameters=params)
        stage.exchange()
    return int(store.scalar("SELECT count() FROM compliance_findings"))
