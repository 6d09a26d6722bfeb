"""One GPU or one MIG slice: ``/gpu?gpu_uuid=GPU-…[&mig_instance=3]`` plus the filter bar's query.

Its panels share the filters' time window as their x axis: utilization (GPU, memory controller),
framebuffer, power and energy, temperature, SM and memory clocks, throttle reasons, XID and ECC
events, who held it and its idle windows, and its cost per GPU-hour; the facts card names it, its
runtime (driver, CUDA, image) and its cost in the window. Without ``gpu_uuid`` the page lists the
costliest GPUs of the filters with a search box, each a link here. The environment and team
filters narrow that list only: a GPU named in the URL is shown whoever held it.

``mig_instance`` empty is the whole GPU; a GPU in MIG mode reports per instance, so its page
links to each instance. The parameters reach SQL only as bound parameters (dashboard/queries.py).
"""
from __future__ import annotations

from urllib.parse import urlencode

import dash
from dash import Input, Output, State, callback, dcc, html

from dashboard import components as c
from dashboard import figures, ids, queries, state
from dashboard.filters import MAX_VALUE, Filters
from dashboard.focus import url_value

PAGE = "gpu"
dash.register_page(__name__, path="/gpu", name="GPUs", title="GPU · gpuledger", order=8)
PANELS = (("utilization", "Utilization", "Time-weighted; gaps are time without data (never zero)."),
          ("memory", "Framebuffer", "Memory used (time-weighted average) and total, GiB."),
          ("power", "Power and energy", "Average power per interval (W) and the energy used since the window's "
                                        "start (kWh)."),
          ("temperature", "Temperature", "The highest reading per interval, °C."),
          ("clocks", "SM and memory clocks", f"From the raw samples (no rollup keeps clocks): shown for windows "
                                             f"of up to {queries.GPU_CLOCK_DAYS} days."),
          ("throttle", "Throttle reasons", "NVML clocks-event reasons active in each interval."),
          ("events", "XID and ECC events", "XID events per interval and the volatile ECC error counters."),
          ("timeline", "Owners and idle windows", "Who held it (team, user, job and pod as labelled on its samples) "
                                                  "and its idle windows."),
          ("cost", "Cost per GPU-hour", "From the GPU-hour costs: cost ÷ covered GPU-hours per interval."))
TOP_COLUMNS = {"host": "host", "gpu_uuid": "GPU", "mig_instance": "MIG", "last_environment": "environment",
               "last_pool": "pool", "last_model": "model", "range_gpu_hours": "GPU-hours",
               "utilization_pct": "utilization %", "range_cost_usd": "cost", "usd_per_gpu_hour": "$ per GPU-hour"}


def gpu_href(gpu_uuid: str, mig_instance: str, f: Filters) -> str:
    """The link to a GPU entity's page with the filters (other pages link the same way)."""
    own = {"gpu_uuid": gpu_uuid, **({"mig_instance": mig_instance} if mig_instance else {})}
    return "/gpu?" + urlencode({**own, **f.query()}, doseq=True)


def layout(gpu_uuid="", mig_instance="", **query):
    f, notes = state.filters_from_url(query), []
    gpu, mig = url_value(gpu_uuid, "gpu_uuid", notes), url_value(mig_instance, "mig_instance", notes)
    if not gpu:
        return c.page(PAGE, "GPUs", f, [
            html.Div(className="control", children=[
                html.Label("Find a GPU", htmlFor=ids.GPU_SEARCH),
                dcc.Input(id=ids.GPU_SEARCH, type="search", debounce=True, maxLength=MAX_VALUE,
                          placeholder="host, GPU UUID, model or pool")]),
            c.card(PAGE, "top", "GPUs by cost", note=f"The {queries.GPU_TOP} costliest GPUs and MIG slices in the time "
                   "range (matching the search); open one for its hardware panels. The CSV has every GPU of the filters."),
            *unused("panels")],
            lead="Pick a GPU to see its utilization, memory, power, clocks, events, owners and cost.", notes=tuple(notes))
    store = state.get().store
    info = queries.gpu_info(store, f, gpu, mig)
    if info.empty or not info["entity_seen"].iloc[0]:
        return c.page(PAGE, f"GPU {gpu}" + (f" · MIG {mig}" if mig else ""), f,
                      [unknown(gpu, mig, info, f), *unused("panels"), *unused("list")], notes=tuple(notes))
    row = info.iloc[0]
    entity = {"host": str(row["host"]), "gpu_uuid": gpu, "mig_instance": mig}
    title = " · ".join(p for p in (entity["host"], gpu, str(row["model"]), f"MIG {mig}" if mig else "") if p)
    # the MIG profile (from the runtime query, which the callback runs beside the panels' queries)
    return c.page(PAGE, [title, html.Span(id=ids.GPU_PROFILE)], f, [
        dcc.Store(id=ids.GPU_ENTITY, data=entity),
        c.card(PAGE, "facts", "This GPU" if not mig else "This MIG slice", csv=False,
               note="Where it is and what it ran, and what it cost in the time range."),
        *[c.card(PAGE, name, head, csv=False, note=note) for name, head, note in PANELS],
        *unused("list"),
    ], notes=tuple(notes))


