"""Utilization: pools or GPUs over time, the spread per team (or another grouping) and
environment, MIG instances under their GPU.

Its toggles live in the URL (``rows=gpu`` the heatmap's rows, ``by=`` the distribution's grouping,
``find=`` the search that narrows its lists of GPUs; dashboard/drill.py). The lists of GPUs (the
heatmap by GPU, the MIG tree) show the top GPUs of the filters and the search, never every GPU.
A heatmap cell opens its GPU (the GPU page) or its pool's environment (the Idle & waste page) for
that day; a team's box opens the team's GPUs and idle windows.
"""
from __future__ import annotations

import dash
from dash import Input, Output, State, callback, dcc, html

from dashboard import components as c
from dashboard import drill, figures, ids, queries, state
from dashboard.filters import MAX_VALUE

PAGE = "utilization"
dash.register_page(__name__, path="/utilization", name="Utilization", title="Utilization · gpuledger", order=1)
MIG_COLUMNS = {"gpu": "GPU / MIG instance", "mig_profile": "profile", "pool": "pool", "team": "team",
               "gpu_hours": "GPU-hours", "utilization_pct": "utilization %"}


def layout(rows: str = "pool", by: str = "team", find: str = "", **query):
    f, rows, by = state.filters_from_url(query), drill.parse_rows(rows), drill.parse_by(by)
    find = find[:MAX_VALUE] if isinstance(find, str) else ""
    gpus = (f"the {queries.HEATMAP_GPUS} costliest GPUs and MIG slices of the filters"
            + (f" matching {find!r}" if find else "") + ". ") if rows == "gpu" else ""
    return c.page(PAGE, "Utilization", f, [
        dcc.Store(id=ids.view(PAGE), data={"rows": rows, "by": by, "find": find}),
        html.Div(className="control", children=[
            html.Label("Heatmap rows"),
            dcc.RadioItems(id=ids.UTIL_ROWS, options=[{"label": "pools", "value": "pool"},
                                                       {"label": "GPUs (MIG under their GPU)", "value": "gpu"}],
                           value=rows, inline=True)]),
        html.Div(className="control", children=[
            html.Label("Find GPUs", htmlFor=ids.UTIL_SEARCH),
            dcc.Input(id=ids.UTIL_SEARCH, type="search", debounce=True, maxLength=MAX_VALUE, value=find,
                      placeholder="host, GPU UUID, model or pool")]),
        c.card(PAGE, "heatmap", "Utilization over time", note="Time-weighted GPU utilization; no-data time is left out. "
               + gpus.capitalize() + "Click a cell for that "
               + ("GPU's page" if rows == "gpu" else "environment's idle GPUs") + " that day."),
        drill.selector(PAGE, by),
        c.card(PAGE, "distribution", f"Utilization per {drill.BY[by]} and environment",
               note="Spread of per-GPU-day utilization of held GPU time (min, quartiles, max)."
                    + (" Click a team for its GPUs and idle windows." if by == "team" else "")),
        c.card(PAGE, "mig", "MIG instances under their GPU",
               note=f"The {queries.MIG_TREE_GPUS} GPUs in MIG mode with the most GPU-hours"
                    + (f" matching {find!r}" if find else "") + "; the CSV has every one."),
    ])


@callback(Output(ids.part(PAGE, "heatmap"), "children"),
          Input(ids.filters(PAGE), "data"), State(ids.view(PAGE), "data"))
@state.shared()
def render_heatmap(data, view):
    f, rows = state.filters_from_data(data), drill.parse_rows((view or {}).get("rows"))
    source = "gpu_cost_day" if queries.heatmap_query(f, rows).endswith("_day") else "gpu_cost_hour"
    if rows == "gpu":
        df = queries.util_heatmap(state.get().store, f, "gpu", _find(view))
        graph = c.chart(df, source, f, lambda d: figures.util_heatmap_gpus(d, f), "GPU-hours")
        shown = len(df.drop_duplicates(["host", "gpu_uuid", "mig_instance"]))
        matches = int(df["matches"].iloc[0]) if shown else 0
        if matches > shown:
            graph = html.Div([graph, html.P(f"{shown} of {matches:,} GPU entities shown; search to narrow.",
                                            className="more")])
    else:
        df = queries.util_heatmap(state.get().store, f, "pool")
        graph = c.chart(df, source, f, lambda d: figures.util_heatmap_pools(d, f), "GPU-hours")
    return drill.clickable(graph, PAGE, f"heatmap-{rows}")


@callback(Output(ids.part(PAGE, "distribution"), "children"), Output(ids.part(PAGE, "mig"), "children"),
          Input(ids.filters(PAGE), "data"), State(ids.view(PAGE), "data"))
@state.shared()
def render(data, view):
    f, store = state.filters_from_data(data), state.get().store
    by = drill.parse_by((view or {}).get("by"))
    dist, mig = queries.util_distribution_by(store, f, by), queries.mig_tree(store, f, _find(view))
    if not mig.empty:
        mig = mig.assign(gpu=(mig["host"] + " " + mig["gpu_uuid"]).where(mig["level"] == 0,
                                                                           "└ MIG " + mig["mig_instance"]),
                         row_class=mig["level"].map({0: "parent", 1: "child"}))
    graph = c.chart(dist, "gpu_util_day" if by == "team" else "gpu_cost_hour", f,
                    lambda d: figures.util_distribution(d.rename(columns={"key": "team"})), "held GPU-hours")
    table = c.table(mig, MIG_COLUMNS, "gpu_cost_day", f, "MIG instances", max_rows=len(mig), class_name="tree")
    if not mig.empty:
        drill.link_column(table, MIG_COLUMNS, "gpu", [drill.gpu_href(f, g, m) for g, m in
                                                      zip(mig["gpu_uuid"], mig["mig_instance"])])
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


def _find(view) -> str:
    find = (view or {}).get("find")
    return find if isinstance(find, str) else ""


def _heatmap_csv(store, f, view):
    rows = drill.parse_rows((view or {}).get("rows"))
    return queries.util_heatmap(store, f, rows, _find(view), max_entities=100_000)


drill.register_view_url(PAGE, {"rows": (ids.UTIL_ROWS, "pool"), "by": (ids.aggregate_by(PAGE), "team"),
                               "find": (ids.UTIL_SEARCH, "")})
drill.register_clicks(PAGE, follow)
c.register_csv(PAGE, {"heatmap": _heatmap_csv,
                      "distribution": lambda s, f, view: queries.util_distribution_by(s, f, drill.parse_by((view or {}).get("by"))),
                      "mig": lambda s, f, view: queries.mig_tree(s, f, _find(view), max_gpus=100_000)},
           context=ids.view(PAGE))
