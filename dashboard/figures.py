"""Plotly figures from the query functions' DataFrames. Pure: DataFrame in, figure out.

Figures are plain Plotly figure dicts ({"data": [...], "layout": {...}}, what dcc.Graph sends
to plotly.js) rather than plotly.graph_objects: building and validating graph objects — above
all deep-copying the template into every figure — cost 10–40 ms a figure, a good part of a
page's server time. The template is serialised once, here.

Every name from data (teams, pools, hosts, owners) reaches a figure through ``label``: plotly.js
renders a subset of HTML in trace names, tick labels and hover text, so a team called
``<a href=…>`` would be a link; ``label`` escapes ``<``, ``>`` and ``&`` (plotly.js shows the
entities as the characters) and shortens names to ``MAX_LABEL`` characters. Legends whose entries
come from data show the ``MAX_LEGEND`` largest and sum the rest into "other".
"""
from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

ENV_COLORS = {"onprem": "#4c6ef5", "aws": "#f59f00", "gcp": "#37b24d", "azure": "#1c7ed6"}
KIND_COLORS = {"allocated": "#e8590c", "unallocated": "#868e96"}
TEMPLATE = pio.templates["plotly_white"].to_plotly_json()
VIRIDIS = [list(stop) for stop in go.Heatmap(colorscale="Viridis").colorscale]   # as plotly.py expands it
LAYOUT = {"margin": {"l": 10, "r": 10, "t": 30, "b": 10}, "template": TEMPLATE, "legend": {"title": {"text": ""}},
          "font": {"family": "system-ui, sans-serif", "size": 12}}
MAX_LABEL = 60      # characters of a name shown in a chart; longer ones end in "…"
MAX_LEGEND = 20     # legend entries from data; the rest are summed into OTHER
OTHER = "other"


