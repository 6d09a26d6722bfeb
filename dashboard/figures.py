"""Plotly figures from the query functions' DataFrames: DataFrame (and the page's Filters) in,
figure out.

Figures are plain Plotly figure dicts ({"data": [...], "layout": {...}}, what dcc.Graph sends
to plotly.js) rather than plotly.graph_objects: building and validating graph objects — above
all deep-copying the template into every figure — cost 10–40 ms a figure, a good part of a
page's server time. The template is serialised once, here.

Every name from data (teams, pools, hosts, owners) reaches a figure through ``label``: plotly.js
renders a subset of HTML in trace names, tick labels and hover text, so a team called
``<a href=…>`` would be a link; ``label`` escapes ``<``, ``>`` and ``&`` (plotly.js shows the
entities as the characters) and shortens names to ``MAX_LABEL`` characters. Legends whose entries
come from data show the ``MAX_LEGEND`` largest and sum the rest into "other".

Readability (docs/dashboard.md "Units, colours and time axes"): every trace has a hovertemplate
whose numbers carry their unit ($, h, %), axes carry the unit in a tick prefix/suffix or title;
text that could be missing is formatted here (never "NaN"). Each team, pool and environment has
one colour everywhere (``color``). Time axes span the filters' window, and the current, partial
day or hour is shaded and marked "partial" (``_time_axis``).
"""
from __future__ import annotations

import html
import math
import zlib
from datetime import date, datetime

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

ENV_COLORS = {"onprem": "#4c6ef5", "aws": "#f59f00", "gcp": "#37b24d", "azure": "#1c7ed6"}
KIND_COLORS = {"allocated": "#e8590c", "unallocated": "#868e96"}
# 34 distinct colours (D3's 10, then Plotly's Dark24) for teams, pools and other environments
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#222A2A", "#B68100", "#750D86",
           "#EB663B", "#511CFB", "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE", "#862A16",
           "#A777F1", "#620042", "#1616A7", "#DA60CA", "#6C4516", "#0D2A63", "#AF0038")
OTHER_COLOR = "#adb5bd"
COLOR_KINDS = ("team", "pool", "environment")
TEMPLATE = pio.templates["plotly_white"].to_plotly_json()
VIRIDIS = [list(stop) for stop in go.Heatmap(colorscale="Viridis").colorscale]   # as plotly.py expands it
LAYOUT = {"margin": {"l": 10, "r": 10, "t": 30, "b": 10}, "template": TEMPLATE, "legend": {"title": {"text": ""}},
          "font": {"family": "system-ui, sans-serif", "size": 12},
          "hoverlabel": {"namelength": -1}}          # hover boxes show whole series names
MAX_LABEL = 60      # characters of a name shown in a chart; longer ones end in "…"
MAX_LEGEND = 20     # legend entries from data; the rest are summed into OTHER
OTHER = "other"
USD = {"tickprefix": "$", "tickformat": ",~s"}       # a USD axis: $1.2k, $30k
HOURS = {"ticksuffix": " h"}
PERCENT = {"ticksuffix": " %"}
PARTIAL_FILL = "rgba(134, 142, 150, 0.15)"


