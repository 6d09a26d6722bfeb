"""Alerts: firing, pending and resolved alerts (value and unit, active since, owner, where each was
delivered, silenced or not), their history, and silences (created and expired here through
alerts.silences, like ``gpuledger alerts silence``; a new one previews the firing alerts it would
match, with the engine's own matcher code, before it is saved)."""
from __future__ import annotations

import time

import dash
import pandas as pd
from dash import Input, Output, State, callback, ctx, dcc, html, no_update

from alerts.matchers import matches_all
from alerts.silences import create_silence, expire_silence, list_silences, parse_matchers, silenced_by
from base.errors import SilenceError
from dashboard import components as c
from dashboard import drill, ids, queries, state
from dashboard.auth import current_user
from dashboard.figures import short
from dashboard.reader import RECENT_S

PAGE = "alerts"
dash.register_page(__name__, path="/alerts", name="Alerts", title="Alerts · gpuledger", order=6)
# {column: header} of the alert tables; each cell is built by CELLS (the first two stay severity, alert)
ALERT_COLUMNS = {"severity": "severity", "rule": "alert", "status": "status", "value": "value", "unit": "unit",
                 "active_since": "active since", "owner": "owner", "gpu": "GPU", "delivered": "delivered",
                 "summary": "summary"}
RESOLVED_COLUMNS = {**{k: v for k, v in ALERT_COLUMNS.items() if k != "summary"}, "resolved_at": "resolved",
                    "summary": "summary"}
HISTORY_COLUMNS = {"ts": "time", "rule": "alert", "team": "team", "from_state": "from", "to_state": "to",
                   "severity": "severity", "summary": "summary"}
SILENCE_COLUMNS = {"id": "id", "state": "state", "matchers": "matchers", "starts_at": "starts", "ends_at": "ends",
                   "created_by": "by", "comment": "comment"}
DURATIONS = {"1h": 3600, "2h": 7200, "8h": 28800, "1d": 86400, "7d": 604800}
# the deliveries column of sql/queries/alerts.sql: one tuple per channel
DELIVERY = ("channel", "kind", "status", "attempts", "notified_at", "delivered_at", "next_attempt_at", "last_error",
            "status_code", "error", "tried_at")