def short(text: str, limit: int = MAX_LABEL) -> str:
    """A name from data as a label or table cell shows it: at most ``limit`` characters, then "…"."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def label(value) -> str:
    """A name from data as a chart shows it: shortened, HTML-escaped."""
    return html.escape(short(str(value)), quote=False)


def _top(df: pd.DataFrame, key: str, by: str, keep: list[str]) -> pd.DataFrame:
    """``df`` with ``key`` outside the MAX_LEGEND largest (by the sum of ``by``) renamed OTHER and
    summed per ``keep`` columns, so a legend of ``key`` has at most MAX_LEGEND + 1 entries."""
    if df[key].nunique() <= MAX_LEGEND:
        return df
    top = df.groupby(key)[by].sum().abs().nlargest(MAX_LEGEND).index
    return df.assign(**{key: df[key].where(df[key].isin(top), OTHER)}).groupby([*keep, key], as_index=False)[by].sum()


def _figure(data: list[dict], height: int = 360, **layout) -> dict:
    return {"data": data, "layout": {**LAYOUT, **layout, "height": height}}


def _title(text: str) -> dict:
    return {"title": {"text": text}}


def _values(series: pd.Series):
    """A column for a trace: text (names from data) through ``label``, numbers and times as they are."""
    if pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series):
        return series.map(label).to_numpy()
    return series.to_numpy()


def _bar(name, x, y, color=None, **bar) -> dict:
    trace = {"type": "bar", "x": _values(x), "y": _values(y), **bar}
    if name is not None:
        trace["name"] = label(name)
    if color is not None:
        trace["marker"] = {"color": color}
    return trace


def _bars(df: pd.DataFrame, x: str, y: str, color: str, colors: dict | None = None, **bar) -> list[dict]:
    """One trace per value of ``color``."""
    return [_bar(key, part[x], part[y], (colors or {}).get(key), **bar)
            for key, part in df.groupby(color, sort=True)]


def _heatmap(grid: pd.DataFrame, y: list) -> dict:
    return {"type": "heatmap", "z": grid.values, "x": list(grid.columns), "y": y, "zmin": 0, "zmax": 100,
            "colorscale": VIRIDIS, "colorbar": _title("util %"),
            "hovertemplate": "%{y}<br>%{x}<br>%{z:.1f} %<extra></extra>"}


def fleet_gpus(df: pd.DataFrame) -> dict:
    return _figure(_bars(_top(df, "pool", "gpus", ["environment"]), "environment", "gpus", "pool"), 300, barmode="stack", yaxis=_title("GPUs"))


def util_heatmap_pools(df: pd.DataFrame) -> dict:
    rows = df.assign(row=df["environment"] + " · " + df["pool"])
    grid = rows.pivot_table(index="row", columns="t", values="utilization_pct", aggfunc="first")
    return _figure([_heatmap(grid, [label(r) for r in grid.index])], max(260, 28 * len(grid) + 80))


def util_heatmap_gpus(df: pd.DataFrame) -> dict:
    """Rows are GPUs, each MIG instance right under its GPU ("└ MIG 3")."""
    short = df["gpu_uuid"].str.slice(0, 12)
    name = df["host"] + " " + short
    df = df.assign(row=name.where(df["mig_instance"] == "", "   └ " + short + " MIG " + df["mig_instance"]),
                   order=df["pool"] + "|" + df["host"] + "|" + df["gpu_uuid"] + "|"
                   + df["mig_instance"].str.zfill(4))
    order = df.drop_duplicates("order").sort_values("order")
    grid = df.pivot_table(index="order", columns="t", values="utilization_pct", aggfunc="first").loc[order["order"]]
    return _figure([_heatmap(grid, [label(r) for r in order["row"]])], max(300, 16 * len(grid) + 80),
                   yaxis={"autorange": "reversed"})


def util_distribution(df: pd.DataFrame) -> dict:
    traces = [{"type": "box", "name": label(env), "x": _values(part["team"]), "q1": _values(part["q1_pct"]),
               "median": _values(part["median_pct"]), "q3": _values(part["q3_pct"]),
               "lowerfence": _values(part["min_pct"]), "upperfence": _values(part["max_pct"]),
               "marker": {"color": ENV_COLORS.get(env)}}
              for env, part in df.groupby("environment", sort=True)]
    return _figure(traces, boxmode="group",
                   yaxis={**_title("utilization of held GPU-days, %"), "range": [0, 100]})


def idle_timeline(df: pd.DataFrame) -> dict:
    """Horizontal bars from start to end, one row per GPU (a Gantt chart)."""
    rows = df.assign(gpu=df["host"] + " " + df["gpu_uuid"].str.slice(0, 12)
                     + df["mig_instance"].map(lambda m: f" MIG {m}" if m else ""),
                     ms=(pd.to_datetime(df["end"]) - pd.to_datetime(df["start"])).dt.total_seconds() * 1000,
                     owner=df["team"] + " " + df["user"] + " " + df["job_id"])
    traces = [_bar(kind, part["ms"], part["gpu"], KIND_COLORS.get(kind), base=_values(part["start"]),
                   orientation="h", customdata=list(zip(_values(part["owner"]), _values(part["cost_usd"]))),
                   hovertemplate="%{y}<br>%{base} + %{x:,.0f} ms<br>%{customdata[0]}<br>$%{customdata[1]:.2f}"
                                 "<extra>%{fullData.name}</extra>")
              for kind, part in rows.groupby("kind", sort=True)]
    return _figure(traces, max(260, 22 * rows["gpu"].nunique() + 100), barmode="overlay", xaxis={"type": "date"},
                   yaxis={"autorange": "reversed", **_title(""), "categoryorder": "category ascending"})


def idle_cost(df: pd.DataFrame, by: str) -> dict:
    grouped = df.groupby([by, "kind"], as_index=False)["cost_usd"].sum()
    return _figure(_bars(grouped, by, "cost_usd", "kind", KIND_COLORS), 300, barmode="stack",
                   yaxis=_title("USD wasted idle"), xaxis={"categoryorder": "total descending"})


def waste_by_team(df: pd.DataFrame) -> dict:
    """Each team's waste in its parts, worst first."""
    parts = [("idle_allocated_usd", "idle, allocated", "#e03131"), ("idle_unallocated_usd", "idle, unallocated", "#f08c00"),
             ("unused_usd", "unused (outside idle windows)", "#fcc419")]
    return _figure([_bar(name, df["team"], df[column], color) for column, name, color in parts], 320, barmode="stack",
                   yaxis=_title("USD wasted"), xaxis={"categoryorder": "array", "categoryarray": _values(df["team"])})