def short(text: str, limit: int = MAX_LABEL) -> str:
    """A name from data as a label or table cell shows it: at most ``limit`` characters, then "…"."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def label(value) -> str:
    """A name from data as a chart shows it: shortened, HTML-escaped."""
    return html.escape(short(str(value)), quote=False)


def known_names() -> dict[str, tuple[str, ...]]:
    """Every team, pool and environment in the store ({kind: sorted names}; sql/queries/color_names.sql,
    cached per data version), whatever the filters; {} outside a request (then colours are hashed)."""
    try:
        from dashboard import queries, state
        df = queries.named(state.get().store, "color_names", {})
    except (RuntimeError, KeyError):                    # no (mounted) Flask app: a script or a unit test
        return {}
    return {str(k): tuple(str(n) for n in v) for k, v in zip(df["kind"], df["names"])}


def color(kind: str, name, known: dict[str, tuple[str, ...]] | None = None) -> str:
    """The one colour of a team, pool or environment (``kind``) on every page and under every filter.

    Known environments keep ENV_COLORS; other names take PALETTE's colour at their place among all
    the names of their kind in the store (sorted, so distinct for up to len(PALETTE) names, the same
    on every page and whatever the filters select); a name not among them (or outside a request) a
    stable hash of (kind, name). "other" (the legend's rest) is grey."""
    name = str(name)
    if name == OTHER:
        return OTHER_COLOR
    if kind == "environment" and name in ENV_COLORS:
        return ENV_COLORS[name]
    names = (known_names() if known is None else known).get(kind, ())
    offset = COLOR_KINDS.index(kind) * 7 if kind in COLOR_KINDS else 0     # teams and pools start apart
    if name in names:
        return PALETTE[(names.index(name) + offset) % len(PALETTE)]
    return PALETTE[zlib.crc32(f"{kind}\0{name}".encode()) % len(PALETTE)]


def colors(kind: str, names) -> dict[str, str]:
    """``color`` of each of ``names`` (the store's names read once)."""
    known = known_names()
    return {str(n): color(kind, n, known) for n in dict.fromkeys(str(n) for n in names)}


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


def money_text(value) -> str:
    """A dollar amount for hover text prepared in Python: "$1,234.56", "–" when missing."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"${value:,.2f}"


def duration_text(seconds) -> str:
    """A length of time for hover text: "2 h 05 min", "45 min", "30 s", "–" when missing."""
    if seconds is None or seconds is pd.NA or (isinstance(seconds, float) and math.isnan(seconds)):
        return "–"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def time_text(value) -> str:
    """A time for hover text: "2026-11-24 04:00:00 UTC", "–" when missing."""
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{pd.Timestamp(value):%Y-%m-%d %H:%M:%S} UTC"


def _time_axis(f, bucket: str = "day", **axis) -> dict:
    """Layout parts of a time x axis: its range the filters' window (``f.window()``, or the days
    ``f.start``..``f.end``), and the current, incomplete ``bucket`` ("day" or "hour") shaded and
    marked "partial" (``f.partial_from``) so a partial total does not read as a drop. ``f`` None:
    the data's extent, nothing marked."""
    xaxis = {"type": "date", **axis}
    if f is None:
        return {"xaxis": xaxis}
    if hasattr(f, "window"):
        start, end = f.window()
    else:
        start, end = (datetime.combine(d, datetime.min.time()) for d in (f.start, f.end))
    xaxis["range"] = [_iso(start), _iso(end)]
    out: dict = {"xaxis": xaxis}
    partial = f.partial_from(bucket) if hasattr(f, "partial_from") else None
    if partial is not None and partial < end:
        out["shapes"] = [{"type": "rect", "xref": "x", "yref": "paper", "x0": _iso(partial), "x1": _iso(end),
                          "y0": 0, "y1": 1, "fillcolor": PARTIAL_FILL, "line": {"width": 0}, "layer": "below"}]
        out["annotations"] = [{"x": _iso(partial), "xref": "x", "y": 1, "yref": "paper", "xanchor": "left",
                               "yanchor": "bottom", "showarrow": False, "font": {"size": 11, "color": "#868e96"},
                               "text": f"partial {bucket} (to now)"}]
    return out


def _iso(t: datetime | date) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") if isinstance(t, datetime) else t.isoformat()


def _heatmap(grid: pd.DataFrame, y: list, hours: int | None = None) -> dict:
    when = "%{x|%Y-%m-%d}" if hours is None or hours >= 24 else f"%{{x|%Y-%m-%d %H:%M}} UTC, {hours} h"
    return {"type": "heatmap", "z": grid.values, "x": list(grid.columns), "y": y, "zmin": 0, "zmax": 100,
            "colorscale": VIRIDIS, "colorbar": {**_title("utilization"), **PERCENT}, "hoverongaps": False,
            "hovertemplate": f"%{{y}}<br>{when}<br>utilization %{{z:.1f}} %<extra></extra>"}


