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
from dash import ALL, Dash, Input, Output, State, dcc, html, no_update

from dashboard import focus, ids, state
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
        queue_burst_wait_hours=getattr(analytics, "queue_burst_wait_hours", 1.0), clock=clock)
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


def shell():
    return html.Div(className="shell", children=[
        dcc.Location(id=ids.URL, refresh="callback-nav"),
        html.Header(className="top", children=[
            dcc.Link("gpuledger", href="/", className="brand"),
            html.Nav(id=ids.NAV, className="nav"),
            html.Span(id=ids.SIGNED_IN, className="signed-in"),
        ]),
        html.Main(dash.page_container),
    ])


def _register_shell_callbacks(app: Dash) -> None:
    @app.callback(Output(ids.NAV, "children"), Output(ids.SIGNED_IN, "children"),
                  Input(ids.URL, "pathname"), Input(ids.URL, "search"))
    def nav(pathname, search):
        f = state.filters_from_url(_query(search))
        links = [dcc.Link(page["name"], href=page["relative_path"] + f.search(), id=f"nav-{page['module'].split('.')[-1]}",
                          className="active" if page["path"] == (pathname or "/") else "")
                 for page in sorted(dash.page_registry.values(), key=lambda p: p.get("order", 99))]
        user = current_user()
        return links, (f"signed in as {user}" if user else "")

    @app.callback(Output(ids.URL, "search"),
                  Input(ids.filter_control("range", ALL), "value"),
                  Input(ids.filter_control("env", ALL), "value"),
                  Input(ids.filter_control("team", ALL), "value"),
                  State(ids.URL, "search"), prevent_initial_call=True)
    def filters_to_url(ranges, envs, teams, search):
        """The filter bar writes the URL; the page then re-renders from it (so links reproduce views).
        A page's own parameters (the Idle & waste page's focus) stay in it."""
        if not ranges:
            return no_update
        query = _query(search)
        if ranges[0] != "custom":
            query = {k: v for k, v in query.items() if k not in ("from", "to")}
            query["range"] = ranges[0]
        query["env"], query["team"] = list(envs[0] or []), list(teams[0] or [])
        new = state.filters_from_url(query)
        if new == state.filters_from_url(_query(search)):
            return no_update
        own = {k: v for k, v in query.items() if k in focus.PARAMS}
        return "?" + urlencode({**new.query(), **own}, doseq=True)


def _query(search: str | None) -> dict:
    parsed = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    return {k: v[0] if len(v) == 1 else v for k, v in parsed.items()}

