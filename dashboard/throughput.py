"""Placement that adds up: GPUs compared like for like, right-sizing, and one outcome per team or pool.

* **Throughput factors.** How much work a GPU model does relative to an A100 (= 1.0), so that a
  utilized H100-hour and a utilized A10G-hour are not priced as the same thing. The defaults are
  NVIDIA's dense (no sparsity) BF16 tensor TFLOPS from each datasheet (FP16 where the model has no
  BF16) divided by the A100's 312; keys are model names as NVML reports them and the store keeps
  them. ``[analytics.throughput]`` overrides or adds models; a model in neither is *not
  normalised* (shown as such), never given 1.0.
* **Right-sizing.** A team that holds whole GPUs at low utilization could run on a MIG slice of
  the same model (MIG_PROFILES) or on a smaller model: :func:`rightsize` picks the smallest
  alternative whose share of the GPU (slice) or throughput (model) covers the utilization.
* **One outcome.** :func:`one_outcome` keeps one kind of recommendation per team and per pool.
"""
from __future__ import annotations

import math

import pandas as pd

HOURS_PER_MONTH = 730.0                         # 24 × 365 / 12
MIN_GPUS = 0.1                                  # right-sizing: fewer GPUs held on average is not worth advice

A100_BF16_TFLOPS = 312.0
# model (as NVML names it) -> dense BF16 (FP16 for Turing/Volta) tensor TFLOPS, from NVIDIA's datasheets
DATASHEET_TFLOPS: dict[str, float] = {
    "NVIDIA A100-SXM4-40GB": 312.0, "NVIDIA A100-SXM4-80GB": 312.0,
    "NVIDIA A100-PCIE-40GB": 312.0, "NVIDIA A100 80GB PCIe": 312.0,
    "NVIDIA H100 80GB HBM3": 989.4, "NVIDIA H100 PCIe": 756.0, "NVIDIA H100 NVL": 835.0,
    "NVIDIA H200": 989.4, "NVIDIA B200": 2250.0,
    "NVIDIA A30": 165.0, "NVIDIA A40": 149.7, "NVIDIA A10": 125.0,
    "NVIDIA A10G": 125.0,                       # AWS's A10 variant: no own datasheet, the A10's figure
    "NVIDIA L4": 121.0, "NVIDIA L40": 181.0, "NVIDIA L40S": 362.0,
    "Tesla T4": 65.0, "Tesla V100-SXM2-16GB": 125.0, "Tesla V100-SXM2-32GB": 125.0, "Tesla V100-PCIE-32GB": 112.0,
}
DEFAULT_THROUGHPUT: dict[str, float] = {m: round(t / A100_BF16_TFLOPS, 2) for m, t in DATASHEET_TFLOPS.items()}

# MIG GPU-instance profiles (name, share of the GPU's compute) per MIG-capable model; 7 compute
# slices on A100/H100/H200, 4 on the A30. Whole-GPU profiles (7g, 4g on A30) are left out.
_SEVENTHS = ((1, "1g"), (2, "2g"), (3, "3g"), (4, "4g"))
MIG_PROFILES: dict[str, tuple[tuple[str, float], ...]] = {
    "NVIDIA A100-SXM4-40GB": tuple((f"{g}.{m}gb", n / 7) for (n, g), m in zip(_SEVENTHS, (5, 10, 20, 20))),
    "NVIDIA A100-PCIE-40GB": tuple((f"{g}.{m}gb", n / 7) for (n, g), m in zip(_SEVENTHS, (5, 10, 20, 20))),
    "NVIDIA A100-SXM4-80GB": tuple((f"{g}.{m}gb", n / 7) for (n, g), m in zip(_SEVENTHS, (10, 20, 40, 40))),
    "NVIDIA A100 80GB PCIe": tuple((f"{g}.{m}gb", n / 7) for (n, g), m in zip(_SEVENTHS, (10, 20, 40, 40))),
    "NVIDIA H100 80GB HBM3": tuple((f"{g}.{m}gb", n / 7) for (n, g), m in zip(_SEVENTHS, (10, 20, 40, 40))),
    "NVIDIA H100 PCIe": tuple((f"{g}.{m}gb", n / 7) for (n, g), m in zip(_SEVENTHS, (10, 20, 40, 40))),
    "NVIDIA H100 NVL": tuple((f"{g}.{m}gb", n / 7) for (n, g), m in zip(_SEVENTHS, (12, 24, 47, 47))),
    "NVIDIA H200": tuple((f"{g}.{m}gb", n / 7) for (n, g), m in zip(_SEVENTHS, (18, 35, 71, 71))),
    "NVIDIA A30": (("1g.6gb", 1 / 4), ("2g.12gb", 2 / 4)),
}


def factors(overrides: dict[str, float] | None = None) -> dict[str, float]:
    """The throughput factor per model: the defaults, with ``[analytics.throughput]`` over them."""
    return {**DEFAULT_THROUGHPUT, **(overrides or {})}


