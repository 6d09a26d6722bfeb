"""Idle & waste: teams ranked by waste in money (idle + unused, DESIGN.md "Waste") with their
efficiency, the GPUs that make it up, idle windows on a timeline, and the worst ones."""
from __future__ import annotations

import dash
from dash import Input, Output, callback

from dashboard import components as c
from dashboard import figures, ids, queries, state

PAGE = "idle"
dash.register_page(__name__, path="/idle", name="Idle & waste", title="Idle & waste · gpuledger", order=2)
TIMELINE_MAX = 300
GPUS_SHOWN = 25                 # the CSV download has them all
WASTE_COLUMNS = {"team": "team", "waste_usd": "waste USD", "efficiency_pct": "efficiency %",
                 "idle_allocated_usd": "idle allocated", "idle_unallocated_usd": "idle unallocated",
                 "unused_usd": "unused", "spend_usd": "GPU spend", "no_data_usd": "no data (not waste)"}
GPU_COLUMNS = {"team": "team", "host": "host", "gpu_uuid": "GPU", "mig_instance": "MIG", "pool": "pool",
               "users": "users", "jobs": "jobs", "namespaces": "namespaces", "gpu_hours": "GPU-hours",
               "waste_usd": "waste USD", "idle_usd": "idle", "unused_usd": "unused", "spend_usd": "GPU spend"}
OFFENDER_COLUMNS = {"team": "team", "user": "user", "job_id": "job", "host": "host", "gpu_uuid": "GPU",
                    "mig_instance": "MIG", "pool": "pool", "kind": "kind", "start": "start", "end": "end",
                    "gpu_hours": "hours", "cost_usd": "USD"}


def layout(**query):
    f = state.filters_from_url(query)
    return c.page(PAGE, "Idle & waste", f, [
        c.card(PAGE, "waste", "Waste per team", note="waste = idle (inside idle windows) + unused (the unused share of "
               "the GPU time outside them), in money; efficiency = 1 - waste / GPU spend. Time without data is shown "
               "apart and is never waste."),
        c.card(PAGE, "waste-gpus", "GPUs behind the waste", note=f"per GPU or MIG slice and team, the {GPUS_SHOWN} costliest "
               "(the CSV has every one)"),
        c.card(PAGE, "timeline", "Idle windows", note=f"GPUs below the idle threshold for at least the minimum length; "
               f"allocated: a process or job held the GPU; unallocated: nothing did. Costliest {TIMELINE_MAX} shown."),
        c.card(PAGE, "by-team", "Cost wasted per team", wide=False),
        c.card(PAGE, "by-pool", "Cost wasted per pool", wide=False),
        c.card(PAGE, "offenders", "Worst offenders"),
    ])


@callback(Output(ids.part(PAGE, "waste"), "children"), Output(ids.part(PAGE, "waste-gpus"), "children"),
          Output(ids.part(PAGE, "timeline"), "children"), Output(ids.part(PAGE, "by-team"), "children"),
          Output(ids.part(PAGE, "by-pool"), "children"), Output(ids.part(PAGE, "offenders"), "children"),
          Input(ids.filters(PAGE), "data"))
def render(data):
    f, store = state.filters_from_data(data), state.get().store
    windows = queries.idle_windows(store, f, limit=TIMELINE_MAX)
    owners = queries.idle_by_owner(store, f)
    teams = queries.waste_by_team(store, f)
    return (c.chart_table(teams, "gpu_waste_day", f, figures.waste_by_team, WASTE_COLUMNS),
            c.table(queries.waste_by_gpu(store, f, limit=GPUS_SHOWN), GPU_COLUMNS, "gpu_waste_day", f, max_rows=GPUS_SHOWN),
            c.chart(windows, "idle_windows", f, figures.idle_timeline),
            c.chart(owners, "idle_windows", f, lambda d: figures.idle_cost(d, "team")),
            c.chart(owners, "idle_windows", f, lambda d: figures.idle_cost(d, "pool")),
            c.table(windows.head(20) if not windows.empty else windows, OFFENDER_COLUMNS, "idle_windows", f,
                    max_rows=20))


c.register_csv(PAGE, {"waste": queries.waste_by_team, "waste-gpus": lambda s, f: queries.waste_by_gpu(s, f, limit=100_000),
                      "timeline": lambda s, f: queries.idle_windows(s, f, limit=100_000),
                      "by-team": queries.idle_by_owner, "by-pool": queries.idle_by_owner,
                      "offenders": lambda s, f: queries.idle_windows(s, f, limit=20)})
