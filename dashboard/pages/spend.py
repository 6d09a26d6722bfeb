"""Spend: per team by environment and cost kind, the trend, forecast vs budget, and what no
rule attributed to a team."""
from __future__ import annotations

import dash
from dash import Input, Output, callback, html

from dashboard import components as c
from dashboard import figures, ids, queries, state

PAGE = "spend"
dash.register_page(__name__, path="/spend", name="Spend", title="Spend · gpuledger", order=3)
BUDGET_COLUMNS = {"team": "team", "budget_usd": "budget", "spend_mtd_usd": "month-to-date",
                  "forecast_usd": "forecast", "budget_used_pct": "budget used %", "forecast_over_budget": "forecast over"}
UNALLOCATED_COLUMNS = {"what": "what", "environment": "environment", "pool": "pool", "resource": "resource",
                       "gpu_hours": "GPU-hours", "cost_usd": "USD"}


def layout(**query):
    f = state.filters_from_url(query)
    return c.page(PAGE, "Spend", f, [
        html.Div(id=ids.part(PAGE, "currencies"), className="notes"),
        c.card(PAGE, "by-team", "Spend per team, by environment and cost kind"),
        c.card(PAGE, "trend", "Spend per day"),
        c.card(PAGE, "budget", "This month: spend, forecast and budget",
               note="Month-to-date and forecast to month end (the calendar month, whatever the time range)."),
        c.card(PAGE, "unallocated", "Unallocated spend and what it consists of",
               note="Spend no attribution rule claimed (the team filter does not apply)."),
    ])


@callback(Output(ids.part(PAGE, "by-team"), "children"), Output(ids.part(PAGE, "trend"), "children"),
          Output(ids.part(PAGE, "budget"), "children"), Output(ids.part(PAGE, "unallocated"), "children"),
          Output(ids.part(PAGE, "currencies"), "children"), Input(ids.filters(PAGE), "data"))
def render(data):
    f, store = state.filters_from_data(data), state.get().store
    budget = queries.budget(store, f)
    unallocated = queries.unallocated(store, f)
    total = html.P(f"Unallocated: {c.money(unallocated['cost_usd'].sum())}", className="total") \
        if not unallocated.empty else None
    return (c.chart(queries.spend_by_team(store, f), "team_spend_day", f, figures.spend_by_team, "spend"),
            c.chart(queries.spend_trend(store, f), "team_spend_day", f, figures.spend_trend, "spend"),
            c.chart_table(budget, "team_spend_day", f, figures.budget, BUDGET_COLUMNS, "spend this month"),
            [total, *c.chart_table(unallocated, "team_spend_day", f, figures.unallocated, UNALLOCATED_COLUMNS,
                                  "unallocated spend", max_rows=20)],
            c.currency_note(queries.other_currencies(store, f)))


c.register_csv(PAGE, {"by-team": queries.spend_by_team, "trend": queries.spend_trend,
                      "budget": queries.budget, "unallocated": queries.unallocated})
