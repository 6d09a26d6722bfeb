"""The dashboard: a Dash multi-page app (``dash.page_registry``) on the platform's Flask server.

``mount(platform, config, store)`` is the one entry point: it builds the app on
``platform.web`` at ``/``, reads through a pool of read-only handles of ``store`` with a result
cache that every finished derivation empties (dashboard/reader.py) and puts the dashboard's
routes (never ``/healthz`` or the ingest endpoints) behind authentication unless ``auth=False``
(``--no-auth``, for the local demo). Pages live in ``dashboard/pages/``, one file each; their
``layout(**query)`` turns the URL's query string into filters.
"""
from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import dash
from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update

from dashboard import ids, state
from dashboard.auth import Authenticator, current_user, protect
from dashboard.config import DashboardConfig
from dashboard.reader import reader_for

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent


def mount(platform, config, store, *, auth: bool = True, clock=state.utc_now) -> Dash:
    """Attach the dashboard to ``platform.web``. ``config`` is gpuledger's Config (its
    ``dashboard`` and ``analytics`` sections are read) or a DashboardConfig."""
    cfg = config if isinstance(config, DashboardConfig) else getattr(config, "dashboard", None) or DashboardConfig()
    analytics = getattr(config, "analytics", None)
    server = platform.web
    server.extensions[state.KEY] = state.DashboardState(
        store=reader_for(store), writer=store, cfg=cfg,
        baseline_quantile=getattr(analytics, "baseline_quantile", 0.1),
        saturated_pct=getattr(analytics, "saturated_pct", 85.0),
        queue_burst_wait_hours=getattr(analytics, "queue_burst_wait_hours", 1.0), clock=clock,
        throughput=getattr(analytics, "throughput", None))
    before = set(server.view_functions)
    app = build_app(server)
    if auth and cfg.auth:
        protect(server, Authenticator(cfg), set(server.view_functions) - before)
    else:
        log.warning("dashboard: authentication is OFF (--no-auth); anyone who can reach the port can read it")
    if hasattr(platform, "add_part"):
        platform.add_part("dashboard", f"Dash pages at / ({'basic/trusted-header auth' if auth and cfg.auth else 'no auth'})")
    return app


def build_app(server) -> Dash:
    app = Dash("dashboard", server=server, url_base_pathname="/", use_pages=True,
               pages_folder=str(HERE / "pages"), assets_folder=str(HERE / "assets"),
               title="gpuledger", update_title=None, serve_locally=True)
    app.layout = shell
    _register_shell_callbacks(app)
    return app


REFRESH = {"1m": 60_000, "5m": 300_000}          # ?refresh=1m|5m: re-read the page's data that often
REFRESH_CHOICE = "gl-refresh"                     # the header's auto-refresh dropdown
REFRESH_TIMER = "gl-refresh-timer"                # its dcc.Interval
OWN_PARAMS = ("range", "from", "to", "env", "team", "refresh")   # what filters_to_url writes; others are kept


def shell():
    return html.Div(className="shell", children=[
        dcc.Location(id=ids.URL, refresh="callback-nav"),
        dcc.Interval(id=REFRESH_TIMER, interval=REFRESH["1m"], disabled=True, n_intervals=0),
        html.Header(className="top", children=[
            dcc.Link("gpuledger", href="/", className="brand"),
            html.Nav(id=ids.NAV, className="nav"),
            html.Span("Times in UTC", className="timezone", id="gl-timezone",
                      title="Every time and day on these pages is UTC"),
            html.Div(className="refresh", children=[
                html.Label("Auto-refresh", htmlFor=REFRESH_CHOICE),
                dcc.Dropdown(id=REFRESH_CHOICE, value="off", clearable=False, searchable=False,
                             options=[{"label": "off", "value": "off"}, {"label": "every minute", "value": "1m"},
                                      {"label": "every 5 minutes", "value": "5m"}]),
            ]),
            html.Span(id=ids.SIGNED_IN, className="signed-in"),
        ]),
        html.Main(dash.page_container),
    ])


