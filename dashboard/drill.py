"""Aggregate-by and drill-down: the page-own URL parameters ``by`` (the grouping of a page's
spend, waste or utilization card) and ``rows`` (the Utilization heatmap's rows), the links from a
team to its GPUs and idle windows (the Idle & waste page filtered to it) and from a GPU to the
GPU page (``/gpu?gpu_uuid=…&mig_instance=…`` with the filters), and the click callbacks that
follow them.

The grouping a user picks never reaches SQL as text: ``BY`` is the whitelist, and the queries take
the chosen key as a bound parameter that selects one of their fixed column expressions.
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlencode

import pandas as pd
from dash import ALL, Input, Output, State, callback, ctx, dcc, html, no_update

from dashboard import ids, state
from dashboard.figures import label
from dashboard.filters import Filters

# value in the URL -> what the selector calls it
BY = {"team": "team", "namespace": "namespace", "user": "user", "job": "job", "pool": "pool",
      "environment": "environment", "model": "GPU model"}
ROWS = ("pool", "gpu")
PARAMS = ("by", "rows")          # kept in the URL by the filter bar (dashboard/focus.PARAMS lists them)
GPU_PATH = "/gpu"
IDLE_PATH = "/idle"


def parse_by(value) -> str:
    """``by`` from the URL: one of BY, else "team"."""
    value = value[0] if isinstance(value, list) and value else value
    return value if isinstance(value, str) and value in BY else "team"


def parse_rows(value) -> str:
    value = value[0] if isinstance(value, list) and value else value
    return "gpu" if value == "gpu" else "pool"


def selector(page: str, by: str, note: str = "") -> html.Div:
    """The "aggregate by" radio of a page's grouped card."""
    return html.Div(className="control", children=[
        html.Label("Aggregate by"),
        dcc.RadioItems(id=ids.aggregate_by(page), options=[{"label": v, "value": k} for k, v in BY.items()],
                       value=by, inline=True),
        html.Span(note, className="card-note") if note else None])


def search(query: dict) -> str:
    return "?" + urlencode({k: v for k, v in query.items() if v not in ("", [], None)}, doseq=True)


def gpu_href(f: Filters, gpu_uuid: str, mig_instance: str = "", day=None) -> str:
    """The GPU page of one GPU (or MIG slice) with the filters; ``day``: narrowed to that UTC day
    (a heatmap cell's time bucket: buckets never cross midnight)."""
    return GPU_PATH + search({"gpu_uuid": gpu_uuid, "mig_instance": mig_instance, **day_query(f, day)})


def day_query(f: Filters, day=None) -> dict:
    """``f``'s query, its time range replaced by the UTC day of ``day`` when given."""
    query = f.query()
    if day is None:
        return query
    when = pd.Timestamp(day).date().isoformat()
    return {**{k: v for k, v in query.items() if k not in ("range", "from", "to")}, "from": when, "to": when}


def team_href(f: Filters, team: str) -> str:
    """The next level of a team: the Idle & waste page (its GPUs and idle windows) filtered to it."""
    return IDLE_PATH + search({**f.query(), "team": [team]})


def window_href(f: Filters, gpu_uuid: str, mig_instance: str, start) -> str:
    """The Idle & waste page focused on one idle window (dashboard/focus.py)."""
    when = pd.Timestamp(start).strftime("%Y-%m-%dT%H:%M:%SZ")
    return IDLE_PATH + search({**f.query(), "gpu": gpu_uuid, "mig": mig_instance, "window": when})


def link_column(table, columns: dict, column: str, hrefs: list) -> object:
    """``table`` (components.table's output) with the cells of ``column`` linked to ``hrefs`` (one
    per shown row, in order; None: no link). Anything else (an empty state) is returned as it is."""
    if column not in columns:
        return table
    index = list(columns).index(column)
    body = _find(table, html.Tbody)
    if body is None:
        return table
    for row, href in zip(body.children or [], hrefs):
        cells = getattr(row, "children", None)
        if href and isinstance(cells, list) and len(cells) > index:
            cell = cells[index]
            cell.children = dcc.Link(cell.children, href=href, className="drill")
    return table


def _find(component, kind):
    if isinstance(component, kind):
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children] if children is not None else []:
        found = _find(child, kind)
        if found is not None:
            return found
    return None


def clickable(graph, page: str, name: str, keys=None):
    """``graph`` (components.chart's output, a dcc.Graph or an empty state) made a drill-down source:
    its id becomes ``ids.drill(page, name)``; with ``keys`` (the raw names behind the x labels),
    every bar or box trace carries the raw name of each point as its customdata."""
    if not isinstance(graph, dcc.Graph):
        return graph
    graph.id = ids.drill(page, name)
    if keys is not None:
        raw = {label(k): str(k) for k in keys}
        for trace in graph.figure.get("data", []):
            if trace.get("type") in ("bar", "box") and "x" in trace and "customdata" not in trace:
                trace["customdata"] = [raw.get(str(x), str(x)) for x in trace["x"]]
    return graph


def register_view_url(page: str, controls: dict[str, tuple[str, str]]) -> None:
    """A callback writing the page's own toggles into the URL: ``controls`` maps a URL parameter
    to (the control's id, its default, left out of the URL). The page then renders from the URL,
    so a reload or a shared link shows the same view."""
    names = list(controls)

    @callback(Output(ids.URL, "search", allow_duplicate=True),
              *[Input(controls[n][0], "value") for n in names], State(ids.URL, "search"),
              prevent_initial_call=True)
    def to_url(*values):
        *chosen, current = values
        query = parse_qs((current or "").lstrip("?"))
        for name, value in zip(names, chosen):
            if value and value != controls[name][1]:
                query[name] = [value]
            else:
                query.pop(name, None)
        new = search(query)
        old = search(parse_qs((current or "").lstrip("?")))
        return no_update if new == old else new


def register_clicks(page: str, follow) -> None:
    """A click on a ``clickable`` chart of ``page`` opens ``follow(name, point, filters)`` (an href;
    None: nothing to open)."""
    # the filters from the URL (always in the layout), not from the page's store: the callback also
    # fires as the page's charts leave the layout, when the store is gone too
    @callback(Output(ids.URL, "href", allow_duplicate=True),
              Input(ids.drill(page, ALL), "clickData"), State(ids.URL, "search"),
              prevent_initial_call=True)
    def on_click(clicks, current):
        trigger = ctx.triggered_id
        if not trigger or not isinstance(trigger, dict) or not clicks:
            return no_update
        click = next((c for c, i in zip(clicks, ctx.inputs_list[0]) if i["id"] == trigger), None)
        points = (click or {}).get("points") or []
        if not points:
            return no_update
        query = {k: v[0] if len(v) == 1 else v for k, v in parse_qs((current or "").lstrip("?")).items()}
        href = follow(trigger.get("name"), points[0], state.filters_from_url(query))
        return href or no_update


def point_key(point: dict) -> str:
    """The raw name a bar or box point stands for (its customdata, else its x label)."""
    value = point.get("customdata")
    if isinstance(value, list):
        value = value[0] if value else None
    return str(value if value is not None else point.get("x", ""))
