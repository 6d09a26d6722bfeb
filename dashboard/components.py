"""Building blocks every page uses: the filter bar, cards with a CSV button, tiles, tables, and
empty states that say why a chart is empty (nothing derived yet vs nothing matches the filters)."""
from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
from dash import ALL, Input, Output, State, callback, ctx, dcc, html, no_update

from dashboard import ids, queries, state
from dashboard.figures import short
from dashboard.filters import EARLIEST, LATEST, PRESET_LABELS, Filters

GRAPH_CONFIG = {"displaylogo": False, "responsive": True}


def page(name: str, title: str, f: Filters, body: list, lead: str = "", notes: tuple[str, ...] = ()) -> html.Div:
    """A page: its title, the filter bar, notes about ignored filter values (and the page's own
    ``notes`` about its own URL parameters), its body."""
    options = queries.filter_options(state.get().store)
    bounded = tuple(f"Only the {len(values)} {what} with the most spend of {seen} are listed; name another "
                    f"in the URL ({kind}=…)." for kind, what in (("env", "environments"), ("team", "teams"))
                    for values, seen in [options[kind]] if seen > len(values))
    return html.Div(className="page", id=f"page-{name}", children=[
        dcc.Store(id=ids.filters(name), data=f.to_data()),
        dcc.Download(id=ids.download(name)),
        html.Div(className="page-head", children=[html.H1(title), html.P(lead, className="lead") if lead else None]),
        filter_bar(name, f, options["env"][0], options["team"][0]),
        html.Div(id=ids.notes(name), className="notes",
                 children=[html.P(n, className="note") for n in (*f.notes, *notes, *bounded,
                                                                 queries.whole_days_note(f, name)) if n]),
        html.Div(className="page-body", children=body),
    ])


def filter_bar(page_name: str, f: Filters, envs: list[str], teams: list[str]) -> html.Div:
    """Time range (a preset, or "custom": the from/to days of the picker beside it), environments,
    teams, and the exact window in UTC. dashboard/app.py filters_to_url writes their values to the URL."""
    ranges = [{"label": label, "value": key} for key, label in PRESET_LABELS.items()]
    if not f.preset:
        ranges.append({"label": f"{f.start} to {f.end - timedelta(days=1)}", "value": "custom"})
    env_options = sorted(set(envs) | set(f.envs))
    team_options = sorted(set(teams) | set(f.teams))
    return html.Div(className="filter-bar", children=[
        _labelled("Time range", dcc.Dropdown(id=ids.filter_control("range", page_name), options=ranges,
                                             value=f.preset or "custom", clearable=False, searchable=False)),
        _labelled("From – to (UTC days)", dcc.DatePickerRange(
            id=ids.filter_control("dates", page_name), start_date=f.start.isoformat(),
            end_date=(f.end - timedelta(days=1)).isoformat(), min_date_allowed=EARLIEST.isoformat(),
            max_date_allowed=LATEST.isoformat(), minimum_nights=0, display_format="YYYY-MM-DD",
            first_day_of_week=1, clearable=False, className="dates")),
        _labelled("Environment", dcc.Dropdown(id=ids.filter_control("env", page_name), multi=True,
                                              options=[{"label": short(e), "value": e} for e in env_options],
                                              value=list(f.envs), placeholder="All environments")),
        _labelled("Team", dcc.Dropdown(id=ids.filter_control("team", page_name), multi=True,
                                       options=[{"label": short(t), "value": t} for t in team_options],
                                       value=list(f.teams), placeholder="All teams")),
        html.Div(f"{f.describe_window()}" + ("" if f.describe_window().endswith("UTC") else " (UTC)"),
                 id=ids.filter_control("window", page_name), className="filter window",
                 title="The window every card shows; all times are UTC"),
    ])


def _labelled(label: str, control) -> html.Div:
    return html.Div(className="filter", children=[html.Label(label), control])


def card(page_name: str, name: str, title: str, csv: bool = True, note: str = "", wide: bool = True) -> html.Section:
    """A titled card whose body (id ``ids.part(page, name)``) a callback fills."""
    head = [html.H2(title)]
    if csv:
        head.append(html.Button("CSV", id=ids.csv_button(page_name, name), className="csv", n_clicks=0,
                                title=f"Download the table behind '{title}' as CSV"))
    return html.Section(className="card wide" if wide else "card", children=[
        html.Div(className="card-head", children=head),
        html.P(note, className="card-note") if note else None,
        dcc.Loading(html.Div(id=ids.part(page_name, name), className="card-body"), type="dot", delay_show=300),
    ])


def empty(source: str, f: Filters, what: str = "") -> html.Div:
    """Why there is nothing to show: the source is empty, or the filters match nothing."""
    if not queries.has_data(state.get().store, source):
        text = (f"No data yet: there are no {queries.SOURCES[source]} in the store. They appear once samples "
                "and bills are loaded and derived (the scheduler of `gpuledger up`, or `gpuledger rollup`).")
        kind = "empty no-data"
    else:
        text = f"No {what or queries.SOURCES[source]} match {f.describe()}. Widen the time range or clear a filter."
        kind = "empty no-match"
    return html.Div(text, className=kind)


def chart(df: pd.DataFrame, source: str, f: Filters, build, what: str = ""):
    """A graph of ``df`` built by ``build(df)``, or the empty state."""
    if df.empty:
        return empty(source, f, what)
    return dcc.Graph(figure=build(df), config=GRAPH_CONFIG)


