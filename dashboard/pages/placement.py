"""Placement: baseline vs burst demand per team, what a utilized GPU-hour costs where (per
environment, and per A100-equivalent per environment and model), right-sizing of whole GPUs held at
low utilization (dashboard/throughput.py) — all three summed from one pass, sql/queries/placement_usage.sql —
the GPU demand that waits in the Slurm and Kubernetes queues (sql/queries/queue_pressure.sql), and
what each recommendation would save, one kind per team and pool (sql/queries/placement.sql)."""
from __future__ import annotations

import dash
from dash import Input, Output, callback, html

from dashboard import components as c
from dashboard import figures, ids, queries, state
from dashboard.reader import RECENT_S

PAGE = "placement"
dash.register_page(__name__, path="/placement", name="Placement", title="Placement · gpuledger", order=4)
RATE_COLUMNS = {"environment": "environment", "usd_per_utilized_gpu_hour": "USD / utilized GPU-h",
                "usd_per_gpu_hour": "USD / GPU-h", "utilization_pct": "utilization %", "cost_usd": "USD",
                "utilized_gpu_hours": "utilized GPU-h"}
REC_COLUMNS = {"kind": "recommendation", "team": "team", "pool": "pool", "from_environment": "from",
               "to_environment": "to", "gpus": "GPUs", "gpu_hours": "GPU-hours", "utilized_gpu_hours": "utilized GPU-h",
               "from_usd_per_utilized_gpu_hour": "from rate", "to_usd_per_utilized_gpu_hour": "to rate",
               "savings_usd": "savings USD", "why": "why"}
QUEUE_COLUMNS = {"pool": "pool", "team": "team", "jobs": "jobs waiting", "pending_gpus": "pending GPUs (avg)",
                 "peak_pending_gpus": "pending GPUs (peak hour)", "wait_p50_h": "wait p50 h", "wait_p95_h": "wait p95 h",
                 "burst_usd_per_h": "burst USD/h (cheapest cloud)"}
MODEL_COLUMNS = {"environment": "environment", "model": "model", "gpu_hours": "GPU-h", "utilization_pct": "utilization %",
                 "usd_per_utilized_gpu_hour": "USD / utilized GPU-h", "throughput": "throughput (A100 = 1)",
                 "usd_per_a100e_utilized_gpu_hour": "USD / A100-equivalent utilized GPU-h", "note": "note"}
SIZE_COLUMNS = {"team": "team", "environment": "environment", "pool": "pool", "model": "model", "gpus": "GPUs held (avg)",
                "utilization_pct": "utilization %", "alternative": "smallest fitting alternative",
                "share": "its share of the GPU", "cost_usd_month": "USD / month now",
                "savings_usd_month": "savings USD / month", "why": "why", "outcome": "the team's recommendation"}
DEMAND_COLUMNS = {"team": "team", "baseline_gpus": "baseline GPUs", "peak_gpus": "peak GPUs",
                  "avg_gpus": "average GPUs", "baseline_gpu_hours": "baseline GPU-h", "burst_gpu_hours": "burst GPU-h"}


def layout(**query):
    f = state.filters_from_url(query)
    q = state.get().baseline_quantile
    return c.page(PAGE, "Placement", f, [
        c.card(PAGE, "demand", "Baseline vs burst per team",
               note=f"Baseline: the {q:g} quantile of a team's hourly held GPUs (steady, suits on-prem); "
                    "burst: the rest (suits cloud). The environment filter does not apply: placement compares them."),
        c.card(PAGE, "rates", "Cost per utilized GPU-hour: on-prem vs each cloud", wide=False),
        c.card(PAGE, "models", "Cost per A100-equivalent utilized GPU-hour, per environment and model",
               note="Like for like: utilized GPU-hours × the model's throughput relative to an A100 (NVIDIA's dense "
                    "BF16 tensor TFLOPS ÷ 312, or [analytics.throughput]). Models without a factor are listed as "
                    "not normalised, never counted as A100s."),
        c.card(PAGE, "rightsize", "Right-sizing: whole GPUs held at low utilization",
               note="Per team and pool, whole GPUs held: the smallest MIG slice of the same model whose share covers "
                    "the utilization, else the smallest model (by throughput) the environment runs cheaper that "
                    "covers it. A month is 730 h, scaled from the hours with data in the range."),
        c.card(PAGE, "queues", "Queue pressure: GPU demand that waits",
               note="Jobs and pods pending for GPUs in Slurm and Kubernetes ([queues]); a job's wait runs from when it "
                    "could first run to the last read that saw it pending; GPUs count MIG slices by their share. Burst "
                    "USD/h: the average pending GPUs at the cheapest cloud's cost of a GPU-hour."),
        c.card(PAGE, "recommendations", "Recommendations and their savings",
               note="Savings over the selected range; negative: what the move costs (capacity relief)."),
    ])


