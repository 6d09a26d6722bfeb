"""Units and readability (issue 17, item 3) in headless Chromium on the demo fleet: every figure's
hover text and axes carry their unit and never "NaN"; a team keeps its colour across pages and
filters and every pool has its own; time axes span the filter window with the partial day marked;
the idle timeline's hover gives start – end and a length in h/min; the CLI summary's GPU counts are
the Overview's and SQL's."""
from __future__ import annotations

import re
from datetime import datetime, time, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from tests.dashboard.browser import open_page, part, text, wait

pytestmark = pytest.mark.usefixtures("no_console_errors")

FIGURES_JS = ("return [...document.querySelectorAll('.card-body .js-plotly-plot')].map(e => ({id: e.closest('.card-body').id,"
              " data: e.data, layout: e.layout}))")
# card -> the unit its numbers carry in hovers and on the value axis ("" for plain counts)
UNITS = {
    "overview": {"fleet": "GPUs"},
    "utilization": {"heatmap": "%", "distribution": "%"},
    "idle": {"waste": "$", "timeline": "$", "by-team": "$", "by-pool": "$"},
    "spend": {"by-team": "$", "trend": "$", "budget": "$", "unallocated": "$"},
    "placement": {"demand": " h", "rates": "$", "queues": " h"},
    "compliance": {"by-policy": "findings"},
}
PATHS = {"overview": "/", "utilization": "/utilization", "idle": "/idle", "spend": "/spend",
         "placement": "/placement", "compliance": "/compliance"}


def figures(driver, page: str) -> dict[str, dict]:
    """The page's drawn figures by card name, once every card with a chart in UNITS is drawn."""
    for name in UNITS[page]:
        part(driver, page, name, chart=True)
    out = {}
    for fig in driver.execute_script(FIGURES_JS):
        card = fig["id"].removeprefix(f"{page}-")
        out[card] = fig
    return out


def hover_texts(driver, page: str, card: str, trace: int, point) -> str:
    """The hover label plotly.js draws for ``point`` of ``trace`` in the card's graph (a heatmap:
    where the mouse rests in the middle of the plot)."""
    if isinstance(point, list):                 # Fx.hover draws no label on a heatmap: move the mouse there
        x, y = driver.execute_script("""
            const el = document.getElementById(arguments[0]).querySelector('.js-plotly-plot');
            const t = el.data[arguments[1]], fl = el._fullLayout;
            return [fl.xaxis.d2p(t.x[arguments[3]]), fl.yaxis.d2p(t.y[arguments[2]])];""",
                                     f"{page}-{card}", trace, *point)
        plot = driver.find_element(By.CSS_SELECTOR, f"#{page}-{card} .js-plotly-plot .nsewdrag")
        box = plot.rect
        ActionChains(driver).move_to_element_with_offset(plot, int(x - box["width"] / 2),
                                                         int(y - box["height"] / 2)).perform()
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f"#{page}-{card} .hoverlayer .hovertext"),
             f"no hover label on {page}-{card}", timeout=10)
        return " | ".join(h.get_attribute("textContent") for h in
                          driver.find_elements(By.CSS_SELECTOR, f"#{page}-{card} .hoverlayer .hovertext"))
    return driver.execute_script("""
        const el = document.getElementById(arguments[0]).querySelector('.js-plotly-plot');
        Plotly.Fx.hover(el, [{curveNumber: arguments[1], pointNumber: arguments[2]}]);
        const text = [...el.querySelectorAll('.hoverlayer .hovertext')].map(h => h.textContent).join(' | ');
        Plotly.Fx.unhover(el);
        return text;""", f"{page}-{card}", trace, point)


def first_point(trace: dict):
    """A point of ``trace`` with a value (for Plotly.Fx.hover), or None."""
    if trace["type"] == "heatmap":
        for i, row in enumerate(trace["z"]):
            for j, v in enumerate(row):
                if v is not None:
                    return [i, j]
        return None
    values = trace.get("x" if trace.get("orientation") == "h" else "y") or []
    return next((i for i, v in enumerate(values) if v is not None), None)