def unused(what: str) -> list:
    """Hidden stand-ins for the other layout's components: Dash checks every callback against the
    page's layout without a GPU, and a callback fires only where its inputs exist, so both layouts
    hold every id (the callbacks return nothing for the layout they do not belong to)."""
    if what == "panels":
        return [dcc.Store(id=ids.GPU_ENTITY, data=None), html.Span(id=ids.GPU_PROFILE, hidden=True),
                *[html.Div(id=ids.part(PAGE, name), hidden=True) for name in ("facts", *(p[0] for p in PANELS))]]
    return [dcc.Input(id=ids.GPU_SEARCH, type="hidden", value=""), html.Div(id=ids.part(PAGE, "top"), hidden=True)]


def unknown(gpu: str, mig: str, info, f: Filters) -> html.Div:
    """The message for a GPU (or MIG instance of it) the store has never seen."""
    if info.empty:
        return html.Div(id=ids.GPU_MESSAGE, className="empty no-match", children=[
            f"No GPU {gpu} in the store: check the link's gpu_uuid, or wait for its samples to be derived. ",
            dcc.Link("List the GPUs", href="/gpu" + f.search())])
    instances = [m for m in str(info["mig_instances"].iloc[0]).split(",") if m]
    what = f"MIG instance {mig} of GPU {gpu}" if mig else f"whole-GPU data for {gpu} (it reports per MIG instance)"
    return html.Div(id=ids.GPU_MESSAGE, className="empty no-match", children=[
        f"No {what} in the store. ",
        *([html.Span("Its MIG instances: "),
           *[x for m in instances for x in (dcc.Link(f"MIG {m}", href=gpu_href(gpu, m, f)), " ")]] if instances else
          [dcc.Link("The whole GPU", href=gpu_href(gpu, "", f))])])


@callback(Output(ids.part(PAGE, "top"), "children"), Input(ids.filters(PAGE), "data"), Input(ids.GPU_SEARCH, "value"),
          State(ids.GPU_ENTITY, "data"))
@state.shared()
def render_top(data, search, entity):
    if entity:                                        # a GPU is shown: no list
        return None
    f = state.filters_from_data(data)
    search = search if isinstance(search, str) else ""
    df = queries.gpu_top(state.get().store, f, search.strip())
    if df.empty:
        return c.empty("gpu_cost_day", f, f"GPUs matching {search.strip()!r}" if search.strip() else "GPUs")
    rows = [html.Tr([html.Td(dcc.Link(r["host"], href=gpu_href(r["gpu_uuid"], r["mig_instance"], f))),
                     html.Td(dcc.Link(r["gpu_uuid"], href=gpu_href(r["gpu_uuid"], r["mig_instance"], f))),
                     *[html.Td(c.fmt(r[k]), className="num" if k in NUMBERS else None) for k in list(TOP_COLUMNS)[2:]]])
            for r in df.to_dict("records")]
    total = int(df["matches"].iloc[0])
    return html.Div([html.Table([html.Thead(html.Tr([html.Th(h) for h in TOP_COLUMNS.values()])), html.Tbody(rows)],
                                className="data"),
                     html.P(f"{len(df)} of {total:,} shown; search to narrow.", className="more") if total > len(df) else None])


NUMBERS = {"range_gpu_hours", "utilization_pct", "range_cost_usd", "usd_per_gpu_hour"}


@callback(Output(ids.GPU_PROFILE, "children"),
          *[Output(ids.part(PAGE, name), "children") for name in ("facts", *(p[0] for p in PANELS))],
          Input(ids.filters(PAGE), "data"), Input(ids.GPU_ENTITY, "data"))
@state.shared()
def render(data, entity):
    f, store = state.filters_from_data(data), state.get().store
    if not isinstance(entity, dict) or not all(isinstance(entity.get(k), str) for k in ("host", "gpu_uuid", "mig_instance")):
        return (None,) * (len(PANELS) + 2)
    series, cost, windows, clock_rows = fetch(store, f, entity)
    owners = queries.gpu_owner_runs(series, queries.gpu_series_bucket_s(f))
    runtime = queries.gpu_runtime(series)
    profile = runtime["mig_profile"] if entity["mig_instance"] else ""
    source = "gpu_hour"

    def panel(build, df=series, what="hourly rollups of this GPU"):
        return c.chart(df, source, f, lambda d: build(d, f), what)
    if queries.gpu_clocks_shown(f):
        clocks = panel(figures.gpu_clocks, clock_rows, "samples with clocks of this GPU")
    else:
        clocks = html.P(f"Clocks are kept in the raw samples only: pick a window of up to {queries.GPU_CLOCK_DAYS} "
                        "days to see them.", className="empty no-match")
    throttled = not series.empty and (series["throttle_reasons"].fillna(0) > 0).any()
    timeline = c.chart(owners if not owners.empty else windows, "gpu_hour", f,
                       lambda _: figures.gpu_timeline(owners, windows, f), "owners or idle windows of this GPU")
    return (f" ({profile})" if profile else None, facts(store, f, entity, series, cost, runtime),
            panel(figures.gpu_utilization), panel(figures.gpu_memory), panel(figures.gpu_power),
            panel(figures.gpu_temperature), clocks,
            panel(figures.gpu_throttle) if throttled or series.empty else
            html.P("No throttle reason was active in the time range.", className="empty no-match"),
            [events_summary(series), panel(figures.gpu_events)] if not series.empty else panel(figures.gpu_events),
            timeline, c.chart(cost, "gpu_cost_hour", f, lambda d: figures.gpu_cost(d, f), "GPU-hour costs of this GPU"))