def _bucket_hours(times: pd.Series) -> int | None:
    """The heatmap's bucket in hours, from its distinct times (None: a single time)."""
    distinct = pd.Series(pd.to_datetime(times).drop_duplicates().sort_values())
    if len(distinct) < 2:
        return None
    return max(1, round(distinct.diff().min().total_seconds() / 3600))


def fleet_gpus(df: pd.DataFrame) -> dict:
    rows = _top(df, "pool", "gpus", ["environment"])
    return _figure(_bars(rows, "environment", "gpus", "pool", colors("pool", rows["pool"]),
                         hovertemplate="%{x} · %{fullData.name}<br>%{y:,} GPUs<extra></extra>"), 300,
                   barmode="stack", yaxis=_title("GPUs (physical)"))


def util_heatmap_pools(df: pd.DataFrame, f=None) -> dict:
    rows = df.assign(row=df["environment"] + " · " + df["pool"])
    grid = rows.pivot_table(index="row", columns="t", values="utilization_pct", aggfunc="first")
    hours = _bucket_hours(df["t"])
    trace = _heatmap(grid, [label(r) for r in grid.index], hours)
    # each cell's "environment<TAB>pool", for a click (dashboard/pages/utilization.py; dcc.Graph drops a
    # heatmap point's customdata from clickData, its text it keeps)
    named = rows.drop_duplicates("row").set_index("row").loc[grid.index]
    trace["text"] = [[f"{e}\t{p}"] * len(grid.columns) for e, p in zip(named["environment"], named["pool"])]
    return _figure([trace], max(260, 28 * len(grid) + 80),
                   **_time_axis(f, "hour" if hours and hours < 24 else "day"))


def util_heatmap_gpus(df: pd.DataFrame, f=None) -> dict:
    """Rows are GPUs, each MIG instance right under its GPU ("└ MIG 3")."""
    short = df["gpu_uuid"].str.slice(0, 12)
    name = df["host"] + " " + short
    df = df.assign(row=name.where(df["mig_instance"] == "", "   └ " + short + " MIG " + df["mig_instance"]),
                   order=df["pool"] + "|" + df["host"] + "|" + df["gpu_uuid"] + "|"
                   + df["mig_instance"].str.zfill(4))
    order = df.drop_duplicates("order").sort_values("order")
    grid = df.pivot_table(index="order", columns="t", values="utilization_pct", aggfunc="first").loc[order["order"]]
    hours = _bucket_hours(df["t"])
    trace = _heatmap(grid, [label(r) for r in order["row"]], hours)
    # each cell's "GPU UUID<TAB>MIG instance": a click opens that GPU (dashboard/pages/utilization.py;
    # dcc.Graph drops a heatmap point's customdata from clickData, its text it keeps)
    trace["text"] = [[f"{g}\t{m}"] * len(grid.columns) for g, m in zip(order["gpu_uuid"], order["mig_instance"])]
    return _figure([trace], max(300, 16 * len(grid) + 80),
                   yaxis={"autorange": "reversed"}, **_time_axis(f, "hour" if hours and hours < 24 else "day"))


def util_distribution(df: pd.DataFrame) -> dict:
    env_colors = colors("environment", df["environment"])
    traces = [{"type": "box", "name": label(env), "x": _values(part["team"]), "q1": _values(part["q1_pct"]),
               "median": _values(part["median_pct"]), "q3": _values(part["q3_pct"]),
               "lowerfence": _values(part["min_pct"]), "upperfence": _values(part["max_pct"]),
               "marker": {"color": env_colors[str(env)]},
               "hovertemplate": "%{x} · %{fullData.name}<br>%{y:.1f} %<extra></extra>"}
              for env, part in df.groupby("environment", sort=True)]
    return _figure(traces, boxmode="group",
                   yaxis={**_title("utilization of held GPU-days"), **PERCENT, "range": [0, 100]})


