"""The GPU page (/gpu?gpu_uuid=…&mig_instance=…) in headless Chromium on the demo fleet: each
panel's plotted data against SQL computed here from other tables than the page reads (the
minute rollup for the hourly panels, the raw samples for the clocks, the GPU-hour costs for the
cost), an unknown GPU's message, the GPU list, and the filters and the GPU surviving a reload."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from selenium.webdriver.common.by import By

from dashboard import figures, ids
from dashboard.components import money
from tests.dashboard.browser import open_page, part, pick, screenshot, table_rows, text, wait

pytestmark = pytest.mark.usefixtures("no_console_errors")

PANELS = ("utilization", "memory", "power", "temperature", "clocks", "throttle", "events", "timeline", "cost")
TRACES_JS = """
const plot = arguments[0].querySelector('.js-plotly-plot');
const list = v => (v === undefined || v === null) ? null : Array.from(v, e => (typeof e === 'number' && isNaN(e)) ? null : e);
return {range: plot.layout.xaxis.range,
        traces: plot.data.map(t => ({name: t.name, x: list(t.x), y: list(t.y), base: list(t.base),
                                     customdata: t.customdata ? Array.from(t.customdata, c => Array.isArray(c) ? c : [c]) : null,
                                     hovertemplate: t.hovertemplate || ''}))};
"""


def plotted(browser, name: str) -> dict:
    """A panel's x range and traces ({name: trace}) as plotly.js holds them."""
    element = part(browser, "gpu", name, chart=True)
    out = browser.execute_script(TRACES_JS, element)
    out["range"] = [pd.Timestamp(t) for t in out["range"]]
    out["by_name"] = {t["name"]: t for t in out["traces"]}
    return out


def points(trace) -> dict:
    """{bucket start: value} of a trace's drawn points (gaps left out)."""
    return {pd.Timestamp(x): y for x, y in zip(trace["x"], trace["y"]) if y is not None}


def close(a: dict, b: dict, rel: float = 1e-3, abs_: float = 1e-3) -> None:
    assert a.keys() == b.keys(), (sorted(set(a) ^ set(b))[:5], len(a), len(b))
    bad = [(k, a[k], b[k]) for k in a if not math.isclose(a[k], b[k], rel_tol=rel, abs_tol=abs_)]
    assert not bad, bad[:5]


def hourly(store, entity: dict, window, select: str, where: str = "1") -> dict[str, dict]:
    """Per hour of the window, ``select`` (named expressions over gpu_minute) as {column: {hour: value}}."""
    df = store.query_df(f"SELECT toStartOfHour(minute) AS t, {select} FROM gpu_minute "
                        "WHERE host = {h:String} AND gpu_uuid = {g:String} AND mig_instance = {m:String} "
                        f"AND minute >= {{s:DateTime}} AND minute < {{e:DateTime}} AND {where} GROUP BY t ORDER BY t",
                        {"h": entity["host"], "g": entity["gpu_uuid"], "m": entity["mig_instance"],
                         "s": window[0].to_pydatetime(), "e": window[1].to_pydatetime()})
    return {c: {pd.Timestamp(t): float(v) for t, v in zip(df["t"], df[c]) if v is not None and not pd.isna(v)}
            for c in df.columns if c != "t"}


def no_nan_hovers(panel: dict) -> None:
    for trace in panel["traces"]:
        assert "NaN" not in trace["hovertemplate"]
        assert "NaN" not in str(trace["customdata"] or "")


def open_gpu(browser, site, entity: dict, query: str = "range=7d") -> None:
    url = f"{site.url}/gpu?gpu_uuid={entity['gpu_uuid']}" + (f"&mig_instance={entity['mig_instance']}"
                                                               if entity["mig_instance"] else "") + f"&{query}"
    open_page(browser, url, "gpu")


@pytest.fixture(scope="module")
def whole_gpu(site):
    """The whole GPU with XID and ECC events planted (the demo's GPU-health problem)."""
    host, gpu, first = site.store.rows(
        "SELECT host, gpu_uuid, minIf(hour, xid_count > 0) FROM gpu_hour WHERE mig_instance = '' GROUP BY host, gpu_uuid "
        "ORDER BY sum(xid_count) + max(coalesce(ecc_uncorrected_max, 0)) DESC, host, gpu_uuid LIMIT 1")[0]
    return {"host": host, "gpu_uuid": gpu, "mig_instance": "", "xid_day": first.date()}


