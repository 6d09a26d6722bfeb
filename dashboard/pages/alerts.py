"""Alerts: firing, pending and resolved alerts, their history, and silences (created and expired
here through alerts.silences, like ``gpuledger alerts silence``)."""
from __future__ import annotations

import dash
from dash import Input, Output, State, callback, ctx, dcc, html

from alerts.silences import create_silence, expire_silence
from base.errors import SilenceError
from dashboard import components as c
from dashboard import ids, queries, state
from dashboard.auth import current_user

PAGE = "alerts"
dash.register_page(__name__, path="/alerts", name="Alerts", title="Alerts · gpuledger", order=6)
ALERT_COLUMNS = {"severity": "severity", "rule": "alert", "team": "team", "summary": "summary", "value": "value",
                 "active_since": "active since", "fired_at": "fired", "resolved_at": "resolved"}
HISTORY_COLUMNS = {"ts": "time", "rule": "alert", "team": "team", "from_state": "from", "to_state": "to",
                   "severity": "severity", "summary": "summary"}
SILENCE_COLUMNS = {"id": "id", "state": "state", "matchers": "matchers", "starts_at": "starts", "ends_at": "ends",
                   "created_by": "by", "comment": "comment"}
DURATIONS = {"1h": 3600, "2h": 7200, "8h": 28800, "1d": 86400, "7d": 604800}


def layout(**query):
    f = state.filters_from_url(query)
    return c.page(PAGE, "Alerts", f, [
        c.card(PAGE, "firing", "Firing"),
        c.card(PAGE, "pending", "Pending", wide=False),
        c.card(PAGE, "resolved", "Resolved", wide=False),
        c.card(PAGE, "history", "History", note="State changes in the time range, newest first."),
        html.Section(className="card wide", children=[
            html.Div(className="card-head", children=[html.H2("Silences")]),
            html.Div(className="silence-form", children=[
                html.Label("Matchers (one per line: team=vision, alertname=gpu_idle_window, host=~dgx-.*)"),
                dcc.Textarea(id=ids.SILENCE_MATCHERS, placeholder="team=data-science", rows=2),
                html.Div(className="row", children=[
                    html.Label("For"), dcc.Dropdown(id=ids.SILENCE_DURATION, clearable=False, value="2h",
                                                    options=[{"label": k, "value": k} for k in DURATIONS]),
                    dcc.Input(id=ids.SILENCE_COMMENT, placeholder="why (required)", type="text", maxLength=500,
                              debounce=False),
                    html.Button("Create silence", id=ids.SILENCE_CREATE, n_clicks=0)]),
                html.Div(className="row", children=[
                    html.Label("Expire"), dcc.Dropdown(id=ids.SILENCE_EXPIRE_ID, placeholder="an active silence"),
                    html.Button("Expire now", id=ids.SILENCE_EXPIRE, n_clicks=0)]),
                html.Div(id=ids.SILENCE_MESSAGE, className="message"),
            ]),
            html.Div(id=ids.part(PAGE, "silences"), className="card-body"),
        ]),
    ])


@callback(Output(ids.part(PAGE, "firing"), "children"), Output(ids.part(PAGE, "pending"), "children"),
          Output(ids.part(PAGE, "resolved"), "children"), Output(ids.part(PAGE, "history"), "children"),
          Input(ids.filters(PAGE), "data"))
def render(data):
    f, store = state.filters_from_data(data), state.get().store
    current = queries.alerts(store, f)

    def in_state(name):
        part = current[current["state"] == name] if not current.empty else current
        return c.table(part, ALERT_COLUMNS, "alert_state", f, f"{name} alerts")
    return (in_state("firing"), in_state("pending"), in_state("resolved"),
            c.table(queries.alert_history(store, f), HISTORY_COLUMNS, "alert_events", f, "alert state changes"))


@callback(Output(ids.SILENCE_MESSAGE, "children"), Output(ids.part(PAGE, "silences"), "children"),
          Output(ids.SILENCE_EXPIRE_ID, "options"),
          Input(ids.filters(PAGE), "data"), Input(ids.SILENCE_CREATE, "n_clicks"), Input(ids.SILENCE_EXPIRE, "n_clicks"),
          State(ids.SILENCE_MATCHERS, "value"), State(ids.SILENCE_DURATION, "value"),
          State(ids.SILENCE_COMMENT, "value"), State(ids.SILENCE_EXPIRE_ID, "value"))
def silences(data, _create, _expire, matchers, duration, comment, expire_id):
    st = state.get()
    message = ""
    try:
        if ctx.triggered_id == ids.SILENCE_CREATE:
            lines = [ln.strip() for ln in (matchers or "").splitlines() if ln.strip()]
            made = create_silence(st.writer, lines, author=current_user("dashboard"), comment=comment or "",
                                  now=st.clock(), duration_s=DURATIONS.get(duration, 0))
            message = html.P(f"Silence {made.id} created until {made.ends_at:%Y-%m-%d %H:%M}Z.", className="ok")
        elif ctx.triggered_id == ids.SILENCE_EXPIRE and expire_id:
            gone = expire_silence(st.writer, str(expire_id), now=st.clock(), author=current_user("dashboard"))
            message = html.P(f"Silence {gone.id} expired.", className="ok")
    except SilenceError as exc:
        message = html.P(str(exc), className="error")
    table = queries.silences(st.store, st.clock())
    active = [] if table.empty else [{"label": f"{r['id']} ({r['matchers']})", "value": r["id"]}
                                     for _, r in table.iterrows() if r["state"] != "expired"]
    return message, c.table(table, SILENCE_COLUMNS, "alert_silences", state.filters_from_data(data), "silences"), active


def _in_state(name):
    """The CSV behind a card of current alerts: those in state ``name``."""
    def load(store, f):
        current = queries.alerts(store, f)
        return current[current["state"] == name] if not current.empty else current
    return load


c.register_csv(PAGE, {"firing": _in_state("firing"), "pending": _in_state("pending"),
                      "resolved": _in_state("resolved"), "history": queries.alert_history})