def idle_timeline(df: pd.DataFrame, f=None) -> dict:
    """Horizontal bars from start to end, one row per GPU (a Gantt chart). Hover: start – end,
    the length in h/min, the owner and the cost, all formatted here (a bar's base and length are
    no text a hovertemplate can format)."""
    start, end = pd.to_datetime(df["start"]), pd.to_datetime(df["end"])
    rows = df.assign(gpu=df["host"] + " " + df["gpu_uuid"].str.slice(0, 12)
                     + df["mig_instance"].map(lambda m: f" MIG {m}" if m else ""),
                     ms=(end - start).dt.total_seconds() * 1000,
                     owner=(df["team"] + " " + df["user"] + " " + df["job_id"]).str.strip(),
                     when=start.map(time_text) + " – " + end.map(time_text),
                     length=((end - start).dt.total_seconds()).map(duration_text),
                     cost=df["cost_usd"].map(money_text))
    traces = [_bar(kind, part["ms"], part["gpu"], KIND_COLORS.get(kind), base=_values(part["start"]),
                   orientation="h",
                   customdata=list(zip(_values(part["owner"].where(part["owner"] != "", "no owner")),
                                       part["when"], part["length"], part["cost"],
                                       part["gpu_uuid"], part["mig_instance"])),   # [4], [5]: a click opens the GPU
                   hovertemplate="%{y}<br>%{customdata[1]}<br>idle %{customdata[2]} · %{customdata[3]}"
                                 "<br>%{customdata[0]}<extra>%{fullData.name}</extra>")
              for kind, part in rows.groupby("kind", sort=True)]
    return _figure(traces, max(260, 22 * rows["gpu"].nunique() + 100), barmode="overlay",
                   yaxis={"autorange": "reversed", **_title(""), "categoryorder": "category ascending"},
                   **_time_axis(f, "day"))


def idle_cost(df: pd.DataFrame, by: str) -> dict:
    grouped = df.groupby([by, "kind"], as_index=False)["cost_usd"].sum()
    return _figure(_bars(grouped, by, "cost_usd", "kind", KIND_COLORS,
                         hovertemplate="%{x} · %{fullData.name}<br>$%{y:,.2f} wasted idle<extra></extra>"), 300,
                   barmode="stack", yaxis={**_title("wasted idle (USD)"), **USD},
                   xaxis={"categoryorder": "total descending"})


def waste_by_team(df: pd.DataFrame) -> dict:
    """Each team's waste in its parts, worst first."""
    parts = [("idle_allocated_usd", "idle, allocated", "#e03131"), ("idle_unallocated_usd", "idle, unallocated", "#f08c00"),
             ("unused_usd", "unused (outside idle windows)", "#fcc419")]
    return _figure([_bar(name, df["team"], df[column], color,
                         hovertemplate="%{x} · %{fullData.name}<br>$%{y:,.2f}<extra></extra>")
                    for column, name, color in parts], 320, barmode="stack",
                   yaxis={**_title("wasted (USD)"), **USD},
                   xaxis={"categoryorder": "array", "categoryarray": _values(df["team"])})


