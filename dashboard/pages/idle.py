"""Idle & waste: teams ranked by waste in money (idle + unused, DESIGN.md "Waste") with their
efficiency, the GPUs that make it up, idle windows on a timeline, and the worst ones.

``?gpu=…&mig=…&window=…`` (dashboard/focus.py; what the gpu_idle_window alert links to) narrow
every card to one GPU entity and add a card about it and, with ``window``, about that idle window.
``?by=…`` groups the waste card by another owner dimension (dashboard/drill.py). Drill-down: a
team (bar or row) narrows the page to it; a GPU opens the GPU page; an idle window's start, its focus.
"""
from __future__ import annotations

import dash
import pandas as pd
from dash import Input, Output, callback, dcc, html

from dashboard import components as c
from dashboard import drill, figures, ids, queries, state
from dashboard.focus import Focus
from dashboard.focus import parse as parse_focus

PAGE = "idle"
dash.register_page(__name__, path="/idle", name="Idle & waste", title="Idle & waste · gpuledger", order=2)
TIMELINE_MAX = 300
GPUS_SHOWN = 25                 # the CSV download has them all
WASTE_COLUMNS = {"key": "team", "waste_usd": "waste USD", "efficiency_pct": "efficiency %",
                 "idle_allocated_usd": "idle allocated", "idle_unallocated_usd": "idle unallocated",
                 "unused_usd": "unused", "spend_usd": "GPU spend", "no_data_usd": "no data (not waste)"}
GPU_COLUMNS = {"team": "team", "host": "host", "gpu_uuid": "GPU", "mig_instance": "MIG", "pool": "pool",
               "users": "users", "jobs": "jobs", "namespaces": "namespaces", "gpu_hours": "GPU-hours",
               "waste_usd": "waste USD", "idle_usd": "idle", "unused_usd": "unused", "spend_usd": "GPU spend"}
IDLE_IN_RANGE = ("idle time inside the range (a window crossing its edge counts its part inside): the idle parts of "
                 "the waste per team")
OFFENDER_COLUMNS = {"team": "team", "user": "user", "job_id": "job", "host": "host", "gpu_uuid": "GPU",
                    "mig_instance": "MIG", "pool": "pool", "kind": "kind", "start": "start", "end": "end",
                    "gpu_hours": "hours", "cost_usd": "USD"}


def layout(by: str = "team", **query):
    f, focus, by = state.filters_from_url(query), parse_focus(query), drill.parse_by(by)
    return c.page(PAGE, "Idle & waste", f, [
        dcc.Store(id=ids.IDLE_FOCUS, data={**focus.to_data(), "by": by}),    # the focus, and the waste card's grouping
        *focus_head(f, focus),
        drill.selector(PAGE, by),
        c.card(PAGE, "waste", f"Waste per {drill.BY[by]}", note=("Click a team for its GPUs and idle windows. "
               if by == "team" else "") + "waste = idle (inside idle windows) + unused (the unused share of "
               "the GPU time outside them), in money; efficiency = 1 - waste / GPU spend. Time without data is shown "
               "apart and is never waste."),
        c.card(PAGE, "waste-gpus", "GPUs behind the waste", note=f"per GPU or MIG slice and team, the {GPUS_SHOWN} costliest "
               "(the CSV has every one)"),
        c.card(PAGE, "timeline", "Idle windows", note=f"GPUs below the idle threshold for at least the minimum length; "
               f"allocated: a process or job held the GPU; unallocated: nothing did. Costliest {TIMELINE_MAX} shown, "
               "each whole (a window crossing the range's edge with its whole cost)."),
        c.card(PAGE, "by-team", "Cost wasted per team", wide=False, note=IDLE_IN_RANGE),
        c.card(PAGE, "by-pool", "Cost wasted per pool", wide=False, note=IDLE_IN_RANGE),
        c.card(PAGE, "offenders", "Worst offenders", note="the costliest idle windows overlapping the range, each whole"),
    ], notes=focus.notes)


def focus_head(f, focus: Focus) -> list:
    """With a focus: what the page is narrowed to (and a link without it), and the GPU focus card."""
    if not focus:
        return [html.Div(id=ids.part(PAGE, "focus"), hidden=True)]
    return [html.P(id=ids.IDLE_FOCUS_BANNER, className="focus-banner", children=[
                "Showing ", html.Strong(focus.describe()), " only: every card below is narrowed to it. ",
                dcc.Link("Clear", href=f"/idle{f.search()}", id=ids.IDLE_FOCUS_CLEAR)]),
            c.card(PAGE, "focus", "GPU focus", csv=False, note="The GPU as last seen; GPU-hours, cost and idle windows "
                   "in the time range. Environment and team filters narrow the windows only.")]