@pytest.fixture(scope="module")
def mig_slice(site):
    """The MIG slice the demo planted an allocated idle window on."""
    planted = next(p for p in site.demo.planted if p["kind"] == "idle_allocated" and p["mig_instance"])
    return {"host": planted["host"], "gpu_uuid": planted["gpu_uuid"], "mig_instance": planted["mig_instance"],
            "mig_profile": planted["mig_profile"]}


def test_a_whole_gpu_shows_each_panel_as_sql_computes_it(site, browser, whole_gpu, screenshots_dir):
    store, e = site.store, whole_gpu
    open_gpu(browser, site, e, f"from={e['xid_day'] - timedelta(days=3)}&to={e['xid_day'] + timedelta(days=3)}")
    model, = store.rows("SELECT argMax(model, hour) FROM gpu_hour WHERE gpu_uuid = {g:String}", {"g": e["gpu_uuid"]})[0]
    util = plotted(browser, "utilization")
    title = browser.find_element(By.CSS_SELECTOR, "#page-gpu h1").text
    assert title == f"{e['host']} · {e['gpu_uuid']} · {model}"

    window = util["range"]
    assert window[1] - window[0] == pd.Timedelta(days=7)                 # the axis spans the range, not the data
    want = hourly(store, e, window, "sum(util_gpu_s) / sum(util_covered_s) AS gpu, "
                                    "sum(util_mem_s) / sum(util_mem_covered_s) AS mem", "util_covered_s > 0")
    close(points(util["by_name"]["GPU"]), want["gpu"])
    close(points(util["by_name"]["memory controller"]), want["mem"])
    assert len(want["gpu"]) > 24

    memory = plotted(browser, "memory")
    want = hourly(store, e, window, "sum(mem_used_s) / sum(mem_covered_s) / pow(2, 30) AS used, "
                                    "max(mem_total_bytes) / pow(2, 30) AS total", "mem_covered_s > 0")
    close(points(memory["by_name"]["used"]), want["used"])
    close(points(memory["by_name"]["total"]), want["total"])

    power = plotted(browser, "power")
    want = hourly(store, e, window, "sum(energy_j) / sum(power_covered_s) AS w, sum(energy_j) / 3600000 AS kwh",
                  "power_covered_s > 0")
    close(points(power["by_name"]["power"]), want["w"])
    energy = points(power["by_name"]["energy since the start"])
    assert math.isclose(max(energy.values()), sum(want["kwh"].values()), rel_tol=1e-6)
    assert text(browser, "gpu-fact-energy-in-the-range") == f"{sum(want['kwh'].values()):,.2f} kWh"

    temperature = plotted(browser, "temperature")
    want = hourly(store, e, window, "max(temperature_max) AS c", "temperature_max IS NOT NULL")
    close(points(temperature["by_name"]["temperature (highest)"]), want["c"])

    clocks = plotted(browser, "clocks")                       # raw samples, 7 days: buckets of 7 minutes
    start = window[0].to_pydatetime()
    df = store.query_df("SELECT intDiv(toUnixTimestamp(ts) - toUnixTimestamp({s:DateTime}), 420) AS b, "
                        "avg(sm_clock_mhz) AS sm, avg(mem_clock_mhz) AS mem FROM gpu_samples "
                        "WHERE gpu_uuid = {g:String} AND mig_instance = '' AND ts >= {s:DateTime} AND ts < {e:DateTime} "
                        "AND sm_clock_mhz IS NOT NULL GROUP BY b",
                        {"g": e["gpu_uuid"], "s": start, "e": window[1].to_pydatetime()})
    at = {b: window[0] + pd.Timedelta(seconds=420 * int(b)) for b in df["b"]}
    close(points(clocks["by_name"]["SM clock"]), {at[b]: v for b, v in zip(df["b"], df["sm"])})
    close(points(clocks["by_name"]["memory clock"]), {at[b]: v for b, v in zip(df["b"], df["mem"])})

    mask, xids, last_xid, ecc_c, ecc_u = store.rows(
        "SELECT groupBitOr(throttle_reasons), sum(xid_count), argMaxIf(xid_last, minute, xid_last IS NOT NULL), "
        "max(ecc_corrected_max), max(ecc_uncorrected_max) FROM gpu_minute WHERE gpu_uuid = {g:String} "
        "AND mig_instance = '' AND minute >= {s:DateTime} AND minute < {e:DateTime}",
        {"g": e["gpu_uuid"], "s": start, "e": window[1].to_pydatetime()})[0]
    throttle = plotted(browser, "throttle")
    names = set(throttle["by_name"]["active"]["y"])
    assert names == {n for bit, n in figures.THROTTLE_REASONS.items() if mask & bit} and names
    events = plotted(browser, "events")
    assert sum(points(events["by_name"]["XID events"]).values()) == xids > 0
    summary = text(browser, "gpu-events-summary")
    assert summary.startswith(f"{xids:,} XID events (last XID {last_xid})")
    assert f"{ecc_u or 0:,.0f} uncorrected" in summary and f"{ecc_c or 0:,.0f} corrected" in summary

    cost = plotted(browser, "cost")
    df = store.query_df("SELECT hour, sum(cost_usd) AS usd, sum(gpu_hours) AS h FROM gpu_cost_hour "
                        "WHERE gpu_uuid = {g:String} AND mig_instance = '' AND hour >= {s:DateTime} "
                        "AND hour < {e:DateTime} GROUP BY hour HAVING h > 0",
                        {"g": e["gpu_uuid"], "s": start, "e": window[1].to_pydatetime()})
    close(points(cost["by_name"]["cost per GPU-hour"]),
          {pd.Timestamp(t): u / h for t, u, h in zip(df["hour"], df["usd"], df["h"])})
    assert text(browser, "gpu-fact-cost-in-the-range").startswith(f"{money(df['usd'].sum())} for {df['h'].sum():,.1f} GPU-hours")
    assert text(browser, "gpu-fact-cost-per-hour") == f"${df['usd'].sum() / df['h'].sum():,.2f}/h"

    driver, = store.rows("SELECT argMax(driver_version, hour) FROM gpu_hour WHERE gpu_uuid = {g:String} "
                         "AND hour >= {s:DateTime} AND hour < {e:DateTime}",
                         {"g": e["gpu_uuid"], "s": start, "e": window[1].to_pydatetime()})[0]
    assert text(browser, "gpu-fact-driver").startswith(driver)

    timeline = plotted(browser, "timeline")
    teams = {r[0] for r in store.rows(
        "SELECT DISTINCT owner.1 FROM (SELECT hour, argMax((team, held), covered_s) AS owner FROM gpu_hour "
        "WHERE gpu_uuid = {g:String} AND mig_instance = '' AND covered_s > 0 AND hour >= {s:DateTime} "
        "AND hour < {e:DateTime} GROUP BY hour) WHERE owner.1 != ''",
        {"g": e["gpu_uuid"], "s": start, "e": window[1].to_pydatetime()})}
    assert {c[0] for c in timeline["by_name"]["team"]["customdata"]} == teams and teams
    for panel in (util, memory, power, temperature, clocks, throttle, events, cost, timeline):
        assert panel["range"] == window                       # one time axis for every panel
        no_nan_hovers(panel)
    units = [(util, " %"), (memory, " GiB"), (power, " W"), (power, " kWh"), (temperature, " °C"), (clocks, " MHz"),
             (cost, "/h"), (cost, "$")]
    for panel, unit in units:
        assert any(unit in t["hovertemplate"] for t in panel["traces"]), unit
    screenshot(browser, screenshots_dir, "gpu")


