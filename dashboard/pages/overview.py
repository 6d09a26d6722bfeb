"""Overview: the fleet at a glance; every tile links to the page that explains it."""
from __future__ import annotations

import dash
from dash import Input, Output, callback, html

from dashboard import components as c
from dashboard import figures, ids, queries, state

PAGE = "overview"
dash.register_page(__name__, path="/", name="Overview", title="Overview · gpuledger", order=0)


def layout(**query):
    f = state.filters_from_url(query)
    return c.page(PAGE, "Fleet overview", f, [
        html.Div(id=ids.part(PAGE, "currencies"), className="notes"),
        html.Div(id=ids.part(PAGE, "tiles"), className="tiles"),
        c.card(PAGE, "fleet", "GPUs by environment and pool"),
    ])


@callback(Output(ids.part(PAGE, "tiles"), "children"), Output(ids.part(PAGE, "fleet"), "children"),
          Output(ids.part(PAGE, "currencies"), "children"), Input(ids.filters(PAGE), "data"))
def render(data):
    f, store = state.filters_from_data(data), state.get().store
    fleet = queries.fleet(store, f)
    tiles = overview_tiles(f, fleet, queries.waste_month(store, f), queries.budget(store, f),
                           queries.coverage(store, f), queries.alert_counts(store, f), queries.findings(store, f))
    return (tiles, c.chart(fleet, "gpu_cost_day", f, figures.fleet_gpus, "GPUs"),
            c.currency_note(queries.other_currencies(store, f)))


def overview_tiles(f, fleet, waste, budget, coverage, alerts, findings) -> list:
    q = f.search()

    def tile(key, title, value, detail, page, tone=""):
        return c.tile(title, value, detail, f"/{page}{q}", ids.part(PAGE, f"tile-{key}"), tone)

    if fleet.empty:
        gpus = tile("gpus", "GPUs", "0", "no GPU-hours match these filters", "utilization", "muted")
        util = tile("utilization", "Fleet utilization", "–", "no GPU-hours match these filters", "utilization", "muted")
    else:
        per_env = fleet.groupby("environment")["gpus"].sum()
        mig = int(fleet["mig_instances"].sum())
        gpus = tile("gpus", "GPUs", f"{int(fleet['gpus'].sum()):,}",
                    " · ".join(f"{e} {n}" for e, n in per_env.items()) + (f" · {mig} MIG instances" if mig else ""),
                    "utilization")
        pct = 100 * fleet["total_utilized_gpu_hours"].sum() / max(fleet["total_gpu_hours"].sum(), 1e-9)
        util = tile("utilization", "Fleet utilization", f"{pct:.1f} %",
                    f"of {fleet['total_gpu_hours'].sum():,.0f} GPU-hours, time-weighted", "utilization",
                    "bad" if pct < 30 else "")
    idle_tile = waste_tile(tile, waste)
    if budget.empty:
        spend = tile("spend", "Spend this month", "–", "no spend recorded this month", "spend", "muted")
    else:
        over = [c.short(t, 40) for t in budget[budget["forecast_over_budget"].astype(bool)]["team"]]
        over = over[:5] + ([f"{len(over) - 5} more"] if len(over) > 5 else [])
        spend = tile("spend", "Spend this month", c.money(budget["spend_mtd_usd"].sum()),
                     f"budget {c.money(budget['budget_usd'].fillna(0).sum())} · forecast "
                     f"{c.money(budget['forecast_usd'].sum())}" + (f" · over: {', '.join(over)}" if over else ""),
                     "spend", "bad" if over else "")
    cov = coverage["coverage_pct"].iloc[0] if not coverage.empty else None
    cov_tile = tile("coverage", "Allocation coverage", "–" if cov is None or cov != cov else f"{cov:.1f} %",
                    "of spend attributed to a team" + ("" if coverage.empty else
                                                      f" · {c.money(coverage['total_usd'].iloc[0] - coverage['allocated_usd'].iloc[0])} unallocated"),
                    "spend", "bad" if cov is not None and cov == cov and cov < 90 else "")
    firing = int(alerts.loc[alerts["state"] == "firing", "alerts"].sum()) if not alerts.empty else 0
    pending = int(alerts.loc[alerts["state"] == "pending", "alerts"].sum()) if not alerts.empty else 0
    alerts_tile = tile("alerts", "Firing alerts", str(firing), f"{pending} pending", "alerts", "bad" if firing else "")
    critical = int((findings["severity"] == "critical").sum()) if not findings.empty else 0
    findings_tile = tile("findings", "Open compliance findings", str(len(findings)), f"{critical} critical",
                         "compliance", "bad" if critical else "")
    return [gpus, util, idle_tile, spend, cov_tile, alerts_tile, findings_tile]


def waste_tile(tile, waste):
    """This month's waste in money and its parts (DESIGN.md "Waste")."""
    w = waste.iloc[0] if not waste.empty else None
    if w is None or not (w["spend_usd"] > 0):
        return tile("idle", "Waste this month", "–", "no GPU cost recorded this month", "idle", "muted")
    efficiency = 100 * (1 - w["waste_usd"] / w["spend_usd"])
    detail = (f"idle {c.money(w['idle_allocated_usd'] + w['idle_unallocated_usd'])} (allocated "
              f"{c.money(w['idle_allocated_usd'])} · unallocated {c.money(w['idle_unallocated_usd'])}) · unused "
              f"{c.money(w['unused_usd'])} · efficiency {efficiency:.1f} % of {c.money(w['spend_usd'])} · "
              f"no data {c.money(w['no_data_usd'])}")
    return tile("idle", "Waste this month", c.money(w["waste_usd"]), detail, "idle", "bad" if w["waste_usd"] > 0 else "")


c.register_csv(PAGE, {"fleet": queries.fleet})