@callback(Output(ids.part(PAGE, "demand"), "children"), Output(ids.part(PAGE, "rates"), "children"),
          Output(ids.part(PAGE, "models"), "children"), Output(ids.part(PAGE, "rightsize"), "children"),
          Output(ids.part(PAGE, "queues"), "children"),
          Output(ids.part(PAGE, "recommendations"), "children"), Input(ids.filters(PAGE), "data"))
@state.shared(max_age_s=RECENT_S)     # its queue pressure is read again after 5 s
def render(data):
    f, st = state.filters_from_data(data), state.get()
    n_hours, usage, demand = queries.side_by_side(lambda: queries.hours(st.store, f),
                                                  lambda: queries.placement_usage(st.store, f),
                                                  lambda: queries.placement_demand(st.store, f, st.baseline_quantile))
    rates = queries.placement_rates(st.store, f, usage)

    def moves():           # two queries, while the right-sizing is worked out in pandas
        queued = queries.queue_pressure(st.store, f, rates)
        return queued, queries.placement_moves(st.store, f, st.baseline_quantile, st.saturated_pct,
                                               st.queue_burst_wait_hours, rates, n_hours, queued, demand, usage)

    def sizing():
        models = queries.placement_models(st.store, f, st.throughput, usage)
        return models, queries.placement_rightsize(st.store, f, st.throughput, n_hours, models, usage)

    (queued, moved), (models, sized) = queries.side_by_side(moves, sizing)
    recs = queries.with_rightsizing(moved, sized)
    total = html.P(f"Savings if every positive recommendation is taken: "
                   f"{c.money(recs.loc[recs['savings_usd'] > 0, 'savings_usd'].sum())}", className="total") \
        if not recs.empty else None
    return (c.chart_table(demand, "team_demand_hour", f, figures.placement_demand, DEMAND_COLUMNS, "held GPU-hours"),
            c.chart_table(rates, "gpu_cost_day", f, figures.placement_rates, RATE_COLUMNS, "GPU-hours"),
            c.table(_noted(models), MODEL_COLUMNS, "gpu_cost_day", f, "GPU-hours"),
            c.table(_outcome(sized, recs), SIZE_COLUMNS, "gpu_cost_day", f, "whole GPUs held below a slice's share",
                    class_name="explained"),
            c.chart_table(queued, "queue_pending_hour", f, figures.queue_pressure, QUEUE_COLUMNS, "queued GPU jobs"),
            [total, c.table(recs, REC_COLUMNS, "gpu_cost_day", f, "placement recommendations", class_name="explained")])


def _outcome(sized, recs):
    """Each right-sizing row with the one kind of recommendation its team gets (it may be another move)."""
    chosen = {} if recs.empty else dict(zip(recs["team"], recs["kind"]))
    return sized.assign(outcome=[chosen.get(t, "none") for t in sized.get("team", [])])


def _noted(models):
    """The models table with a note on each model that has no throughput factor."""
    return models.assign(note=["" if n else "not normalised: no throughput factor for this model"
                               for n in models.get("normalised", [])])


def _recommendations(store, f):
    st = state.get()
    return queries.placement(store, f, st.baseline_quantile, st.saturated_pct, st.queue_burst_wait_hours,
                             throughput=st.throughput)


c.register_csv(PAGE, {"demand": lambda s, f: queries.placement_demand(s, f, state.get().baseline_quantile),
                      "rates": queries.placement_rates,
                      "models": lambda s, f: queries.placement_models(s, f, state.get().throughput),
                      "rightsize": lambda s, f: queries.placement_rightsize(s, f, state.get().throughput),
                      "queues": queries.queue_pressure, "recommendations": _recommendations})