def test_a_mig_slice_shows_its_owners_idle_windows_and_minutes(site, browser, mig_slice):
    store, e = site.store, mig_slice
    open_gpu(browser, site, e, "range=30d")
    wait(browser, lambda d: d.find_element(By.ID, ids.GPU_PROFILE).text, "the MIG profile never reached the title")
    title = browser.find_element(By.CSS_SELECTOR, "#page-gpu h1").text
    assert title.startswith(f"{e['host']} · {e['gpu_uuid']} · ") and title.endswith(f" · MIG {e['mig_instance']} ({e['mig_profile']})")
    timeline = plotted(browser, "timeline")
    window = timeline["range"]
    rows = store.query_df("SELECT kind, start, end FROM idle_windows WHERE host = {h:String} AND gpu_uuid = {g:String} "
                          "AND mig_instance = {m:String} AND start < {e:DateTime} AND end > {s:DateTime} ORDER BY start",
                          {"h": e["host"], "g": e["gpu_uuid"], "m": e["mig_instance"],
                           "s": window[0].to_pydatetime(), "e": window[1].to_pydatetime()})
    idle = timeline["by_name"][figures.IDLE_ROW]
    assert [pd.Timestamp(b) for b in idle["base"]] == [pd.Timestamp(s) for s in rows["start"]] and len(rows)
    assert [round(ms / 1000) for ms in idle["x"]] == [int((b - a).total_seconds()) for a, b in zip(rows["start"], rows["end"])]
    assert [c[0] for c in idle["customdata"]] == [f"{k} idle" for k in rows["kind"]]
    assert "allocated idle" in {c[0] for c in idle["customdata"]}    # the planted window
    no_nan_hovers(timeline)
    for c in idle["customdata"]:
        assert " UTC" in c[1] and (" min" in c[3] or " s" in c[3]) and "$" in c[4]

    # Last 24 hours: minute resolution from gpu_minute, one point a minute with data
    open_gpu(browser, site, e, "range=1d")
    util = plotted(browser, "utilization")
    window = util["range"]
    assert window[1] - window[0] == pd.Timedelta(hours=24)
    df = store.query_df("SELECT minute, util_gpu_s / util_covered_s AS u FROM gpu_minute WHERE host = {h:String} "
                        "AND gpu_uuid = {g:String} AND mig_instance = {m:String} AND util_covered_s > 0 "
                        "AND minute >= {s:DateTime} AND minute < {e:DateTime}",
                        {"h": e["host"], "g": e["gpu_uuid"], "m": e["mig_instance"],
                         "s": window[0].to_pydatetime(), "e": window[1].to_pydatetime()})
    close(points(util["by_name"]["GPU"]), {pd.Timestamp(t): u for t, u in zip(df["minute"], df["u"])})
    assert len(df) > 600


