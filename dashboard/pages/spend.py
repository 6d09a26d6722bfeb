"""Spend: per team by environment and cost kind, the trend, forecast vs budget, and what no
rule attributed to a team."""
from __future__ import annotations

import dash
from dash import Input, Output, State, callback, dcc, html

from dashboard import components as c
from dashboard import drill, figures, ids, queries, state

PAGE = "spend"
dash.register_page(__name__, path="/spend", name="Spend", title="Spend · gpuledger", order=3)
BUDGET_COLUMNS = {"team": "team", "budget_usd": "budget", "spend_mtd_usd": "month-to-date",
                  "forecast_usd": "forecast", "budget_used_pct": "budget used %", "forecast_over_budget": "forecast over"}
UNALLOCATED_COLUMNS = {"what": "what", "environment": "environment", "pool": "pool", "resource": "resource",
                       "gpu_hours": "GPU-hours", "cost_usd": "USD"}


BY_NOTES = {"team": "All spend: GPU cost plus the rest of the cloud bill (storage, egress, ...) attributed to "
                    "teams. Click a team for its GPUs and idle windows.",
            "other": "GPU cost only (from the GPU-hour costs): the rest of the cloud bill is attributed to "
                     "teams, never to {what}s."}


def layout(by: str = "team", **query):
    f, by = state.filters_from_url(query), drill.parse_by(by)
    return c.page(PAGE, "Spend", f, [
        dcc.Store(id=ids.view(PAGE), data={"by": by}),
        html.Div(id=ids.part(PAGE, "currencies"), className="notes"),
        drill.selector(PAGE, by),
        c.card(PAGE, "by-team", f"Spend per {drill.BY[by]}, by environment and cost kind",
               note=BY_NOTES["team"] if by == "team" else BY_NOTES["other"].format(what=drill.BY[by])),
        c.card(PAGE, "trend", "Spend per day"),
        c.card(PAGE, "budget", f"{f.budget_month:%B %Y}: spend, forecast and budget", note=budget_note(f)),
        c.card(PAGE, "unallocated", "Unallocated spend and what it consists of",
               note="Spend no attribution rule claimed (the team filter does not apply)."),
    ])


def budget_note(f) -> str:
    """What the budget card shows: the selected month (month presets), else the month of the window's last day."""
    if f.budget_month_is_current:
        return (f"Spend so far in {f.budget_month:%B %Y} and the forecast to its end (the month of the window's "
                "last day, or the month selected).")
    return (f"The spend of {f.budget_month:%B %Y} (the month of the window's last day, or the month selected); "
            "a past month has no forecast: it is the actual spend.")


@callback(Output(ids.part(PAGE, "by-team"), "children"), Output(ids.part(PAGE, "trend"), "children"),
          Output(ids.part(PAGE, "budget"), "children"), Output(ids.part(PAGE, "unallocated"), "children"),
          Output(ids.part(PAGE, "currencies"), "children"), Input(ids.filters(PAGE), "data"),
          State(ids.view(PAGE), "data"))
@state.shared()
def render(data, view):
    f, store = state.filters_from_data(data), state.get().store
    by = drill.parse_by((view or {}).get("by"))
    grouped = queries.spend_by(store, f, by)
    budget = queries.budget(store, f)
    unallocated = queries.unallocated(store, f)
    total = html.P(f"Unallocated: {c.money(unallocated['cost_usd'].sum())}", className="total") \
        if not unallocated.empty else None
    source = "team_spend_day" if by == "team" else "gpu_cost_hour"
    by_key = drill.clickable(c.chart(grouped, source, f, lambda d: figures.spend_by_team(d.rename(columns={"key": "team"})),
                                     "spend"), PAGE, f"by-team-{by}", grouped.get("key", []))
    return (by_key,
            c.chart(queries.spend_trend(store, f), "team_spend_day", f, lambda d: figures.spend_trend(d, f), "spend"),
            c.chart_table(budget, "team_spend_day", f, figures.budget, BUDGET_COLUMNS, f"spend in {f.budget_month:%B %Y}"),
            [total, *c.chart_table(unallocated, "team_spend_day", f, figures.unallocated, UNALLOCATED_COLUMNS,
                                  "unallocated spend", max_rows=20)],
            c.currency_note(queries.other_currencies(store, f)))


def follow(name, point, f):
    """A click on a team's bar opens its GPUs and idle windows (the Idle & waste page filtered to it)."""
    return drill.team_href(f, drill.point_key(point)) if name == "by-team-team" else None


def _by_csv(store, f, view):
    """The CSV behind the grouped card: per team as spend_by_team has it (column ``team``), else per ``key``."""
    by = drill.parse_by((view or {}).get("by"))
    return queries.spend_by_team(store, f) if by == "team" else queries.spend_by(store, f, by)


drill.register_view_url(PAGE, {"by": (ids.aggregate_by(PAGE), "team")})
drill.register_clicks(PAGE, follow)
c.register_csv(PAGE, {"by-team": _by_csv, "trend": lambda s, f, _: queries.spend_trend(s, f),
                      "budget": lambda s, f, _: queries.budget(s, f),
                      "unallocated": lambda s, f, _: queries.unallocated(s, f)}, context=ids.view(PAGE))