def spend_by_team(df: pd.DataFrame) -> dict:
    """Stacks per team: one colour per environment (``color``), one pattern per cost kind."""
    rows = _top(df.assign(part=df["environment"] + " · " + df["cost_kind"]), "part", "cost_usd", ["team"])
    env = rows["part"].str.split(" · ").str[0]
    env_colors = colors("environment", env)
    kinds = sorted(set(df["cost_kind"]))
    patterns = ["", "/", "x", ".", "\\", "+", "-", "|"]
    traces = []
    for key, part in rows.groupby("part", sort=True):
        environment, _, kind = str(key).partition(" · ")
        trace = _bar(key, part["team"], part["cost_usd"], None,
                     hovertemplate="%{x} · %{fullData.name}<br>$%{y:,.2f}<extra></extra>")
        trace["marker"] = {"color": env_colors.get(environment, OTHER_COLOR),
                           "pattern": {"shape": patterns[kinds.index(kind) % len(patterns)] if kind in kinds else ""}}
        traces.append(trace)
    return _figure(traces, 380, barmode="stack", yaxis={**_title("spend (USD)"), **USD},
                   xaxis={"categoryorder": "total descending"})


def spend_trend(df: pd.DataFrame, f=None) -> dict:
    rows = _top(df, "team", "cost_usd", ["day"])
    team_colors = colors("team", rows["team"])
    traces = [{"type": "scatter", "name": label(team), "x": _values(part["day"]), "y": _values(part["cost_usd"]),
               "mode": "lines", "stackgroup": "spend", "line": {"color": team_colors[str(team)]},
               "fillcolor": team_colors[str(team)],
               "hovertemplate": "%{x|%Y-%m-%d} · %{fullData.name}<br>$%{y:,.2f} that day<extra></extra>"}
              for team, part in rows.groupby("team", sort=True)]
    return _figure(traces, 320, yaxis={**_title("spend per day (USD)"), **USD}, **_time_axis(f, "day"))


def budget(df: pd.DataFrame) -> dict:
    return _figure([
        _bar("spend month-to-date", df["team"], df["spend_mtd_usd"], "#4c6ef5",
             hovertemplate="%{x}<br>spent $%{y:,.2f}<extra></extra>"),
        _bar("forecast to month end", df["team"], df["forecast_usd"], "#bac8ff",
             hovertemplate="%{x}<br>forecast $%{y:,.2f}<extra></extra>"),
        {"type": "scatter", "name": "budget", "x": _values(df["team"]),
         "y": _values(df["budget_usd"].where(df["budget_usd"] > 0)), "mode": "markers",
         "hovertemplate": "%{x}<br>budget $%{y:,.2f}<extra></extra>",
         "marker": {"symbol": "line-ew-open", "size": 36, "color": "#e03131", "line": {"width": 3, "color": "#e03131"}}},
    ], 340, barmode="group", yaxis={**_title("this month (USD)"), **USD})


def unallocated(df: pd.DataFrame) -> dict:
    grouped = df.groupby(["what", "environment"], as_index=False)["cost_usd"].sum()
    return _figure(_bars(grouped, "cost_usd", "what", "environment", colors("environment", grouped["environment"]),
                         orientation="h", hovertemplate="%{y} · %{fullData.name}<br>$%{x:,.2f} unallocated"
                                                         "<extra></extra>"), 240,
                   barmode="stack", xaxis={**_title("unallocated (USD)"), **USD})


def placement_demand(df: pd.DataFrame) -> dict:
    hover = "%{x} · %{fullData.name}<br>%{y:,.1f} h held<extra></extra>"
    return _figure([
        _bar("baseline (steady)", df["team"], df["baseline_gpu_hours"], "#4c6ef5", hovertemplate=hover),
        _bar("burst", df["team"], df["burst_gpu_hours"], "#fab005", hovertemplate=hover),
    ], 340, barmode="stack", yaxis={**_title("held GPU-hours"), **HOURS})


def placement_rates(df: pd.DataFrame) -> dict:
    env_colors = colors("environment", df["environment"])
    return _figure([_bar(None, df["environment"], df["usd_per_utilized_gpu_hour"],
                         [env_colors[str(e)] for e in df["environment"]], texttemplate="$%{y:.2f}",
                         hovertemplate="%{x}<br>$%{y:,.2f} per utilized GPU-hour<extra></extra>")],
                   300, showlegend=False, yaxis={**_title("USD per utilized GPU-hour"), "tickprefix": "$"})