def rightsize(usage: pd.DataFrame, models: pd.DataFrame, throughput: dict[str, float], n_hours: int) -> pd.DataFrame:
    """Right-sizing candidates from ``usage`` (placement_rightsize(): whole GPUs held per team,
    environment, pool and model) and ``models`` (placement_models(): USD per GPU-hour per
    environment and model). For each row the smallest alternative that covers its utilization:

    * a MIG slice of the same model when the model has MIG: the smallest profile whose share of
      the GPU is at least the utilization; its cost = the held cost × the share;
    * otherwise the model with the smallest throughput factor still ≥ utilization × this model's
      factor among the models the same environment runs at a lower USD per GPU-hour; its cost =
      the held GPU-hours × that model's USD per GPU-hour.

    Only rows that hold MIN_GPUS or more on average and would save something are kept; savings per month = savings over the range ×
    HOURS_PER_MONTH ÷ ``n_hours`` (the range's hours with data), biggest first."""
    rows = []
    hours = max(int(n_hours), 1)
    rate = {(e, m): float(r) for e, m, r in zip(models.get("environment", []), models.get("model", []),
                                                 models.get("usd_per_gpu_hour", [])) if r == r and r > 0}
    for r in usage.to_dict("records"):
        util = r["utilized_gpu_hours"] / r["gpu_hours"] if r["gpu_hours"] > 0 else math.nan
        if not util == util or r["gpus"] < MIN_GPUS:
            continue
        alt = _mig(r, util) or _smaller(r, util, throughput, rate)
        if alt is None:
            continue
        kind, alternative, share, alt_cost = alt
        savings = r["cost_usd"] - alt_cost
        if savings <= 0:
            continue
        rows.append({**r, "utilization_pct": 100 * util, "alternative_kind": kind, "alternative": alternative,
                     "share": share, "alternative_cost_usd": alt_cost, "savings_usd": savings,
                     "cost_usd_month": r["cost_usd"] * HOURS_PER_MONTH / hours,
                     "savings_usd_month": savings * HOURS_PER_MONTH / hours})
    out = pd.DataFrame(rows, columns=[*usage.columns, "utilization_pct", "alternative_kind", "alternative", "share",
                                      "alternative_cost_usd", "savings_usd", "cost_usd_month", "savings_usd_month"])
    if out.empty:
        return out.assign(why=pd.Series(dtype=str))
    out["why"] = [_why(r) for r in out.to_dict("records")]
    return out.sort_values(["savings_usd", "team", "pool", "model"], ascending=[False, True, True, True],
                           ignore_index=True)


def _mig(r: dict, util: float):
    for profile, share in MIG_PROFILES.get(r["model"], ()):
        if share >= util:
            return "MIG slice", f"{profile} MIG slice", share, r["cost_usd"] * share
    return None


def _smaller(r: dict, util: float, throughput: dict[str, float], rate: dict):
    own, here = throughput.get(r["model"]), rate.get((r["environment"], r["model"]))
    if own is None or here is None:
        return None
    fits = sorted((throughput[m], m) for (e, m), usd in rate.items()
                  if e == r["environment"] and m != r["model"] and m in throughput
                  and util * own <= throughput[m] < own and usd < here)
    if not fits:
        return None
    factor, model = fits[0]
    return "smaller GPU", model, factor / own, r["gpu_hours"] * rate[(r["environment"], model)]


def _why(r: dict) -> str:
    where = f"{r['pool']} ({r['environment']})" if r["pool"] else r["environment"]
    if r["alternative_kind"] == "MIG slice":
        cover = f"{r['alternative']}s ({r['share'] * 7:.0f}/7 of a GPU)" if r["share"] * 7 == round(r["share"] * 7) \
            else f"{r['alternative']}s ({r['share']:.0%} of a GPU)"
    else:
        cover = f"{r['alternative']} GPUs ({r['share']:.0%} of its throughput)"
    return (f"Team {r['team']} holds {r['gpus']:,.1f} {r['model']} on {where} at {r['utilization_pct']:.0f} % "
            f"utilization; {cover} would cover it and save about ${r['savings_usd_month']:,.0f} a month "
            f"(${r['cost_usd_month']:,.0f} a month now).")


# Which subject a kind of recommendation is about, and how strongly it binds: a need for capacity
# (waiting, saturation) outranks any move that frees or shrinks capacity.
SUBJECT = {"burst queued demand": "team", "move baseline on-prem": "team", "right-size": "team",
           "burst to cloud": "pool", "consolidate pool": "pool"}
PRECEDENCE = {"burst queued demand": 2, "burst to cloud": 2}


def one_outcome(recs: pd.DataFrame) -> pd.DataFrame:
    """One kind of recommendation per team and per pool (a team may keep several rows of that
    kind, e.g. right-sizing in two pools). Per subject, the kind that signals a need for capacity
    (burst queued demand for a team, burst to cloud for a pool) wins; else the kind with the larger
    total savings. So a pool saturated on some days and under-used on others is never also told
    to consolidate, and a team that waits for GPUs is never told to shrink or move on-prem."""
    if recs.empty:
        return recs
    subject = [f"{SUBJECT.get(k, 'team')}:{t if SUBJECT.get(k, 'team') == 'team' else p}"
               for k, t, p in zip(recs["kind"], recs["team"], recs["pool"])]
    scored = recs.assign(_subject=subject, _rank=[PRECEDENCE.get(k, 1) for k in recs["kind"]])
    totals = scored.groupby(["_subject", "kind"], as_index=False).agg(_rank=("_rank", "first"),
                                                                     _total=("savings_usd", "sum"))
    chosen = totals.sort_values(["_subject", "_rank", "_total", "kind"], ascending=[True, False, False, True]) \
        .drop_duplicates("_subject")
    keep = scored.merge(chosen[["_subject", "kind"]], on=["_subject", "kind"])
    return keep.drop(columns=["_subject", "_rank"]).sort_values(["savings_usd", "kind", "team", "pool"],
                                                                ascending=[False, True, True, True], ignore_index=True)
