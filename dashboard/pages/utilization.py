"""Utilization: pools or GPUs over time, the spread per team and environment, MIG instances
under their GPU."""
from __future__ import annotations

import dash
from dash import Input, Output, callback, dcc, html

from dashboard import components as c
from dashboard import figures, ids, queries, state

PAGE = "utilization"
dash.register_page(__name__, path="/utilization", name="Utilization", title="Utilization · gpuledger", order=1)
MIG_COLUMNS = {"gpu": "GPU / MIG instance", "mig_profile": "profile", "pool": "pool", "team": "team",
               "gpu_hours": "GPU-hours", "utilization_pct": "utilization %"}


def layout(rows: str = "pool", **query):
    f = state.filters_from_url(query)
    return c.page(PAGE, "Utilization", f, [
        html.Div(className="control", children=[
            html.Label("Heatmap rows"),
            dcc.RadioItems(id=ids.UTIL_ROWS, options=[{"label": "pools", "value": "pool"},
                                                       {"label": "GPUs (MIG under their GPU)", "value": "gpu"}],
                           value="gpu" if rows == "gpu" else "pool", inline=True)]),
        c.card(PAGE, "heatmap", "Utilization over time", note="Time-weighted GPU utilization; no-data time is left out."),
        c.card(PAGE, "distribution", "Utilization per team and environment",
               note="Spread of per-GPU-day utilization of held GPU time (min, quartiles, max)."),
        c.card(PAGE, "mig", "MIG instances under their GPU"),
    ])


@callback(Output(ids.part(PAGE, "heatmap"), "children"),
          Input(ids.filters(PAGE), "data"), Input(ids.UTIL_ROWS, "value"))
def render_heatmap(data, rows):
    f = state.filters_from_data(data)
    source = "gpu_cost_day" if queries.heatmap_query(f, rows).endswith("_day") else "gpu_cost_hour"
    if rows == "gpu":
        df = queries.util_heatmap(state.get().store, f, "gpu")
        return c.chart(df, source, f, figures.util_heatmap_gpus, "GPU-hours")
    df = queries.util_heatmap(state.get().store, f, "pool")
    return c.chart(df, source, f, figures.util_heatmap_pools, "GPU-hours")


@callback(Output(ids.part(PAGE, "distribution"), "children"), Output(ids.part(PAGE, "mig"), "children"),
          Input(ids.filters(PAGE), "data"))
def render(data):
    f, store = state.filters_from_data(data), state.get().store
    dist = queries.util_distribution(store, f)
    mig = queries.mig_tree(store, f)
    if not mig.empty:
        mig = mig.assign(gpu=(mig["host"] + " " + mig["gpu_uuid"]).where(mig["level"] == 0,
                                                                           "└ MIG " + mig["mig_instance"]),
                         row_class=mig["level"].map({0: "parent", 1: "child"}))
    return (c.chart(dist, "gpu_cost_day", f, figures.util_distribution, "held GPU-hours"),
            c.table(mig, MIG_COLUMNS, "gpu_cost_day", f, "MIG instances", max_rows=200, class_name="tree"))


c.register_csv(PAGE, {"heatmap": lambda s, f: queries.util_heatmap(s, f, "pool"),
                      "distribution": queries.util_distribution, "mig": queries.mig_tree})