def queue_pressure(df: pd.DataFrame) -> dict:
    """p95 queue wait per pool and team (bars per team)."""
    return _figure(_bars(df, "pool", "wait_p95_h", "team", colors("team", df["team"]),
                         hovertemplate="%{x} · %{fullData.name}<br>p95 wait %{y:.1f} h<extra></extra>"), 300,
                   barmode="group", yaxis={**_title("p95 wait"), **HOURS})


def findings_by_policy(df: pd.DataFrame) -> dict:
    grouped = df.groupby(["policy", "severity"], as_index=False).size()
    return _figure(_bars(grouped, "policy", "size", "severity",
                         {"critical": "#e03131", "warning": "#f59f00", "info": "#868e96"},
                         hovertemplate="%{x} · %{fullData.name}<br>%{y:,} open findings<extra></extra>"), 280,
                   barmode="stack", yaxis=_title("open findings"))


# The GPU page (dashboard/pages/gpu.py): one GPU entity's panels, each on the filters' window
# (_time_axis) so they line up one above the other.
# NVML's clocks-event (throttle) reason bits, nvmlClocksEventReason* (collector/nvidia_smi.py reads the same).
THROTTLE_REASONS = {0x1: "GpuIdle", 0x2: "ApplicationsClocksSetting", 0x4: "SwPowerCap", 0x8: "HwSlowdown",
                    0x10: "SyncBoost", 0x20: "SwThermalSlowdown", 0x40: "HwThermalSlowdown",
                    0x80: "HwPowerBrakeSlowdown", 0x100: "DisplayClockSetting"}
GPU_PANEL_HEIGHT = 240
WHEN = "%{x|%Y-%m-%d %H:%M} UTC"


def _xs(times: pd.Series) -> list[str]:
    """Times as the ISO text plotly.js reads: encoding numpy datetimes one by one is slow."""
    return [str(t) for t in np.datetime_as_string(pd.to_datetime(times).to_numpy(dtype="datetime64[s]"), unit="s")]


def _ys(values) -> list:
    """Numbers with NaN as None (JSON null, a gap): one NaN makes Plotly's encoder encode the whole
    response twice."""
    a = np.asarray(values, dtype="float64")
    return np.where(np.isnan(a), None, a).tolist()


def throttle_names(mask) -> list[str]:
    """The reasons set in an NVML clocks-event bitmask, lowest bit first (unknown bits as hex)."""
    mask = int(mask)
    return [THROTTLE_REASONS.get(1 << bit, f"bit 0x{1 << bit:x}") for bit in range(64) if mask >> bit & 1]


def _line(name: str, x, y, unit_format: str, color: str | None = None, **trace) -> dict:
    """A line of a GPU panel; its hover names the time (UTC) and the value with its unit. NaN
    (no data) is a gap: plotly.js neither draws nor hovers it."""
    out = {"type": "scatter", "mode": "lines", "name": name, "x": _xs(x), "y": _ys(y), "connectgaps": False,
           "hovertemplate": f"{WHEN}<br>{name}: {unit_format}<extra></extra>", **trace}
    if color:
        out["line"] = {"color": color, "width": 1.5}
    return out


def _panel(f, data: list[dict], height: int = GPU_PANEL_HEIGHT, **layout) -> dict:
    return _figure(data, height, **_time_axis(f, "hour"), legend={"orientation": "h", "y": 1.12},
                   hovermode="closest", **layout)


def gpu_utilization(df: pd.DataFrame, f=None) -> dict:
    return _panel(f, [_line("GPU", df["t"], df["util_gpu_pct"], "%{y:.1f} %", "#4c6ef5"),
                      _line("memory controller", df["t"], df["util_mem_pct"], "%{y:.1f} %", "#f59f00")],
                  yaxis={"range": [0, 100], **PERCENT, **_title("utilization")})