def fetch(store, f: Filters, entity: dict) -> list:
    """The panels' queries, run side by side on the reader's pool of handles (each reads one GPU
    over many daily partitions; together they are most of the page's time)."""
    work = [queries.gpu_series, queries.gpu_cost, queries.gpu_idle_windows, queries.gpu_clocks]
    # with the colour table the timeline reads (cached per data version)
    return queries.side_by_side(figures.known_names, *[lambda fn=fn: fn(store, f, entity) for fn in work])[1:]


def facts(store, f: Filters, entity: dict, series, cost, runtime) -> html.Dl:
    """Where the GPU is, what it runs, and its cost in the window."""
    info = queries.gpu_info(store, f, entity["gpu_uuid"], entity["mig_instance"]).iloc[0]
    usd = float(cost["bucket_usd"].sum()) if not cost.empty else 0.0
    hours = float(cost["bucket_gpu_hours"].sum()) if not cost.empty else 0.0
    estimated = not cost.empty and (cost["estimated"].fillna(0) > 0).any()
    kwh = float(series["energy_kwh"].sum()) if not series.empty else 0.0
    instances = [m for m in str(info["mig_instances"]).split(",") if m]
    mig = ""
    if entity["mig_instance"]:
        mig = f"instance {entity['mig_instance']}" + (f" ({runtime['mig_profile']})" if runtime["mig_profile"] else "")
    pairs = [("GPU", entity["gpu_uuid"]), ("host", entity["host"]), ("model", info["model"]),
             ("pool", f"{info['environment']} · {info['pool']} · {info['region']}"),
             ("instance", " ".join(str(v) for v in (info["instance_type"], info["instance_id"]) if v)),
             ("MIG", mig or ("none (the whole GPU)" if not instances else None)),
             ("driver", _versions(runtime, "driver")), ("CUDA", _versions(runtime, "cuda")),
             ("image", _versions(runtime, "image")),
             ("cost per hour", f"${usd / hours:,.2f}/h" if hours else "–"),
             ("cost in the range", f"{c.money(usd)} for {hours:,.1f} GPU-hours" + (" (partly a list-price estimate)"
                                                                                   if estimated else "")),
             ("energy in the range", f"{kwh:,.2f} kWh"),
             ("seen", f"{info['first_day']:%Y-%m-%d} to {info['last_day']:%Y-%m-%d}")]
    out = [x for k, v in pairs if v for x in (html.Dt(k), html.Dd(str(v), id=f"gpu-fact-{k.replace(' ', '-')}"))]
    if instances and not entity["mig_instance"]:
        out += [html.Dt("MIG instances"), html.Dd([x for m in instances for x in
                                                   (dcc.Link(m, href=gpu_href(entity["gpu_uuid"], m, f)), " ")])]
    elif entity["mig_instance"]:
        out += [html.Dt("the whole GPU"), html.Dd(dcc.Link(entity["gpu_uuid"], href=gpu_href(entity["gpu_uuid"], "", f)))]
    return html.Dl(className="facts", children=out)


def _versions(runtime: dict, key: str) -> str:
    """The version last seen, and the others seen in the window."""
    if not runtime[key]:
        return ""
    others = [v for v in runtime[f"{key}s"].split(", ") if v and v != runtime[key]]
    return runtime[key] + (f" (also {', '.join(others)} in the range)" if others else "")


def events_summary(series) -> html.P:
    xids = int(series["xid_count"].sum())
    last = series["xid_last"].dropna()
    corrected, uncorrected = series["ecc_corrected"].max(), series["ecc_uncorrected"].max()
    ecc = "no ECC counters reported" if corrected != corrected and uncorrected != uncorrected else \
        f"ECC errors (volatile, highest): {_count(corrected)} corrected, {_count(uncorrected)} uncorrected"
    return html.P(id=ids.part(PAGE, "events-summary"), className="card-note",
                  children=f"{xids:,} XID events" + (f" (last XID {int(last.iloc[-1])})" if len(last) else "") + f"; {ecc}.")


def _count(value) -> str:
    return "–" if value != value else f"{value:,.0f}"


c.register_csv(PAGE, {"top": lambda store, f: queries.gpu_top(store, f, limit=100_000)})
