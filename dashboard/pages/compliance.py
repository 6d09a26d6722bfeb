"""Compliance: open findings by policy with their evidence rows, and the runtime version matrix."""
from __future__ import annotations

import json

import dash
import pandas as pd
from dash import Input, Output, callback, html

from dashboard import components as c
from dashboard import figures, ids, queries, state

PAGE = "compliance"
dash.register_page(__name__, path="/compliance", name="Compliance", title="Compliance · gpuledger", order=5)
EVIDENCE_ROWS = 20
FINDINGS_SHOWN = 100


def layout(**query):
    f = state.filters_from_url(query)
    return c.page(PAGE, "Compliance", f, [
        c.card(PAGE, "by-policy", "Open findings by policy", wide=False),
        c.card(PAGE, "findings", "Findings and their evidence"),
        c.card(PAGE, "runtime", "Runtime versions across pools and environments",
               note="GPUs per driver / CUDA version seen in the range; a pool with more than one version is drifting."),
    ])


@callback(Output(ids.part(PAGE, "by-policy"), "children"), Output(ids.part(PAGE, "findings"), "children"),
          Output(ids.part(PAGE, "runtime"), "children"), Input(ids.filters(PAGE), "data"))
@state.shared()
def render(data):
    f, store = state.filters_from_data(data), state.get().store
    findings = queries.findings(store, f)
    runtime = queries.runtime_matrix(store, f)
    details = [finding(row) for row in findings.head(FINDINGS_SHOWN).to_dict("records")] if not findings.empty \
        else c.empty("compliance_findings", f, "open findings")
    if len(findings) > FINDINGS_SHOWN:
        details.append(html.P(f"{FINDINGS_SHOWN} of {len(findings)} findings shown, worst first; the CSV has them all.",
                              className="more"))
    return (c.chart(findings, "compliance_findings", f, figures.findings_by_policy, "open findings"),
            details, matrix(runtime, f))


def finding(row) -> html.Details:
    head = html.Summary([html.Span(row["severity"], className=f"badge {row['severity']}"),
                         html.Span(row["policy"], className="policy"), html.Span(row["summary"]),
                         html.Span(c.money(row["cost_usd"]) if row["cost_usd"] else "", className="cost")])
    return html.Details(className="finding", children=[head, html.Div(className="evidence",
                                                                      children=evidence(row["evidence"]))])


def evidence(text: str):
    """The finding's evidence rows (a JSON array of objects) as a table."""
    try:
        rows = [r for r in json.loads(text or "[]") if isinstance(r, dict)]
    except (ValueError, TypeError):
        rows = []
    if not rows:
        return html.P("no evidence rows recorded")
    columns = list(dict.fromkeys(k for r in rows for k in r))
    body = [html.Tr([html.Td(c.fmt(r.get(k))) for k in columns]) for r in rows[:EVIDENCE_ROWS]]
    more = html.P(f"{EVIDENCE_ROWS} of {len(rows)} evidence rows shown", className="more") \
        if len(rows) > EVIDENCE_ROWS else None
    return [html.Table(className="data", children=[html.Thead(html.Tr([html.Th(k) for k in columns])),
                                                   html.Tbody(body)]), more]


def matrix(runtime: pd.DataFrame, f) -> html.Div:
    if runtime.empty:
        return c.empty("gpu_cost_day", f, "GPU-hours")
    runtime = runtime.assign(version=runtime["driver_version"] + " / CUDA " + runtime["cuda_version"],
                             row=runtime["environment"] + " · " + runtime["pool"])
    grid = runtime.pivot_table(index="row", columns="version", values="gpus", aggfunc="sum")
    versions = list(grid.columns)
    body = []
    for row, values in grid.iterrows():
        drift = values.notna().sum() > 1
        body.append(html.Tr([html.Th(row)] + [html.Td("" if pd.isna(v) else int(v), className="num drift" if drift and
                                                      not pd.isna(v) else "num") for v in values],
                            className="drifting" if drift else None))
    return html.Table(className="data matrix", children=[
        html.Thead(html.Tr([html.Th("environment · pool")] + [html.Th(v) for v in versions])), html.Tbody(body)])


c.register_csv(PAGE, {"by-policy": queries.findings, "findings": queries.findings, "runtime": queries.runtime_matrix})