def axis_unit(layout: dict, axis: str) -> str:
    a = layout.get(axis, {})
    return f"{a.get('tickprefix', '')} {a.get('ticksuffix', '')} {(a.get('title') or {}).get('text', '')}"


@pytest.mark.parametrize("page", list(UNITS))
def test_every_figure_has_units_and_no_nan(site, browser, page):
    open_page(browser, site.url + PATHS[page], page)
    drawn = figures(browser, page)
    assert set(UNITS[page]) <= set(drawn), drawn.keys()
    for card, unit in UNITS[page].items():
        fig = drawn[card]
        value_axis = "xaxis" if any(t.get("orientation") == "h" for t in fig["data"]) else "yaxis"
        if unit in ("$", " h", "%") and fig["layout"].get(value_axis, {}).get("type") != "date":
            shown = axis_unit(fig["layout"], value_axis) if fig["data"][0]["type"] != "heatmap" else \
                fig["data"][0]["colorbar"].get("ticksuffix", "")
            assert unit.strip() in shown, (card, shown)
        hovered = 0
        for i, trace in enumerate(fig["data"]):
            template = trace.get("hovertemplate", "")
            assert template, f"{page}/{card} trace {i} has no hovertemplate"
            assert "NaN" not in template and unit.strip() in template + str(trace.get("customdata", "")), (card, template)
            point = first_point(trace)
            if point is None or trace["type"] == "box" or hovered >= 3:
                continue
            label = hover_texts(browser, page, card, i, point)
            assert label, f"no hover label for {page}/{card} trace {i}"
            assert "NaN" not in label and "undefined" not in label and unit.strip() in label, (card, label)
            hovered += 1
        assert hovered or all(t["type"] == "box" for t in fig["data"]), card


def test_idle_timeline_hover_gives_start_end_and_length(site, browser):
    open_page(browser, site.url + "/idle?range=7d", "idle")
    fig = figures(browser, "idle")["timeline"]
    trace = fig["data"][0]
    label = hover_texts(browser, "idle", "timeline", 0, 0)
    start = pd.Timestamp(trace["base"][0])
    end = start + pd.Timedelta(milliseconds=trace["x"][0])
    # the window exists as the hover says, checked against the table
    n, cost = site.store.rows("SELECT count(), sum(cost_usd) FROM idle_windows WHERE start = {s:DateTime64(3, 'UTC')} "
                              "AND end = {e:DateTime64(3, 'UTC')}", {"s": start.to_pydatetime(), "e": end.to_pydatetime()})[0]
    assert n >= 1
    minutes = round((end - start).total_seconds() / 60)
    length = f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"
    assert f"{start:%Y-%m-%d %H:%M:%S} UTC – {end:%Y-%m-%d %H:%M:%S} UTC" in label, label
    assert f"idle {length}" in label and " ms" not in label and "NaN" not in label, label
    if n == 1:
        assert f"${cost:,.2f}" in label, label


def trace_colors(fig: dict) -> dict[str, str]:
    out = {}
    for t in fig["data"]:
        color = (t.get("line") or {}).get("color") or (t.get("marker") or {}).get("color")
        out[t["name"]] = color
    return out


def test_a_team_keeps_its_colour_across_pages_and_filters(site, browser):
    teams = [t for (t,) in site.store.rows("SELECT DISTINCT team FROM team_spend_day WHERE team != 'unallocated' "
                                           "ORDER BY team")]
    open_page(browser, site.url + "/spend", "spend")
    trend = trace_colors(figures(browser, "spend")["trend"])
    assert set(teams) <= set(trend) and len(set(trend[t] for t in teams)) == len(teams), trend
    open_page(browser, site.url + "/placement", "placement")
    queues = trace_colors(figures(browser, "placement")["queues"])
    shared = set(queues) & set(teams)
    assert shared and all(queues[t] == trend[t] for t in shared), (queues, trend)
    team = sorted(shared)[-1]
    open_page(browser, site.url + f"/spend?range=7d&team={team}&env=onprem", "spend")
    narrowed = trace_colors(figures(browser, "spend")["trend"])
    assert list(narrowed) == [team] and narrowed[team] == trend[team]