@callback(Output(ids.part(PAGE, "focus"), "children"),
          Output(ids.part(PAGE, "waste"), "children"), Output(ids.part(PAGE, "waste-gpus"), "children"),
          Output(ids.part(PAGE, "timeline"), "children"), Output(ids.part(PAGE, "by-team"), "children"),
          Output(ids.part(PAGE, "by-pool"), "children"), Output(ids.part(PAGE, "offenders"), "children"),
          Input(ids.filters(PAGE), "data"), Input(ids.IDLE_FOCUS, "data"))
@state.shared()
def render(data, focus_data):
    f, focus, store = state.filters_from_data(data), Focus.from_data(focus_data), state.get().store
    windows = queries.idle_windows(store, f, limit=TIMELINE_MAX, focus=focus)
    owners = queries.idle_by_owner(store, f, focus)
    by = by_of(focus_data)
    teams = queries.waste_by(store, f, by, focus)
    gpus = queries.waste_by_gpu(store, f, limit=GPUS_SHOWN, focus=focus)

    def of(source: str) -> str:                       # empty states name the focus
        return f"{queries.SOURCES[source]} of {focus.describe()}" if focus else ""
    waste = c.chart_table(teams, "gpu_waste_day" if by == "team" else "gpu_waste_hour", f,
                          lambda d: figures.waste_by_team(d.rename(columns={"key": "team"})),
                          {**WASTE_COLUMNS, "key": drill.BY[by]}, of("gpu_waste_day"))
    if by == "team" and not teams.empty:
        waste = [drill.clickable(waste[0], PAGE, "waste-team", teams["key"]),
                 drill.link_column(waste[1], WASTE_COLUMNS, "key", [drill.team_href(f, t) for t in teams["key"].head(50)])]
    return (focus_body(store, f, focus, windows) if focus else None,
            waste,
            gpu_links(c.table(gpus, GPU_COLUMNS, "gpu_waste_day", f, of("gpu_waste_day"), max_rows=GPUS_SHOWN),
                      gpus, GPU_COLUMNS, f, GPUS_SHOWN),
            drill.clickable(c.chart(windows, "idle_windows", f, lambda d: figures.idle_timeline(d, f), of("idle_windows")),
                            PAGE, "timeline"),
            drill.clickable(c.chart(owners, "idle_windows", f, lambda d: figures.idle_cost(d, "team"), of("idle_windows")),
                            PAGE, "idle-team", owners.get("team", [])),
            c.chart(owners, "idle_windows", f, lambda d: figures.idle_cost(d, "pool"), of("idle_windows")),
            window_links(c.table(windows.head(20) if not windows.empty else windows, OFFENDER_COLUMNS, "idle_windows", f,
                                 of("idle_windows"), max_rows=20), windows, f, 20))


def by_of(focus_data) -> str:
    """The waste card's grouping from the page's focus store; anything malformed (not a dict) is "team",
    like Focus.from_data makes it no focus."""
    return drill.parse_by(focus_data.get("by") if isinstance(focus_data, dict) else None)


def gpu_links(table, df: pd.DataFrame, columns: dict, f, shown: int):
    """``table`` of ``df`` with each GPU linked to its GPU page."""
    if df.empty:
        return table
    rows = df.head(shown)
    return drill.link_column(table, columns, "gpu_uuid", [drill.gpu_href(f, g, m) for g, m in
                                                          zip(rows["gpu_uuid"], rows["mig_instance"])])


def window_links(table, windows: pd.DataFrame, f, shown: int):
    """A table of idle windows: each GPU linked to its GPU page, each start to the window's focus."""
    if windows.empty:
        return table
    rows = windows.head(shown)
    drill.link_column(table, OFFENDER_COLUMNS, "start", [drill.window_href(f, g, m, t) for g, m, t in
                                                         zip(rows["gpu_uuid"], rows["mig_instance"], rows["start"])])
    return gpu_links(table, windows, OFFENDER_COLUMNS, f, shown)


def follow(name, point, f):
    """Where a click on a chart of the page leads (dashboard/drill.py register_clicks)."""
    if name in ("waste-team", "idle-team"):
        return drill.team_href(f, drill.point_key(point))
    data = point.get("customdata")
    if name == "timeline" and isinstance(data, list) and len(data) >= 6:
        return drill.gpu_href(f, str(data[4]), str(data[5]))
    return None