def gpu_memory(df: pd.DataFrame, f=None) -> dict:
    return _panel(f, [_line("used", df["t"], df["mem_used_gib"], "%{y:,.1f} GiB", "#4c6ef5", fill="tozeroy"),
                      _line("total", df["t"], df["mem_total_gib"], "%{y:,.1f} GiB", "#868e96")],
                  yaxis={"rangemode": "tozero", "ticksuffix": " GiB", **_title("framebuffer")})


def gpu_power(df: pd.DataFrame, f=None) -> dict:
    """Average power per bucket (W) and the energy used since the window's start (kWh, right axis)."""
    energy = df["energy_kwh"].cumsum().where(df["energy_kwh"].notna())
    return _panel(f, [_line("power", df["t"], df["power_w"], "%{y:,.0f} W", "#e03131"),
                      _line("energy since the start", df["t"], energy, "%{y:,.2f} kWh", "#37b24d", yaxis="y2")],
                  yaxis={"rangemode": "tozero", "ticksuffix": " W", **_title("power")},
                  yaxis2={"overlaying": "y", "side": "right", "rangemode": "tozero", "ticksuffix": " kWh",
                          "showgrid": False})


def gpu_temperature(df: pd.DataFrame, f=None) -> dict:
    return _panel(f, [_line("temperature (highest)", df["t"], df["temperature_c"], "%{y:.0f} °C", "#e8590c")],
                  yaxis={"ticksuffix": " °C", **_title("temperature")})


def gpu_clocks(df: pd.DataFrame, f=None) -> dict:
    return _panel(f, [_line("SM clock", df["t"], df["sm_mhz"], "%{y:,.0f} MHz", "#7048e8"),
                      _line("memory clock", df["t"], df["mem_mhz"], "%{y:,.0f} MHz", "#1098ad")],
                  yaxis={"rangemode": "tozero", "ticksuffix": " MHz", **_title("clock")})


def gpu_throttle(df: pd.DataFrame, f=None) -> dict:
    """One row per clocks-event reason seen: a mark in every bucket where it was active."""
    seen = df[df["throttle_reasons"].fillna(0) > 0]
    rows = [(t, name) for t, mask in zip(seen["t"], seen["throttle_reasons"]) for name in throttle_names(mask)]
    order = [n for n in THROTTLE_REASONS.values() if any(r[1] == n for r in rows)] + \
        sorted({r[1] for r in rows} - set(THROTTLE_REASONS.values()))
    trace = {"type": "scatter", "mode": "markers", "name": "active", "x": _xs(pd.Series([r[0] for r in rows])),
             "y": [r[1] for r in rows], "marker": {"symbol": "square", "size": 7, "color": "#e03131"},
             "hovertemplate": f"{WHEN}<br>%{{y}} active<extra></extra>"}
    return _panel(f, [trace], max(140, 28 * len(order) + 90), showlegend=False,
                  yaxis={"type": "category", "categoryorder": "array", "categoryarray": order,
                         "autorange": "reversed"})


def gpu_events(df: pd.DataFrame, f=None) -> dict:
    """XID events per bucket (bars, the last code in the hover) and the volatile ECC counters (right axis)."""
    last = ["–" if v != v else f"{v:.0f}" for v in df["xid_last"]]
    return _panel(f, [
        {"type": "bar", "name": "XID events", "x": _xs(df["t"]), "y": _ys(df["xid_count"]), "customdata": last,
         "marker": {"color": "#e03131"},
         "hovertemplate": f"{WHEN}<br>%{{y:,.0f}} XID events (last XID %{{customdata}})<extra></extra>"},
        _line("ECC corrected (volatile)", df["t"], df["ecc_corrected"], "%{y:,.0f} errors", "#f59f00", yaxis="y2"),
        _line("ECC uncorrected (volatile)", df["t"], df["ecc_uncorrected"], "%{y:,.0f} errors", "#862e9c",
              yaxis="y2")],
        yaxis={"rangemode": "tozero", **_title("XID events")},
        yaxis2={"overlaying": "y", "side": "right", "rangemode": "tozero", "showgrid": False, **_title("ECC errors")})