def test_every_pool_has_its_own_colour(site, browser):
    pools, = site.store.rows("SELECT uniqExact(pool) FROM gpu_hour")[0]
    open_page(browser, site.url + "/?range=90d", "overview")
    fleet = trace_colors(figures(browser, "overview")["fleet"])
    assert pools >= 12 and len(fleet) == pools and len(set(fleet.values())) == pools, fleet


def ts(value: str) -> datetime:
    return pd.Timestamp(value).to_pydatetime()


def test_time_axes_span_the_filter_window_and_mark_the_partial_day(site, browser):
    today = datetime.now(timezone.utc).date()
    start, end = datetime.combine(today - timedelta(days=6), time()), datetime.combine(today + timedelta(days=1), time())
    open_page(browser, site.url + "/spend?range=7d", "spend")
    trend = figures(browser, "spend")["trend"]["layout"]
    assert [ts(v) for v in trend["xaxis"]["range"]] == [start, end]
    shade, = trend["shapes"]
    assert ts(shade["x0"]) == datetime.combine(today, time()) and ts(shade["x1"]) == end
    assert any("partial" in a["text"] for a in trend["annotations"])
    open_page(browser, site.url + "/idle?range=7d", "idle")
    assert [ts(v) for v in figures(browser, "idle")["timeline"]["layout"]["xaxis"]["range"]] == [start, end]
    # a past window: its days exactly, nothing partial
    first, last = today - timedelta(days=20), today - timedelta(days=10)
    open_page(browser, site.url + f"/spend?from={first}&to={last}", "spend")
    past = figures(browser, "spend")["trend"]["layout"]
    assert [ts(v) for v in past["xaxis"]["range"]] == [datetime.combine(first, time()),
                                                       datetime.combine(last + timedelta(days=1), time())]
    assert not past.get("shapes") and not past.get("annotations")
    days = {ts(x).date() for t in figures(browser, "spend")["trend"]["data"] for x in t["x"]}
    assert days and min(days) >= first and max(days) <= last


def test_cli_summary_gpu_counts_are_the_overviews_and_sqls(site, browser):
    from gpuledger.demo import gpu_counts, summary

    store = site.store
    counts, first, last, _ = gpu_counts(store)
    line = summary(store, 0, None, SimpleNamespace(days=[], seconds=0.0), 0.0, 0.0, Path("demo")).splitlines()[1]
    found = re.match(r"gpuledger demo: (\d+) GPUs \((\d+) GPU entities incl\. (\d+) MIG instances\)", line)
    assert found, line
    # independently of gpu_counts.sql: the hourly rollup over the same days
    gpus, entities, mig = store.rows(
        "SELECT uniqExact(host, gpu_uuid), uniqExact(host, gpu_uuid, mig_instance), "
        "uniqExactIf((host, gpu_uuid, mig_instance), mig_instance != '') FROM gpu_hour "
        "WHERE hour >= {s:DateTime} AND hour < {e:DateTime}",
        {"s": datetime.combine(first, time()), "e": datetime.combine(last + timedelta(days=1), time())})[0]
    assert tuple(int(g) for g in found.groups()) == (gpus, entities, mig) == \
        (counts["gpus"], counts["gpu_entities"], counts["mig_instances"])
    assert mig > 0 and entities > gpus           # the demo has MIG: the two counts differ
    open_page(browser, site.url + f"/?from={first}&to={last}", "overview")
    part(browser, "overview", "tiles")
    tile = text(browser, "overview-tile-gpus").splitlines()
    assert tile[0].lower() == "gpus" and tile[1] == f"{gpus:,}", (tile, gpus)
    assert tile[2].startswith(f"{entities:,} GPU entities incl. {mig:,} MIG instances"), tile
    # the tile says what it counts
    hint = browser.find_element(By.ID, "overview-tile-gpus").get_attribute("title")
    assert "physical GPUs" in hint and "MIG instance" in hint