def focus_body(store, f, focus: Focus, windows: pd.DataFrame) -> list:
    """The GPU focus card: the GPU, the window asked for (or a note that none matches), the GPU's
    idle windows in the range (the one asked for marked)."""
    out: list = []
    gpu = queries.gpu_focus(store, f, focus)
    if gpu.empty:
        out.append(html.P(f"No {focus.describe()} in the store: check the link's gpu and mig, or wait for its "
                          "samples to be derived.", className="note"))
    else:
        out.append(facts(ids.IDLE_FOCUS_GPU, gpu_facts(gpu.iloc[0], focus)))
    marked = None
    if focus.window:
        found = queries.idle_window(store, focus)
        when = f"{focus.window:%Y-%m-%d %H:%M:%S} UTC"
        if found.empty:
            out.append(html.P(f"No idle window of {focus.describe()} starts at {when}; its idle windows in the time "
                              "range are listed below.", className="note"))
        else:
            row = found.iloc[0]
            marked = (row["mig_instance"], row["start"])
            out.append(html.H3(f"This window{' (MIG ' + row['mig_instance'] + ')' if row['mig_instance'] else ''}"))
            if len(found) > 1:
                out.append(html.P(f"{len(found)} MIG instances of {focus.describe()} went idle at {when}; add mig= to the "
                                  f"link to pick another ({', '.join(found['mig_instance'])}).", className="note"))
            out.append(facts(ids.IDLE_FOCUS_WINDOW, window_facts(row)))
    out.append(html.H3("Its idle windows in the time range"))
    listed = windows.sort_values(["start", "mig_instance"]) if not windows.empty else windows
    if marked is not None and not listed.empty:
        hit = (listed["mig_instance"] == marked[0]) & (listed["start"] == marked[1])
        listed = listed.assign(row_class=hit.map({True: "marked", False: ""}))
    out.append(html.Div(id=ids.IDLE_FOCUS_WINDOWS, children=window_links(c.table(
        listed, OFFENDER_COLUMNS, "idle_windows", f, f"idle windows of {focus.describe()}", max_rows=TIMELINE_MAX),
        listed, f, TIMELINE_MAX)))
    return out


def gpu_facts(row, focus: Focus) -> list[tuple[str, str]]:
    mig = focus.mig + (f" ({row['mig_profile']})" if row["mig_profile"] else "") if focus.mig else ""
    return [("GPU", row["gpu_uuid"]), ("host", row["host"]), ("pool", f"{row['environment']} · {row['pool']}"),
            ("region", row["region"]), ("model", row["model"]), ("instance", row["instance_id"]),
            ("MIG", mig or (f"instances {row['mig_instances']}" if row["mig_instances"] else "none (the whole GPU)")),
            ("seen", f"{row['first_day']:%Y-%m-%d} to {row['last_day']:%Y-%m-%d}"),
            ("in the range", f"{row['gpu_hours']:,.1f} GPU-hours, {c.money(row['cost_usd'])}, "
                             f"teams {row['teams'] or '–'}")]


def window_facts(row) -> list[tuple[str, str]]:
    still_open = bool(row.get("is_open", 0))            # is_open: only in stores migrated since it was added
    end = f"{row['end']:%Y-%m-%d %H:%M:%S} UTC" + (" (still open when last derived: it may still grow)" if still_open else "")
    namespace_pod = "/".join(v for v in (row["k8s_namespace"], row["k8s_pod"]) if v)
    owner = [("team", row["team"]), ("user", row["user"]), ("job", row["job_id"]), ("pod", namespace_pod),
             ("Slurm account", row["slurm_account"])]
    return [("start", f"{row['start']:%Y-%m-%d %H:%M:%S} UTC"), ("end", end), ("duration", duration(row["duration_s"])),
            ("cost", c.money(row["cost_usd"])), ("kind", row["kind"]),
            ("GPU utilization", f"{row['avg_util_gpu']:.1f} % on average"),
            *[(k, v) for k, v in owner if v]]


def facts(element_id: str, pairs: list[tuple[str, str]]) -> html.Dl:
    """Label / value pairs; empty values left out."""
    return html.Dl(id=element_id, className="facts",
                   children=[x for k, v in pairs if v for x in (html.Dt(k), html.Dd(str(v)))])


def duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def _csv(query, **args):
    """The CSV behind a card: its query with the page's focus."""
    return lambda store, f, focus_data: query(store, f, focus=Focus.from_data(focus_data), **args)


def _waste_csv(store, f, focus_data):
    return queries.waste_by(store, f, by_of(focus_data), Focus.from_data(focus_data))


drill.register_view_url(PAGE, {"by": (ids.aggregate_by(PAGE), "team")})
drill.register_clicks(PAGE, follow)
c.register_csv(PAGE, {"waste": _waste_csv, "waste-gpus": _csv(queries.waste_by_gpu, limit=100_000),
                      "timeline": _csv(queries.idle_windows, limit=100_000),
                      "by-team": _csv(queries.idle_by_owner), "by-pool": _csv(queries.idle_by_owner),
                      "offenders": _csv(queries.idle_windows, limit=20)}, context=ids.IDLE_FOCUS)
