"""Utilization: pools or GPUs over time, the spread per team (or another grouping) and
environment, MIG instances under their GPU.

Its toggles live in the URL (``rows=gpu`` the heatmap's rows, ``by=`` the distribution's grouping;
dashboard/drill.py). A heatmap cell opens its GPU (the GPU page) or its pool's environment (the
Idle & waste page) for that day; a team's box opens the team's GPUs and idle windows.
"""
from __future__ import annotations

import dash
from dash import Input, Output, State, callback, dcc, html

from dashboard import components as c
from dashboard import drill, figures, ids, queries, state

PAGE = "utilization"
dash.register_page(__name__, path="/utilization", name="Utilization", title="Utilization · gpuledger", order=1)
MIG_COLUMNS = {"gpu": "GPU / MIG instance", "mig_profile": "profile", "pool": "pool", "team": "team",
               "gpu_hours": "GPU-hours", "utilization_pct": "utilization %"}


def layout(rows: str = "pool", by: str = "team", **query):
    f, rows, by = state.filters_from_url(query), drill.parse_rows(rows), drill.parse_by(by)
    return c.page(PAGE, "Utilization", f, [
        dcc.Store(id=ids.view(PAGE), data={"rows": rows, "by": by}),
        html.Div(className="control", children=[
            html.Label("Heatmap rows"),
            dcc.RadioItems(id=ids.UTIL_ROWS, options=[{"label": "pools", "value": "pool"},
                                                       {"label": "GPUs (MIG under their GPU)", "value": "gpu"}],
                           value=rows, inline=True)]),
        c.card(PAGE, "heatmap", "Utilization over time", note="Time-weighted GPU utilization; no-data time is left out. "
               "Click a cell for that " + ("GPU's page" if rows == "gpu" else "environment's idle GPUs") + " that day."),
        drill.selector(PAGE, by),
        c.card(PAGE, "distribution", f"Utilization per {drill.BY[by]} and environment",
               note="Spread of per-GPU-day utilization of held GPU time (min, quartiles, max)."
                    + (" Click a team for its GPUs and idle windows." if by == "team" else "")),
        c.card(PAGE, "mig", "MIG instances under their GPU"),
    ])


@callback(Output(ids.part(PAGE, "heatmap"), "children"),
          Input(ids.filters(PAGE), "data"), State(ids.view(PAGE), "data"))
def render_heatmap(data, view):
    f, rows = state.filters_from_data(data), drill.parse_rows((view or {}).get("rows"))
    source = "gpu_cost_day" if queries.heatmap_query(f, rows).endswith("_day") else "gpu_cost_hour"
    if rows == "gpu":
        df = queries.util_heatmap(state.get().store, f, "gpu")
        graph = c.chart(df, source, f, lambda d: figures.util_heatmap_gpus(d, f), "GPU-hours")
    else:
        df = queries.util_heatmap(state.get().store, f, "pool")
        graph = c.chart(df, source, f, lambda d: figures.util_heatmap_pools(d, f), "GPU-hours")
    return drill.clickable(graph, PAGE, f"heatmap-{rows}")


@callback(Output(ids.part(PAGE, "distribution"), "children"), Output(ids.part(PAGE, "mig"), "children"),
          Input(ids.filters(PAGE), "data"), State(ids.view(PAGE), "data"))
def render(data, view):
    f, store = state.filters_from_data(data), state.get().store
    by = drill.parse_by((view or {}).get("by"))
    dist, mig = queries.side_by_side(lambda: queries.util_distribution_by(store, f, by), lambda: queries.mig_tree(store, f))
    if not mig.empty:
        mig = mig.assign(gpu=(mig["host"] + " " + mig["gpu_uuid"]).where(mig["level"] == 0,
                                                                           "└ MIG " + mig["mig_instance"]),
                         row_class=mig["level"].map({0: "parent", 1: "child"}))
    graph = c.chart(dist, "gpu_cost_day" if by == "team" else "gpu_cost_hour", f,
                    lambda d: figures.util_distribution(d.rename(columns={"key": "team"})), "held GPU-hours")
    table = c.table(mig, MIG_COLUMNS, "gpu_cost_day", f, "MIG instances", max_rows=200, class_name="tree")
    if not mig.empty:
        shown = mig.head(200)
        drill.link_column(table, MIG_COLUMNS, "gpu", [drill.gpu_href(f, g, m) for g, m in
                                                      zip(shown["gpu_uuid"], shown["mig_instance"])])
    return drill.clickable(graph, PAGE, f"distribution-{by}", dist.get("key", [])), table


def follow(name, point, f):
    """Where a click on a chart of the page leads (dashboard/drill.py register_clicks)."""
    if name == "distribution-team":
        return drill.team_href(f, drill.point_key(point))
    data = str(point.get("text") or "").split("\t")          # figures.util_heatmap_*: "a<TAB>b" per cell
    if len(data) != 2 or not point.get("x"):
        return None
    if name == "heatmap-gpu":
        return drill.gpu_href(f, str(data[0]), str(data[1]), day=point["x"])
    if name == "heatmap-pool":               # the pool's environment that day on the Idle & waste page
        query = drill.day_query(f, point["x"])
        return drill.IDLE_PATH + drill.search({**query, "env": [str(data[0])]})
    return None


def _csv(query, key):
    return lambda store, f, view: query(store, f, drill.parse_by((view or {}).get(key)) if key == "by"
                                        else drill.parse_rows((view or {}).get(key)))


drill.register_view_url(PAGE, {"rows": (ids.UTIL_ROWS, "pool"), "by": (ids.aggregate_by(PAGE), "team")})
drill.register_clicks(PAGE, follow)
c.register_csv(PAGE, {"heatmap": _csv(queries.util_heatmap, "rows"),
                      "distribution": _csv(queries.util_distribution_by, "by"),
                      "mig": lambda s, f, _: queries.mig_tree(s, f)}, context=ids.view(PAGE))
