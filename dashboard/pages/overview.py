"""Overview: the fleet at a glance; every tile links to the page that explains it."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import dash
from dash import Input, Output, callback, html

from dashboard import components as c
from dashboard import figures, ids, queries, state
from dashboard.reader import RECENT_S

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
@state.shared(max_age_s=RECENT_S)     # its alert counts are read again after 5 s
def render(data):
    f, store = state.filters_from_data(data), state.get().store
    # two handles, each about half of the work (on 10,000 GPUs × 90 days: fleet and the month's waste
    # and coverage; the GPU counts, the budget and the rest)
    (fleet, waste, coverage), (alerts, findings, counts, budget, month_other, other) = queries.side_by_side(
        lambda: (queries.fleet(store, f), queries.waste_month(store, f), queries.coverage(store, f)),
        lambda: (queries.alert_counts(store, f), queries.findings(store, f), gpu_counts(store, f),
                 queries.budget(store, f), queries.other_currencies(store, month_filters(f)),
                 queries.other_currencies(store, f)))
    tiles = overview_tiles(f, fleet, waste, budget, coverage, alerts, findings, counts, month_other)
    return tiles, c.chart(fleet, "gpu_cost_day", f, figures.fleet_gpus, "GPUs"), c.currency_note(other)


def gpu_counts(store, f):
    """GPUs (physical: host, gpu_uuid), GPU entities (whole GPUs and MIG instances), MIG instances and
    the GPUs split into them, in the window (sql/queries/gpu_counts.sql; the demo summary reads the same)."""
    return queries.run(store, "gpu_counts", f)


def month_filters(f):
    """``f`` narrowed to the budget month (the month the Spend tile shows), for its other currencies."""
    month = f.budget_month
    following = (month.replace(day=28) + timedelta(days=4)).replace(day=1)
    return dataclasses.replace(f, start=month, end=following, preset="", start_at=None, end_at=None)


def overview_tiles(f, fleet, waste, budget, coverage, alerts, findings, counts=None, other=None) -> list:
    """The tiles, each for the page's filters: ``counts`` is gpu_counts(), ``other`` the budget month's
    spend in other currencies (shown beside the USD spend, never added)."""
    q = f.search()
    month = "this month" if getattr(f, "budget_month_is_current", True) else f"in {f.budget_month:%B %Y}"

    def tile(key, title, value, detail, page, tone="", hint=""):
        return c.tile(title, value, detail, f"/{page}{q}", ids.part(PAGE, f"tile-{key}"), tone, hint)

    n = counts.iloc[0] if counts is not None and not counts.empty else None
    if fleet.empty or n is None or not n["gpus"]:
        gpus = tile("gpus", "GPUs", "0", "no GPU-hours match these filters", "utilization", "muted")
        util = tile("utilization", "Fleet utilization", "–", "no GPU-hours match these filters", "utilization", "muted")
    else:
        per_env = fleet.groupby("environment")["gpus"].sum()
        entities, mig = int(n["gpu_entities"]), int(n["mig_instances"])
        gpus = tile("gpus", "GPUs", f"{int(n['gpus']):,}",
                    f"{entities:,} GPU entities incl. {mig:,} MIG instances · "
                    + " · ".join(f"{e} {v}" for e, v in per_env.items()), "utilization",
                    hint="GPUs: physical GPUs (host, GPU UUID) seen in the range. GPU entities: what is measured "
                         "and charged, a whole GPU or one MIG instance of it.")
        pct = 100 * fleet["total_utilized_gpu_hours"].sum() / max(fleet["total_gpu_hours"].sum(), 1e-9)
        util = tile("utilization", "Fleet utilization", f"{pct:.1f} %",
                    f"of {fleet['total_gpu_hours'].sum():,.0f} GPU-hours, time-weighted", "utilization",
                    "bad" if pct < 30 else "")
    idle_tile = waste_tile(tile, waste, month)
    if budget.empty:
        spend = tile("spend", f"Spend {month}", c.other_money(other) or "–",
                     f"no USD spend recorded {month}", "spend", "muted")
    else:
        over = [c.short(t, 40) for t in budget[budget["forecast_over_budget"].astype(bool)]["team"]]
        over = over[:5] + ([f"{len(over) - 5} more"] if len(over) > 5 else [])
        spend = tile("spend", f"Spend {month}", c.money_with(budget["spend_mtd_usd"].sum(), other),
                     f"budget {c.money(budget['budget_usd'].fillna(0).sum())} · forecast "
                     f"{c.money(budget['forecast_usd'].sum())}" + (f" · over: {', '.join(over)}" if over else ""),
                     "spend", "bad" if over else "",
                     hint="USD; spend billed in another currency is shown beside it in that currency, never converted.")
    cov = coverage["coverage_pct"].iloc[0] if not coverage.empty else None
    # coverage is the share of spend no team claimed: a team filter cannot narrow it (unallocated has no team)
    cov_tile = tile("coverage", "Allocation coverage", "–" if cov is None or cov != cov else f"{cov:.1f} %",
                    "of spend attributed to a team" + ("" if coverage.empty else
                                                      f" · {c.money(coverage['total_usd'].iloc[0] - coverage['allocated_usd'].iloc[0])} unallocated")
                    + (" · all teams (the team filter does not apply)" if f.teams else ""),
                    "spend", "bad" if cov is not None and cov == cov and cov < 90 else "")
    firing = int(alerts.loc[alerts["state"] == "firing", "alerts"].sum()) if not alerts.empty else 0
    pending = int(alerts.loc[alerts["state"] == "pending", "alerts"].sum()) if not alerts.empty else 0
    alerts_tile = tile("alerts", "Firing alerts", str(firing), f"{pending} pending · now", "alerts",
                       "bad" if firing else "", hint="Alert state now (not over the time range), for the "
                                                     "environment and team filters.")
    critical = int((findings["severity"] == "critical").sum()) if not findings.empty else 0
    findings_tile = tile("findings", "Open compliance findings", str(len(findings)), f"{critical} critical",
                         "compliance", "bad" if critical else "")
    return [gpus, util, idle_tile, spend, cov_tile, alerts_tile, findings_tile]


def waste_tile(tile, waste, month: str = "this month"):
    """The budget month's waste in money and its parts (DESIGN.md "Waste")."""
    w = waste.iloc[0] if not waste.empty else None
    if w is None or not (w["spend_usd"] > 0):
        return tile("idle", f"Waste {month}", "–", f"no GPU cost recorded {month}", "idle", "muted")
    efficiency = 100 * (1 - w["waste_usd"] / w["spend_usd"])
    detail = (f"idle {c.money(w['idle_allocated_usd'] + w['idle_unallocated_usd'])} (allocated "
              f"{c.money(w['idle_allocated_usd'])} · unallocated {c.money(w['idle_unallocated_usd'])}) · unused "
              f"{c.money(w['unused_usd'])} · efficiency {efficiency:.1f} % of {c.money(w['spend_usd'])} · "
              f"no data {c.money(w['no_data_usd'])}")
    return tile("idle", f"Waste {month}", c.money(w["waste_usd"]), detail, "idle", "bad" if w["waste_usd"] > 0 else "")


c.register_csv(PAGE, {"fleet": queries.fleet})
