"""Plotly figures from the query functions' DataFrames. Pure: DataFrame in, figure out."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

ENV_COLORS = {"onprem": "#4c6ef5", "aws": "#f59f00", "gcp": "#37b24d", "azure": "#1c7ed6"}
KIND_COLORS = {"allocated": "#e8590c", "unallocated": "#868e96"}
LAYOUT = dict(margin=dict(l=10, r=10, t=30, b=10), template="plotly_white", legend_title_text="",
              font=dict(family="system-ui, sans-serif", size=12))


def _style(fig: go.Figure, height: int = 360) -> go.Figure:
    fig.update_layout(height=height, **LAYOUT)
    return fig


def _bars(df: pd.DataFrame, x: str, y: str, color: str, colors: dict | None = None, **bar) -> list[go.Bar]:
    """One trace per value of ``color`` (plain graph_objects: much cheaper to build than plotly.express)."""
    return [go.Bar(name=str(key), x=part[x], y=part[y], marker_color=(colors or {}).get(key), **bar)
            for key, part in df.groupby(color, sort=True)]


def fleet_gpus(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure(_bars(df, "environment", "gpus", "pool"))
    fig.update_layout(barmode="stack", yaxis_title="GPUs")
    return _style(fig, 300)


def util_heatmap_pools(df: pd.DataFrame) -> go.Figure:
    rows = df.assign(row=df["environment"] + " · " + df["pool"])
    grid = rows.pivot_table(index="row", columns="t", values="utilization_pct", aggfunc="first")
    fig = go.Figure(go.Heatmap(z=grid.values, x=list(grid.columns), y=list(grid.index), zmin=0, zmax=100,
                               colorscale="Viridis", colorbar=dict(title="util %"),
                               hovertemplate="%{y}<br>%{x}<br>%{z:.1f} %<extra></extra>"))
    return _style(fig, max(260, 28 * len(grid) + 80))


def util_heatmap_gpus(df: pd.DataFrame) -> go.Figure:
    """Rows are GPUs, each MIG instance right under its GPU ("└ MIG 3")."""
    short = df["gpu_uuid"].str.slice(0, 12)
    label = df["host"] + " " + short
    df = df.assign(row=label.where(df["mig_instance"] == "", "   └ " + short + " MIG " + df["mig_instance"]),
                   order=df["pool"] + "|" + df["host"] + "|" + df["gpu_uuid"] + "|"
                   + df["mig_instance"].str.zfill(4))
    order = df.drop_duplicates("order").sort_values("order")
    grid = df.pivot_table(index="order", columns="t", values="utilization_pct", aggfunc="first").loc[order["order"]]
    fig = go.Figure(go.Heatmap(z=grid.values, x=list(grid.columns), y=list(order["row"]), zmin=0, zmax=100,
                               colorscale="Viridis", colorbar=dict(title="util %"),
                               hovertemplate="%{y}<br>%{x}<br>%{z:.1f} %<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    return _style(fig, max(300, 16 * len(grid) + 80))


def util_distribution(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for env, part in df.groupby("environment", sort=True):
        fig.add_trace(go.Box(name=env, x=part["team"], q1=part["q1_pct"], median=part["median_pct"],
                             q3=part["q3_pct"], lowerfence=part["min_pct"], upperfence=part["max_pct"],
                             marker_color=ENV_COLORS.get(env)))
    fig.update_layout(boxmode="group", yaxis_title="utilization of held GPU-days, %", yaxis_range=[0, 100])
    return _style(fig)


def idle_timeline(df: pd.DataFrame) -> go.Figure:
    """Horizontal bars from start to end, one row per GPU (a Gantt chart)."""
    rows = df.assign(gpu=df["host"] + " " + df["gpu_uuid"].str.slice(0, 12)
                     + df["mig_instance"].map(lambda m: f" MIG {m}" if m else ""),
                     ms=(pd.to_datetime(df["end"]) - pd.to_datetime(df["start"])).dt.total_seconds() * 1000,
                     owner=df["team"] + " " + df["user"] + " " + df["job_id"])
    fig = go.Figure([go.Bar(name=kind, y=part["gpu"], x=part["ms"], base=part["start"], orientation="h",
                            marker_color=KIND_COLORS.get(kind), customdata=part[["owner", "cost_usd"]],
                            hovertemplate="%{y}<br>%{base} + %{x:,.0f} ms<br>%{customdata[0]}<br>$%{customdata[1]:.2f}"
                                          "<extra>%{fullData.name}</extra>")
                     for kind, part in rows.groupby("kind", sort=True)])
    fig.update_xaxes(type="date")
    fig.update_yaxes(autorange="reversed", title="", categoryorder="category ascending")
    fig.update_layout(barmode="overlay")
    return _style(fig, max(260, 22 * rows["gpu"].nunique() + 100))


def idle_cost(df: pd.DataFrame, by: str) -> go.Figure:
    grouped = df.groupby([by, "kind"], as_index=False)["cost_usd"].sum()
    fig = go.Figure(_bars(grouped, by, "cost_usd", "kind", KIND_COLORS))
    fig.update_layout(barmode="stack", yaxis_title="USD wasted idle", xaxis={"categoryorder": "total descending"})
    return _style(fig, 300)


def spend_by_team(df: pd.DataFrame) -> go.Figure:
    rows = df.assign(part=df["environment"] + " · " + df["cost_kind"])
    fig = go.Figure(_bars(rows, "team", "cost_usd", "part"))
    fig.update_layout(barmode="stack", yaxis_title="USD", xaxis={"categoryorder": "total descending"})
    return _style(fig, 380)


def spend_trend(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure([go.Scatter(name=team, x=part["day"], y=part["cost_usd"], mode="lines", stackgroup="spend")
                     for team, part in df.groupby("team", sort=True)])
    fig.update_layout(yaxis_title="USD per day")
    return _style(fig, 320)


def budget(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure([
        go.Bar(name="spend month-to-date", x=df["team"], y=df["spend_mtd_usd"], marker_color="#4c6ef5"),
        go.Bar(name="forecast to month end", x=df["team"], y=df["forecast_usd"], marker_color="#bac8ff"),
        go.Scatter(name="budget", x=df["team"], y=df["budget_usd"].where(df["budget_usd"] > 0), mode="markers",
                   marker=dict(symbol="line-ew-open", size=36, color="#e03131", line=dict(width=3, color="#e03131"))),
    ])
    fig.update_layout(barmode="group", yaxis_title="USD this month")
    return _style(fig, 340)


def unallocated(df: pd.DataFrame) -> go.Figure:
    grouped = df.groupby(["what", "environment"], as_index=False)["cost_usd"].sum()
    fig = go.Figure(_bars(grouped, "cost_usd", "what", "environment", ENV_COLORS, orientation="h"))
    fig.update_layout(barmode="stack", xaxis_title="USD unallocated")
    return _style(fig, 240)


def placement_demand(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure([
        go.Bar(name="baseline (steady)", x=df["team"], y=df["baseline_gpu_hours"], marker_color="#4c6ef5"),
        go.Bar(name="burst", x=df["team"], y=df["burst_gpu_hours"], marker_color="#fab005"),
    ])
    fig.update_layout(barmode="stack", yaxis_title="held GPU-hours")
    return _style(fig, 340)


def placement_rates(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure(go.Bar(x=df["environment"], y=df["usd_per_utilized_gpu_hour"], texttemplate="%{y:.2f}",
                           marker_color=[ENV_COLORS.get(e, "#868e96") for e in df["environment"]]))
    fig.update_layout(showlegend=False, yaxis_title="USD per utilized GPU-hour")
    return _style(fig, 300)


def findings_by_policy(df: pd.DataFrame) -> go.Figure:
    grouped = df.groupby(["policy", "severity"], as_index=False).size()
    fig = go.Figure(_bars(grouped, "policy", "size", "severity",
                          {"critical": "#e03131", "warning": "#f59f00", "info": "#868e96"}))
    fig.update_layout(barmode="stack", yaxis_title="open findings")
    return _style(fig, 280)