def gpu_cost(df: pd.DataFrame, f=None) -> dict:
    """Cost per GPU-hour ($/h) per bucket, and the bucket's cost (bars, right axis)."""
    return _panel(f, [
        {"type": "bar", "name": "cost", "x": _xs(df["t"]), "y": _ys(df["bucket_usd"]), "yaxis": "y2", "opacity": 0.35,
         "marker": {"color": "#868e96"}, "hovertemplate": f"{WHEN}<br>cost: $%{{y:,.2f}}<extra></extra>"},
        _line("cost per GPU-hour", df["t"], df["usd_per_gpu_hour"], "$%{y:,.2f}/h", "#37b24d")],
        yaxis={"rangemode": "tozero", "tickprefix": "$", "ticksuffix": "/h", **_title("per GPU-hour")},
        yaxis2={"overlaying": "y", "side": "right", "rangemode": "tozero", "showgrid": False, "tickprefix": "$",
                "tickformat": ",.2f"})


OWNER_ROWS = (("team", "team"), ("user", "user"), ("job", "job_id"), ("pod", "pod"))
IDLE_ROW = "idle windows"


def _segment_bar(row: str, starts, ends, names, colors_, extra: list[str]) -> dict:
    """Horizontal bars from start to end on row ``row``; the hover says what, when and how long."""
    starts, ends = pd.to_datetime(pd.Series(starts)), pd.to_datetime(pd.Series(ends))
    seconds = (ends - starts).dt.total_seconds()
    custom = [[label(n), time_text(s), time_text(e), duration_text(d), x]
              for n, s, e, d, x in zip(names, starts, ends, seconds, extra)]
    return {"type": "bar", "orientation": "h", "name": row, "y": [row] * len(custom), "x": (seconds * 1000).tolist(),
            "base": [_iso(s) for s in starts], "marker": {"color": list(colors_)}, "customdata": custom,
            "text": [label(n) for n in names], "textposition": "inside", "insidetextanchor": "middle",
            "hovertemplate": "<b>%{customdata[0]}</b><br>%{customdata[1]} to %{customdata[2]} "
                             "(%{customdata[3]})%{customdata[4]}<extra>" + row + "</extra>"}


def gpu_timeline(owners: pd.DataFrame, windows: pd.DataFrame, f=None) -> dict:
    """Who held the GPU (team, user, job, namespace/pod runs) and its idle windows, one row each."""
    traces = []
    if not owners.empty:
        held = owners.assign(pod=(owners["k8s_namespace"] + "/" + owners["k8s_pod"]).str.strip("/"))
        for row, column in OWNER_ROWS:
            part = held[held[column] != ""]
            if part.empty:
                continue
            palette = colors("team" if row == "team" else "owner", part[column])
            tint = [palette[str(v)] for v in part[column]]
            hours = [f"<br>{h:,.1f} h with data" for h in part["covered_h"]]
            traces.append(_segment_bar(row, part["start"], part["end"], part[column], tint, hours))
    if not windows.empty:
        extra = [f"<br>{k}, {u:.1f} % GPU on average, {money_text(c)}" + (f", {label(t)}" if t else "")
                 for k, u, c, t in zip(windows["kind"], windows["avg_util_gpu"], windows["cost_usd"], windows["team"])]
        traces.append(_segment_bar(IDLE_ROW, windows["start"], windows["end"], windows["kind"] + " idle",
                                   [KIND_COLORS.get(k, "#868e96") for k in windows["kind"]], extra))
    rows = [r for r, _ in OWNER_ROWS] + [IDLE_ROW]
    return _panel(f, traces, 260, barmode="overlay", showlegend=False,
                  yaxis={"type": "category", "categoryorder": "array", "categoryarray": rows, "range": [len(rows) - 0.5, -0.5]})