def _register_shell_callbacks(app: Dash) -> None:
    @app.callback(Output(ids.NAV, "children"), Output(ids.SIGNED_IN, "children"),
                  Input(ids.URL, "pathname"), Input(ids.URL, "search"))
    def nav(pathname, search):
        query = _query(search)
        f = state.filters_from_url(query)
        every = refresh_of(query)
        keep = "?" + urlencode({**f.query(), **({"refresh": every} if every != "off" else {})}, doseq=True)
        links = [dcc.Link(page["name"], href=page["relative_path"] + keep, id=f"nav-{page['module'].split('.')[-1]}",
                          className="active" if page["path"] == (pathname or "/") else "")
                 for page in sorted(dash.page_registry.values(), key=lambda p: p.get("order", 99))]
        user = current_user()
        return links, (f"signed in as {user}" if user else "")

    @app.callback(Output(REFRESH_TIMER, "disabled"), Output(REFRESH_TIMER, "interval"), Output(REFRESH_CHOICE, "value"),
                  Input(ids.URL, "search"), State(REFRESH_CHOICE, "value"))
    def refresh_from_url(search, shown):
        """The URL's refresh=1m|5m starts the timer (anything else: off)."""
        every = refresh_of(_query(search))
        return every == "off", REFRESH.get(every, REFRESH["1m"]), every if every != shown else no_update

    for name in ids.PAGES:
        _register_refresh(app, name)

    @app.callback(Output(ids.URL, "search"),
                  Input(ids.filter_control("range", ALL), "value"),
                  Input(ids.filter_control("dates", ALL), "start_date"),
                  Input(ids.filter_control("dates", ALL), "end_date"),
                  Input(ids.filter_control("env", ALL), "value"),
                  Input(ids.filter_control("team", ALL), "value"),
                  Input(REFRESH_CHOICE, "value"),
                  State(ids.URL, "search"), prevent_initial_call=True)
    def filters_to_url(ranges, starts, ends, envs, teams, refresh, search):
        """The filter bar and the refresh choice write the URL; the page then re-renders from it (so
        links reproduce views). Every other parameter (a page's own: the Idle page's focus, the
        Utilization rows, ...) stays in it."""
        old = _query(search)
        query = dict(old)
        trigger = ctx.triggered_id
        if ranges:
            if isinstance(trigger, dict) and trigger.get("name") == "dates":
                if not (isinstance(starts[0], str) and isinstance(ends[0], str)):
                    return no_update                   # half a range picked: wait for the other day
                query = {k: v for k, v in query.items() if k != "range"}
                query["from"], query["to"] = starts[0][:10], ends[0][:10]
            elif ranges[0] != "custom":
                query = {k: v for k, v in query.items() if k not in ("from", "to")}
                query["range"] = ranges[0]
            query["env"], query["team"] = list(envs[0] or []), list(teams[0] or [])
        every = refresh if refresh in REFRESH else "off"
        new = state.filters_from_url(query)
        if new == state.filters_from_url(old) and every == refresh_of(old):
            return no_update
        own = {k: v for k, v in old.items() if k not in OWN_PARAMS}
        return "?" + urlencode({**new.query(), **own, **({"refresh": every} if every != "off" else {})}, doseq=True)


def _register_refresh(app: Dash, name: str) -> None:
    """The timer re-reads page ``name``'s data: it rewrites the page's filters store (re-read from the
    URL at the clock's time, so "Last 24 hours" moves on), which every card of the page listens to.
    Fires only while that page is shown (its store is in the layout)."""
    @app.callback(Output(ids.filters(name), "data"), Input(REFRESH_TIMER, "n_intervals"),
                  State(ids.URL, "search"), State(ids.URL, "pathname"), prevent_initial_call=True)
    def refresh(n, search, pathname):
        return {**state.filters_from_url(_query(search)).to_data(), "refreshed": n}


def refresh_of(query: dict) -> str:
    """The URL's refresh choice: "1m", "5m" or "off"."""
    value = query.get("refresh")
    value = value[0] if isinstance(value, list) and value else value
    return value if value in REFRESH else "off"


def _query(search: str | None) -> dict:
    parsed = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    return {k: v[0] if len(v) == 1 else v for k, v in parsed.items()}

