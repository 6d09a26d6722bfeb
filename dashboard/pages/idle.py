"""Idle & waste: idle windows on a timeline, what they cost per team and pool, the worst ones."""
from __future__ import annotations

import dash
from dash import Input, Output, callback

from dashboard import components as c
from dashboard import figures, ids, queries, state

PAGE = "idle"
dash.register_page(__name__, path="/idle", name="Idle & waste", title="Idle & waste · gpuledger", order=2)
TIMELINE_MAX = 300
OFFENDER_COLUMNS = {"team": "team", "user": "user", "job_id": "job", "host": "host", "gpu_uuid": "GPU",
                    "mig_instance": "MIG", "pool": "pool", "kind": "kind", "start": "start", "end": "end",
                    "gpu_hours": "hours", "cost_usd": "USD"}


def layout(**query):
    f = state.filters_from_url(query)
    return c.page(PAGE, "Idle & waste", f, [
        c.card(PAGE, "timeline", "Idle windows", note=f"GPUs below the idle threshold for at least the minimum length; "
               f"allocated: a process or job held the GPU; unallocated: nothing did. Costliest {TIMELINE_MAX} shown."),
        c.card(PAGE, "by-team", "Cost wasted per team", wide=False),
        c.card(PAGE, "by-pool", "Cost wasted per pool", wide=False),
        c.card(PAGE, "offenders", "Worst offenders"),
    ])


@callback(Output(ids.part(PAGE, "timeline"), "children"), Output(ids.part(PAGE, "by-team"), "children"),
          Output(ids.part(PAGE, "by-pool"), "children"), Output(ids.part(PAGE, "offenders"), "children"),
          Input(ids.filters(PAGE), "data"))
def render(data):
    f, store = state.filters_from_data(data), state.get().store
    windows = queries.idle_windows(store, f, limit=TIMELINE_MAX)
    owners = queries.idle_by_owner(store, f)
    return (c.chart(windows, "idle_windows", f, figures.idle_timeline),
            c.chart(owners, "idle_windows", f, lambda d: figures.idle_cost(d, "team")),
            c.chart(owners, "idle_windows", f, lambda d: figures.idle_cost(d, "pool")),
            c.table(windows.head(20) if not windows.empty else windows, OFFENDER_COLUMNS, "idle_windows", f,
                    max_rows=20))


c.register_csv(PAGE, {"timeline": lambda s, f: queries.idle_windows(s, f, limit=100_000),
                      "by-team": queries.idle_by_owner, "by-pool": queries.idle_by_owner,
                      "offenders": lambda s, f: queries.idle_windows(s, f, limit=20)})