def layout(**query):
    f = state.filters_from_url(query)
    return c.page(PAGE, "Alerts", f, [
        dcc.Store(id=ids.SILENCES_CHANGED, data=0),
        c.card(PAGE, "firing", "Firing", note="Times are UTC. Silenced alerts stay listed, marked with who "
                                             "silenced them and until when."),
        c.card(PAGE, "pending", "Pending"),
        c.card(PAGE, "resolved", "Resolved"),
        c.card(PAGE, "history", "History", note="State changes in the time range, newest first."),
        html.Section(className="card wide", children=[
            html.Div(className="card-head", children=[html.H2("Silences")]),
            html.Div(className="silence-form", children=[
                html.Label("Matchers (one per line: team=vision, alertname=gpu_idle_window, host=~dgx-.*)"),
                dcc.Textarea(id=ids.SILENCE_MATCHERS, placeholder="team=data-science", rows=2),
                html.Div(id=ids.SILENCE_PREVIEW, className="alerts-preview"),
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
          Input(ids.filters(PAGE), "data"), Input(ids.SILENCES_CHANGED, "data"))
@state.shared(max_age_s=RECENT_S)
def render(data, _changed):
    f, st = state.filters_from_data(data), state.get()
    current = queries.alerts(st.store, f)
    now = st.clock()
    silences = list_silences(st.store, now)

    def in_state(name, columns=ALERT_COLUMNS):
        part = current[current["state"] == name] if not current.empty else current
        return alert_table(part, columns, f, silences, now, f"{name} alerts")
    return (in_state("firing"), in_state("pending"), in_state("resolved", RESOLVED_COLUMNS),
            c.table(queries.alert_history(st.store, f), HISTORY_COLUMNS, "alert_events", f, "alert state changes"))


def alert_table(df: pd.DataFrame, columns: dict[str, str], f, silences, now, what: str, max_rows: int = 50):
    """The alerts of ``df`` as a compact table (long cells wrap), or the empty state."""
    if df.empty:
        return c.empty("alert_state", f, what)
    by_id = {s.id: s for s in silences}
    rows = []
    for r in df.head(max_rows).to_dict("records"):
        labels = dict(r["labels"] or {})
        sid = silenced_by(labels, silences, now)
        muted = by_id.get(sid) if sid else None
        cells = {"severity": html.Span(r["severity"], className=f"badge {r['severity']}"),
                 "rule": r["rule"], "status": _status(r["state"], muted), "value": r["value_text"] or c.fmt(r["value"]),
                 "unit": r["unit"], "active_since": c.fmt(r["active_since"]), "owner": _owner(f, r["team"], r["contact"]),
                 "gpu": _gpu(f, labels), "delivered": _delivered(r["deliveries"], muted),
                 "resolved_at": c.fmt(r["resolved_at"]), "summary": short(str(r["summary"] or ""), 400)}
        rows.append(html.Tr([html.Td(cells[k], className=f"alerts-{k.replace('_', '-')}") for k in columns],
                            className="alerts-silenced" if muted else None, **{"data-fingerprint": r["fingerprint"]}))
    more = html.P(f"{len(rows)} of {len(df)} rows shown; the CSV has them all.", className="more") \
        if len(df) > max_rows else None
    return html.Div([html.Table([html.Thead(html.Tr([html.Th(h, className=f"alerts-{k.replace('_', '-')}")
                                                     for k, h in columns.items()])),
                                 html.Tbody(rows)], className="data alerts-table"), more])


def _status(alert_state: str, silence) -> object:
    if silence is None:
        return alert_state
    return html.Span(className="alerts-silenced-by", title=f"silence {silence.id}: {silence.comment}", children=[
        f"{alert_state}, silenced by {silence.created_by} until {silence.ends_at:%Y-%m-%d %H:%M}"])


def _owner(f, team: str, contact: str) -> object:
    """The team (linked to its GPUs and idle windows) and the channel it is paged on ([[teams]] contact)."""
    if not team:
        return "–"
    parts = [dcc.Link(short(team, 40), href=drill.team_href(f, team), className="drill alerts-team")]
    if contact:
        parts += [html.Br(), html.Span(f"pages {short(contact, 40)}", className="alerts-pages")]
    return parts


def _gpu(f, labels: dict[str, str]) -> object:
    uuid = labels.get("gpu_uuid", "")
    if not uuid:
        return "–"
    mig = labels.get("mig_instance", "")
    text = (uuid[:12] + "…" if len(uuid) > 13 else uuid) + (f" MIG {mig}" if mig else "")
    return dcc.Link(text, href=drill.gpu_href(f, uuid, mig), title=uuid, className="drill alerts-gpu")


def delivery_lines(deliveries) -> list[str]:
    """One line per channel the alert's current activity was notified on: the newest notification's
    status (delivered when, queued with its next attempt, or failed) and the last error."""
    out = []
    for raw in deliveries if deliveries is not None else []:
        d = dict(zip(DELIVERY, raw))
        status, attempts = d["status"], int(d["attempts"] or 0)
        what = "resolved" if d["kind"] == "resolved" else ""
        if status == "delivered":
            text = f"delivered {_when(d['delivered_at'])}"
        elif status == "failed":
            text = f"failed after {attempts} attempt{'s' * (attempts != 1)}"
        else:
            text = f"queued, next try {_when(d['next_attempt_at'])}" + (f" ({attempts} tried)" if attempts else "")
        code = d["status_code"]
        error = d["last_error"] or (d["error"] if isinstance(d["error"], str) else "")
        if status != "delivered" and code is not None and not pd.isna(code) and int(code) \
                and f"HTTP {int(code)}" not in error:
            text += f", HTTP {int(code)}"
        if status != "delivered" and error:
            text += f": {short(error, 80)}"
        out.append(f"{d['channel']}: {what + ' ' if what else ''}{text}")
    return out


def _delivered(deliveries, silence) -> object:
    lines = delivery_lines(deliveries)
    if lines:
        return [html.Div(line, className="alerts-delivery") for line in lines]
    if silence is not None:
        return html.Span("not sent: silenced", className="alerts-not-sent")
    return html.Span("not sent", className="alerts-not-sent",
                     title="No notification names this alert: no rule channel, route, team contact or default "
                           "channel sends it anywhere, it is inhibited, or the next alerts round has not run yet.")


def _when(value) -> str:
    return "–" if value is None or pd.isna(value) else f"{pd.Timestamp(value):%m-%d %H:%M}"


def matcher_lines(text) -> list[str]:
    return [ln.strip() for ln in (text or "").splitlines() if ln.strip()]


@callback(Output(ids.SILENCE_PREVIEW, "children"), Input(ids.SILENCE_MATCHERS, "value"),
          Input(ids.SILENCES_CHANGED, "data"), State(ids.filters(PAGE), "data"))
def preview(text, _changed, data):
    """Which firing alerts (of every team, whatever the filters) the matchers typed so far would
    silence, matched as the engine matches them (alerts.silences.parse_matchers, alerts.matchers)."""
    lines = matcher_lines(text)
    if not lines:
        return html.P("Type matchers to see which firing alerts the silence would match.", className="card-note")
    try:
        matchers = parse_matchers(lines)
    except SilenceError as exc:
        return html.P(str(exc), className="note alerts-preview-error")
    st = state.get()
    current = queries.alerts(st.store, state.filters_from_data(data), all_teams=True)
    firing = current[current["state"] == "firing"] if not current.empty else current
    hits = [r for r in firing.to_dict("records") if matches_all(matchers, dict(r["labels"] or {}))]
    if not hits:
        return html.P(f"These matchers match none of the {len(firing)} firing alerts: the silence would hold "
                      "nothing back now. Check the label names and values (e.g. alertname=, team=).",
                      className="note alerts-preview-none")
    return [html.P(f"Would silence {len(hits)} of {len(firing)} firing alert{'s' * (len(firing) != 1)} "
                   "(all teams):", className="card-note"),
            html.Ul(id=ids.SILENCE_PREVIEW_LIST, children=[
                html.Li(f"{r['rule']} · {r['team'] or 'no team'} · {short(str(r['summary'] or ''), 120)}",
                        **{"data-fingerprint": r["fingerprint"]}) for r in hits[:50]])]


@callback(Output(ids.SILENCE_MESSAGE, "children"), Output(ids.part(PAGE, "silences"), "children"),
          Output(ids.SILENCE_EXPIRE_ID, "options"), Output(ids.SILENCES_CHANGED, "data"),
          Input(ids.filters(PAGE), "data"), Input(ids.SILENCE_CREATE, "n_clicks"), Input(ids.SILENCE_EXPIRE, "n_clicks"),
          State(ids.SILENCE_MATCHERS, "value"), State(ids.SILENCE_DURATION, "value"),
          State(ids.SILENCE_COMMENT, "value"), State(ids.SILENCE_EXPIRE_ID, "value"))
def silences(data, _create, _expire, matchers, duration, comment, expire_id):
    st = state.get()
    message, changed = "", no_update
    try:
        if ctx.triggered_id == ids.SILENCE_CREATE:
            made = create_silence(st.writer, matcher_lines(matchers), author=current_user("dashboard"),
                                  comment=comment or "", now=st.clock(), duration_s=DURATIONS.get(duration, 0))
            message = html.P(f"Silence {made.id} created until {made.ends_at:%Y-%m-%d %H:%M}Z.", className="ok")
            changed = time.time()
        elif ctx.triggered_id == ids.SILENCE_EXPIRE and expire_id:
            gone = expire_silence(st.writer, str(expire_id), now=st.clock(), author=current_user("dashboard"))
            message = html.P(f"Silence {gone.id} expired.", className="ok")
            changed = time.time()
    except SilenceError as exc:
        message = html.P(str(exc), className="error")
    table = queries.silences(st.store, st.clock())
    active = [] if table.empty else [{"label": f"{r['id']} ({r['matchers']})", "value": r["id"]}
                                     for _, r in table.iterrows() if r["state"] != "expired"]
    return (message, c.table(table, SILENCE_COLUMNS, "alert_silences", state.filters_from_data(data), "silences"),
            active, changed)


def _in_state(name):
    """The CSV behind a card of current alerts: those in state ``name``."""
    def load(store, f):
        current = queries.alerts(store, f)
        return current[current["state"] == name] if not current.empty else current
    return load


c.register_csv(PAGE, {"firing": _in_state("firing"), "pending": _in_state("pending"),
                      "resolved": _in_state("resolved"), "history": queries.alert_history})