def test_an_unknown_gpu_says_so_and_the_list_links_to_gpus(site, browser):
    open_page(browser, f"{site.url}/gpu?gpu_uuid=GPU-not-in-the-store&range=7d", "gpu")
    assert text(browser, ids.GPU_MESSAGE).startswith("No GPU GPU-not-in-the-store in the store")
    browser.find_element(By.LINK_TEXT, "List the GPUs").click()
    rows = table_rows(part(browser, "gpu", "top"))
    first_day = datetime.now(timezone.utc).date() - timedelta(days=6)          # Last 7 days: whole UTC days
    want = site.store.rows("SELECT host, gpu_uuid, mig_instance FROM gpu_cost_day WHERE day >= {s:Date} "
                           "GROUP BY host, gpu_uuid, mig_instance ORDER BY sum(cost_usd) DESC, host, gpu_uuid, mig_instance "
                           "LIMIT 5", {"s": first_day})
    assert [tuple(r[:3]) for r in rows[:5]] == [tuple(w) for w in want]
    link = browser.find_element(By.LINK_TEXT, want[0][1])
    assert f"gpu_uuid={want[0][1]}" in link.get_attribute("href") and "range=7d" in link.get_attribute("href")
    link.click()
    wait(browser, lambda d: want[0][1] in d.find_element(By.CSS_SELECTOR, "#page-gpu h1").text, "the GPU never opened")


def test_the_gpu_and_filters_survive_a_reload(site, browser, whole_gpu):
    open_gpu(browser, site, whole_gpu)
    part(browser, "gpu", "utilization", chart=True)
    pick(browser, ids.filter_control("range", "gpu"), "30d")
    wait(browser, lambda d: "range=30d" in d.current_url, "the range never reached the URL")
    assert f"gpu_uuid={whole_gpu['gpu_uuid']}" in browser.current_url
    browser.refresh()
    open_page(browser, browser.current_url, "gpu")
    util = plotted(browser, "utilization")
    assert util["range"][1] - util["range"][0] == pd.Timedelta(days=30)
    assert whole_gpu["gpu_uuid"] in browser.find_element(By.CSS_SELECTOR, "#page-gpu h1").text