def spend_by_team(df: pd.DataFrame) -> dict:
    rows = _top(df.assign(part=df["environment"] + " · " + df["cost_kind"]), "part", "cost_usd", ["team"])
    return _figure(_bars(rows, "team", "cost_usd", "part"), 380, barmode="stack", yaxis=_title("USD"),
                   xaxis={"categoryorder": "total descending"})


def spend_trend(df: pd.DataFrame) -> dict:
    traces = [{"type": "scatter", "name": label(team), "x": _values(part["day"]), "y": _values(part["cost_usd"]),
               "mode": "lines", "stackgroup": "spend"}
              for team, part in _top(df, "team", "cost_usd", ["day"]).groupby("team", sort=True)]
    return _figure(traces, 320, yaxis=_title("USD per day"))


def budget(df: pd.DataFrame) -> dict:
    return _figure([
        _bar("spend month-to-date", df["team"], df["spend_mtd_usd"], "#4c6ef5"),
        _bar("forecast to month end", df["team"], df["forecast_usd"], "#bac8ff"),
        {"type": "scatter", "name": "budget", "x": _values(df["team"]),
         "y": _values(df["budget_usd"].where(df["budget_usd"] > 0)), "mode": "markers",
         "marker": {"symbol": "line-ew-open", "size": 36, "color": "#e03131", "line": {"width": 3, "color": "#e03131"}}},
    ], 340, barmode="group", yaxis=_title("USD this month"))


def unallocated(df: pd.DataFrame) -> dict:
    grouped = df.groupby(["what", "environment"], as_index=False)["cost_usd"].sum()
    return _figure(_bars(grouped, "cost_usd", "what", "environment", ENV_COLORS, orientation="h"), 240,
                   barmode="stack", xaxis=_title("USD unallocated"))


def placement_demand(df: pd.DataFrame) -> dict:
    return _figure([
        _bar("baseline (steady)", df["team"], df["baseline_gpu_hours"], "#4c6ef5"),
        _bar("burst", df["team"], df["burst_gpu_hours"], "#fab005"),
    ], 340, barmode="stack", yaxis=_title("held GPU-hours"))


def placement_rates(df: pd.DataFrame) -> dict:
    return _figure([_bar(None, df["environment"], df["usd_per_utilized_gpu_hour"],
                         [ENV_COLORS.get(e, "#868e96") for e in df["environment"]], texttemplate="%{y:.2f}")],
                   300, showlegend=False, yaxis=_title("USD per utilized GPU-hour"))


def queue_pressure(df: pd.DataFrame) -> dict:
    """p95 queue wait per pool and team (bars per team)."""
    return _figure(_bars(df, "pool", "wait_p95_h", "team", hovertemplate="%{x}: p95 wait %{y:.1f} h"), 300,
                   barmode="group", yaxis=_title("p95 wait (h)"))


def findings_by_policy(df: pd.DataFrame) -> dict:
    grouped = df.groupby(["policy", "severity"], as_index=False).size()
    return _figure(_bars(grouped, "policy", "size", "severity",
                         {"critical": "#e03131", "warning": "#f59f00", "info": "#868e96"}), 280,
                   barmode="stack", yaxis=_title("open findings"))