def chart_table(df: pd.DataFrame, source: str, f: Filters, build, columns: dict[str, str], what: str = "",
                max_rows: int = 50):
    """A graph and the table behind it, or one empty state for both (always a list)."""
    if df.empty:
        return [empty(source, f, what)]
    return [dcc.Graph(figure=build(df), config=GRAPH_CONFIG), table(df, columns, source, f, what, max_rows)]


def table(df: pd.DataFrame, columns: dict[str, str], source: str, f: Filters, what: str = "",
          max_rows: int = 50, class_name: str = "") -> html.Div:
    """An HTML table of ``columns`` ({column: header}) of ``df``, or the empty state."""
    if df.empty:
        return empty(source, f, what)
    shown = df.head(max_rows)
    head = html.Tr([html.Th(h) for h in columns.values()])
    # plain dicts per row: iterrows builds a Series per row, a few ms a table
    body = [html.Tr([html.Td(fmt(row[c]), className=_cell_class(row[c])) for c in columns],
                    className=str(row.get("row_class", "")) or None)
            for row in shown.to_dict("records")]
    more = html.P(f"{len(shown)} of {len(df)} rows shown; the CSV has them all.", className="more") \
        if len(df) > max_rows else None
    return html.Div([html.Table([html.Thead(head), html.Tbody(body)], className=f"data {class_name}".strip()), more])


def fmt(value) -> str:
    if value is None or value is pd.NaT or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return "–"
    if isinstance(value, (pd.Timestamp, datetime)):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return f"{value:,.2f}"
    return short(str(value), 240)


def _cell_class(value) -> str | None:
    return "num" if isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_)) else None


def money(value) -> str:
    """US dollars as a tile or note shows them: "$48,276", "$12.50", "–" when missing."""
    if value is None or value is pd.NA or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return "–"
    return f"${value:,.0f}" if abs(value) >= 100 else f"${value:,.2f}"


def other_money(other: pd.DataFrame) -> str:
    """Amounts in currencies other than USD (queries.other_currencies: currency, amount), each in its
    own currency: "EUR 1,234.00 + GBP 12.00"; "" when there are none. Never converted."""
    if other is None or other.empty:
        return ""
    return " + ".join(f"{short(str(r['currency']), 8)} {r['amount']:,.2f}" for r in other.to_dict("records")
                      if r["amount"] == r["amount"])


def money_with(value, other: pd.DataFrame | None = None) -> str:
    """A USD total with the other currencies' amounts beside it: "$48,276 + EUR 1,234.00"."""
    extra = other_money(other)
    return money(value) + (f" + {extra}" if extra else "")


def currency_note(other: pd.DataFrame) -> html.P | None:
    """The spend in other currencies, shown beside the USD figures (never converted, never dropped),
    or None if there is none."""
    if other.empty:
        return None
    parts = ", ".join(f"{short(str(r['currency']), 8)} {r['amount']:,.2f} ({r['rows']:,} row{'s' * (r['rows'] != 1)})"
                      for r in other.to_dict("records"))
    return html.P(f"Also spent in other currencies (shown in their own currency beside the USD totals; no "
                  f"exchange rates are applied, so the USD figures and charts do not include it): {parts}.",
                  className="note currency")


def tile(title: str, value: str, detail: str, href: str, tile_id: str, tone: str = "", hint: str = "") -> dcc.Link:
    """A tile: its title, one value, a line of detail; ``hint`` (what the value counts) as its tooltip."""
    return dcc.Link(href=href, id=tile_id, className=f"tile {tone}".strip(), title=hint or None, children=[
        html.Div(title, className="tile-title"), html.Div(value, className="tile-value"),
        html.Div(detail, className="tile-detail")])


def register_csv(page_name: str, sources: dict, context: str = "") -> None:
    """One callback per page: a card's CSV button downloads the table behind it.

    ``sources`` maps a card name to ``fn(store, filters) -> DataFrame`` (the same query the card shows),
    or to ``fn(store, filters, data)`` with ``context``, the id of another dcc.Store of the page whose
    data the cards also read (the Idle & waste page's focus).
    """
    @callback(Output(ids.download(page_name), "data"),
              Input(ids.csv_button(page_name, ALL), "n_clicks"),
              State(ids.filters(page_name), "data"), *([State(context, "data")] if context else []),
              prevent_initial_call=True)
    def download(clicks, data, *more):
        trigger = ctx.triggered_id
        if not trigger or not any(clicks) or trigger.get("name") not in sources:
            return no_update
        f = state.filters_from_data(data)
        df = sources[trigger["name"]](state.get().store, f, *more)
        name = f"gpuledger-{page_name}-{trigger['name']}-{f.start}-{f.end - timedelta(days=1)}.csv"
        return dcc.send_string(csv_text(df), name)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV that a spreadsheet opens as data (every download goes through here): a text
    cell starting with ``= + - @``, tab or carriage return (OWASP's CSV injection list) gets a
    leading ``'`` so it stays text; numeric columns are written as they are (-3.5 stays a number).
    Lines end in CRLF (RFC 4180), so a cell holding a lone CR or LF is quoted, never a new row."""
    def cell(value):
        return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value
    return df.apply(lambda column: column if pd.api.types.is_numeric_dtype(column) else column.map(cell)) \
        .to_csv(index=False, lineterminator="\r\n")
