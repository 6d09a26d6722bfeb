"""Untrusted data and URLs (#15): team, pool and host names written straight into the derived
tables (as a store loaded before ingest bounded labels may hold them) — formulas, HTML links, a
5000-character name, 300 teams, spend in EUR — and absurd URL parameters. The dashboard is
mounted on that store and read over real HTTP (the page, the router, every callback, every CSV
download) and in Chromium."""
from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime, time, timedelta, timezone
from types import SimpleNamespace
from urllib.parse import quote

import pytest
import requests

from dashboard import ids
from dashboard.filters import parse
from dashboard.probe import call, call_page, call_router, page_callbacks
from tests.helpers import HttpClient, free_port

FORMULA = '=HYPERLINK("http://evil","x")'
LINK = '<a href="http://evil">x</a>'
LONG = "L" * 5000
HOSTILE = {"team": FORMULA, "pool": "+pool", "host": "@host", "user": "-2+3", "job_id": "\t=1", "region": "\r=1"}
MANY = [f"team-{i:03d}" for i in range(300)]
PAGES = {"overview": "/", "utilization": "/utilization", "idle": "/idle", "spend": "/spend",
         "placement": "/placement", "compliance": "/compliance", "alerts": "/alerts"}
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def plant(store, today: date) -> None:
    """Two days of GPU costs, waste, idle windows, spend, findings and alerts owned by hostile names."""
    days = [today - timedelta(days=1), today]
    owners = [(FORMULA, "onprem"), (LINK, "onprem"), (LONG, "aws"), ("research", "aws")]
    cost_hour, cost_day, util_day, waste, windows, demand, gpu_hour = [], [], [], [], [], [], []
    for g, (team, env) in enumerate(owners):
        gpu = f"GPU-{g:04d}"
        for day in days:
            t0 = datetime.combine(day, time())
            cost_day.append([day, HOSTILE["host"], gpu, "", env, HOSTILE["region"], HOSTILE["pool"], "i-1", "p4d",
                             "A100", "550.1", "12.4", team, 1, 24.0, 12.0, 5.0, 24.0, 0.0, 0.0, 0.0, 24.0, 0])
            util_day.append([day, team, env, HOSTILE["host"], gpu, "", 24.0, 12.0])
            waste.append([day, HOSTILE["host"], gpu, "", env, HOSTILE["region"], HOSTILE["pool"], "A100", team,
                          HOSTILE["user"], HOSTILE["job_id"], "", 24.0, 24.0, 3.0, 1.0, 2.0, 0.5])
            windows.append([HOSTILE["host"], gpu, "", t0 + timedelta(hours=2), t0 + timedelta(hours=3), 3600, 3600, 0,
                            "allocated", env, HOSTILE["region"], HOSTILE["pool"], "i-1", "A100", team, HOSTILE["user"],
                            HOSTILE["job_id"], 1.0])
            for h in range(24):
                hour = t0 + timedelta(hours=h)
                cost_hour.append([hour, HOSTILE["host"], gpu, "", env, HOSTILE["region"], HOSTILE["pool"], "A100",
                                  team, 1, 1.0, 0.5, 1.0, 1.0])
                demand.append([hour, team, env, 1, 1.0, 0.5, 1.0])
                gpu_hour.append([hour, HOSTILE["host"], gpu, "", env, HOSTILE["pool"], "A100", "550.1", "12.4", team, 1])
    insert = store.client.insert
    insert("gpu_cost_hour", cost_hour, column_names=["hour", "host", "gpu_uuid", "mig_instance", "environment", "region",
                                                     "pool", "model", "team", "held", "gpu_hours", "utilized_gpu_hours",
                                                     "cloud_gpu_usd", "cost_usd"])
    insert("gpu_cost_day", cost_day, column_names=store.columns("gpu_cost_day"))
    insert("gpu_util_day", util_day, column_names=store.columns("gpu_util_day"))
    insert("gpu_waste_day", waste, column_names=store.columns("gpu_waste_day"))
    insert("idle_windows", windows, column_names=["host", "gpu_uuid", "mig_instance", "start", "end", "duration_s",
                                                  "covered_s", "is_open", "kind", "environment", "region", "pool",
                                                  "instance_id", "model", "team", "user", "job_id", "cost_usd"])
    insert("team_demand_hour", demand, column_names=store.columns("team_demand_hour"))
    insert("gpu_hour", gpu_hour, column_names=["hour", "host", "gpu_uuid", "mig_instance", "environment", "pool",
                                               "model", "driver_version", "cuda_version", "team", "held"])
    spend = [[day, team, env, "cloud_other", "USD", 10.0 + i, 0.0, 0.0, 0.0]
             for day in days for i, (team, env) in enumerate([*owners, *((t, "aws") for t in MANY)])]
    spend += [[today, FORMULA, "aws", "cloud_other", "USD", -3.5, 0.0, 0.0, 0.0],            # a credit
              [today, "unallocated", "aws", "cloud_other", "USD", 7.0, 0.0, 0.0, 0.0],
              [today, "research", "azure", "cloud_other", "EUR", 1234.5, 0.0, 0.0, 0.0]]   # a EUR line item
    insert("team_spend_day", spend, column_names=store.columns("team_spend_day"))
    now = datetime.combine(today, time(1))
    insert("compliance_findings", [["untagged_spend", "k1", "critical", FORMULA, "aws", "aws", HOSTILE["region"],
                                    HOSTILE["pool"], HOSTILE["host"], "GPU-0000", LINK, LINK, "{}", 5.0, now, now, now]],
           column_names=store.columns("compliance_findings"))
    labels = {"team": FORMULA, "environment": "aws", "host": LINK}
    insert("alert_state", [["budget_overrun", "fp1", labels, {"summary": LINK}, "critical", "firing", 2.0, now, now,
                            None, now, 1]], column_names=store.columns("alert_state"))
    insert("alert_events", [[now, "budget_overrun", "fp1", labels, "critical", "pending", "firing", 2.0, FORMULA]],
           column_names=store.columns("alert_events"))
    # a pending pod whose team label and pool selector are hostile (pod labels are anyone's to set)
    submitted = datetime.combine(today, time(0))
    insert("queue_pending", [[submitted + timedelta(minutes=m), 600, "kubernetes", "k8s", HOSTILE["pool"], HOSTILE["pool"],
                              FORMULA, "", f"{LINK}/pod", 2, "", HOSTILE["job_id"], submitted] for m in (10, 20, 30)],
           column_names=store.columns("queue_pending"))


@pytest.fixture(scope="module")
def hostile(store_dir):
    """The dashboard (no auth) on a store holding the planted rows, served on loopback."""
    import threading

    from werkzeug.serving import make_server

    from dashboard.app import mount
    from gpuledger.config import Config
    from gpuledger.platform import Platform
    from ingest.schema import prepare
    from ingest.store import connect

    store = connect(f"chdb://{store_dir}?database=untrusted")
    prepare(store)
    plant(store, datetime.now(timezone.utc).date())
    platform = Platform(Config(), store)
    app = mount(platform, Config(), store, auth=False)
    platform.web.test_client().get("/_dash-dependencies")     # this app takes the pages' callbacks now
    server = make_server("127.0.0.1", free_port(), platform.web, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    yield SimpleNamespace(url=url, app=app, store=store, client=HttpClient(url, timeout_s=60))
    server.shutdown()
    store.command("DROP DATABASE IF EXISTS untrusted")


def default_filters() -> dict:
    return parse({}, datetime.now(timezone.utc).date()).to_data()


def find(node, component_id):
    """The props of the component with ``component_id`` in a layout's JSON, or None."""
    if isinstance(node, dict):
        if node.get("props", {}).get("id") == component_id:
            return node["props"]
        return next((p for v in node.values() if (p := find(v, component_id)) is not None), None)
    if isinstance(node, list):
        return next((p for v in node if (p := find(v, component_id)) is not None), None)
    return None


def texts(node) -> str:
    return json.dumps(node, ensure_ascii=False)


# ---- URL parameters ---------------------------------------------------------------------------

ABSURD = {"to=9999-12-31": "from/to", "from=9999-12-01&to=9999-12-31": "from/to",
          "from=0000-01-01&to=2026-01-01": "from/to", "from=0001-01-01&to=0001-01-31": "from/to",
          "from=1900-01-01&to=1900-01-31": "from/to", "from=2150-01-01&to=2150-01-31": "from/to",
          "from=2026-11-01&to=2026-01-01": "from/to", "from=banana&to=2026-01-01": "from/to",
          "range=9999d": "unknown time range", "team=" + "9" * 5000: "5000 characters ignored",
          "gpu=" + "9" * 128 + "&mig=" + "9" * 100 + "&window=9999-12-31T23:59:59Z": "window",
          "gpu=GPU-1&window=0001-01-01T00:00:00%2B01:00": "window", "gpu=GPU-1&window=1900-01-01T00:00:00Z": "window",
          "gpu=GPU-1&window=9999-12-31T23:59:59-01:00": "window"}


@pytest.mark.parametrize("search", list(ABSURD))
def test_absurd_url_parameters_get_a_note_never_a_500(hostile, search):
    for page, path in PAGES.items():
        assert requests.get(f"{hostile.url}{path}?{search}", timeout=60).status_code == 200
        routed = call_router(hostile.client, path, "?" + search)
        assert routed.status == 200, (path, search)
        notes = find(routed.response, ids.notes(page))
        if page == "idle" or ABSURD[search] != "window":
            assert ABSURD[search] in texts(notes["children"]), (path, notes)
        data = find(routed.response, ids.filters(page))["data"]
        overrides = {}
        if page == "idle":
            overrides[ids.IDLE_FOCUS] = find(routed.response, ids.IDLE_FOCUS)["data"]
        for dep in page_callbacks(hostile.client, page):
            got = call(hostile.client, page, dep, data, overrides)
            assert got.status == 200, (path, search, dep["output"])
    nav = next(d for d in hostile.client.get("/_dash-dependencies").get_json() if ids.NAV in d["output"])
    body = {"output": nav["output"], "outputs": [{"id": ids.NAV, "property": "children"},
                                                 {"id": ids.SIGNED_IN, "property": "children"}],
            "inputs": [{"id": ids.URL, "property": "pathname", "value": "/spend"},
                       {"id": ids.URL, "property": "search", "value": "?" + search}], "changedPropIds": [], "state": []}
    assert requests.post(hostile.url + "/_dash-update-component", json=body, timeout=60).status_code == 200


@pytest.mark.parametrize("data", [{"start": "0001-01-01", "end": "0001-01-31"}, {"start": "9999-12-01", "end": "9999-12-31"},
                                  {"start": "1900-01-01", "end": "1900-02-01"}, {"start": "2150-01-01", "end": "2150-02-01"}])
def test_absurd_filter_data_sent_to_every_callback_is_not_a_500(hostile, data):
    for page in PAGES:
        calls = call_page(hostile.client, page, data)
        assert calls and all(c.status == 200 for c in calls), (page, [(c.output, c.status) for c in calls])


# ---- CSV downloads ----------------------------------------------------------------------------

def downloads(hostile) -> list[tuple[str, dict, list[list[str]]]]:
    """(page, CSV button id, rows) of every CSV button on every page, clicked over HTTP."""
    deps = hostile.client.get("/_dash-dependencies").get_json()
    out = []
    for page, path in PAGES.items():
        layout = call_router(hostile.client, path, "").response
        buttons = []
        _walk_ids(layout, lambda i, found=buttons: found.append(i) if isinstance(i, dict) and i.get("type") == "gl-csv" else None)
        dep = next((d for d in deps if d["output"] == f"{ids.download(page)}.data"), None)
        assert bool(buttons) == bool(dep), page
        states = {ids.filters(page): default_filters(), ids.IDLE_FOCUS: {}, ids.view(page): {}}
        for button in buttons:
            key = json.dumps(button, separators=(",", ":"), sort_keys=True)
            body = {"output": dep["output"], "outputs": {"id": ids.download(page), "property": "data"},
                    "inputs": [[{"id": b, "property": "n_clicks", "value": int(b == button)} for b in buttons]],
                    "changedPropIds": [f"{key}.n_clicks"],
                    "state": [{**s, "value": states[s["id"]]} for s in dep["state"]]}
            response = requests.post(hostile.url + "/_dash-update-component", json=body, timeout=60)
            assert response.status_code == 200, (page, button)
            sent = response.json()["response"][ids.download(page)]["data"]
            assert sent["filename"].endswith(".csv") and not sent["base64"]
            out.append((page, button, list(csv.reader(io.StringIO(sent["content"], newline="")))))
    return out


def _walk_ids(node, visit):
    if isinstance(node, dict):
        if "id" in node:
            visit(node["id"])
        for v in node.values():
            _walk_ids(v, visit)
    elif isinstance(node, list):
        for v in node:
            _walk_ids(v, visit)


def is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_every_csv_download_neutralises_formulas_and_keeps_numbers(hostile):
    got = downloads(hostile)
    assert len(got) == 27                       # every CSV button of every page
    cells = [cell for _, _, rows in got for row in rows[1:] for cell in row]
    bad = {(page, b["name"], cell[:30]) for page, b, rows in got for row in rows[1:] for cell in row
           if cell.startswith(DANGEROUS) and not is_number(cell)}
    assert not bad
    for value in HOSTILE.values():
        assert "'" + value in cells, value
    empty = " ".join(f"{p}:{b['name']}" for p, b, rows in got if len(rows) < 2)
    assert empty == ("utilization:mig placement:rightsize placement:recommendations alerts:pending "
                     "alerts:resolved")      # nothing planted there (model "A100" has no MIG profile: no right-sizing)
    spend = next(rows for page, b, rows in got if (page, b["name"]) == ("spend", "by-team"))
    cost = spend[0].index("cost_usd")
    assert ["'" + FORMULA, "aws", "cloud_other", "-3.5"] in [r[:3] + [r[cost]] for r in spend]   # a credit: a number


# ---- names in charts ----------------------------------------------------------------------------

def graphs(node) -> list[dict]:
    """Every dcc.Graph figure in a callback response."""
    found = []
    _walk(node, lambda n: found.append(n["props"]["figure"]) if n.get("type") == "Graph" else None)
    return found


def _walk(node, visit):
    if isinstance(node, dict):
        if "props" in node:
            visit(node)
        for v in node.values():
            _walk(v, visit)
    elif isinstance(node, list):
        for v in node:
            _walk(v, visit)


def test_names_in_charts_are_escaped_short_and_legends_bounded(hostile):
    figures = []
    for page in PAGES:
        for rows in ("pool", "gpu"):
            for got in call_page(hostile.client, page, default_filters()) if rows == "pool" else \
                    [call(hostile.client, page, d, default_filters(), {ids.UTIL_ROWS: "gpu"})
                     for d in page_callbacks(hostile.client, page) if page == "utilization"]:
                assert got.status == 200
                figures += graphs(got.response)
    assert len(figures) >= 15
    # customdata carries the raw names a click drills down with (URL-encoded then); no hover shows it raw
    shown = [{**f, "data": [{k: v for k, v in t.items() if k != "customdata"} for t in f["data"]]} for f in figures]
    raw = [t for f in figures for t in f["data"] if "customdata" in t and "<a" in json.dumps(t["customdata"])]
    assert not [t for t in raw if "%{customdata" in str(t.get("hovertemplate", ""))]
    text = json.dumps(shown, ensure_ascii=False)
    assert "<a" not in text and "&lt;a href=\\\"http://evil\\\"&gt;x&lt;/a&gt;" in text
    assert LONG not in text and "L" * 59 + "…" in text
    names = [len([t for t in fig["data"] if t.get("name")]) for fig in figures]
    assert max(names) <= 21                                      # 20 largest + "other"
    trend = next(f for f in figures if any(t.get("stackgroup") == "spend" for t in f["data"]))
    assert "other" in [t["name"] for t in trend["data"]]


# ---- what pages build from data -----------------------------------------------------------------

def test_options_and_payloads_are_bounded_with_a_note(hostile):
    sizes = {}
    for page, path in PAGES.items():
        routed = call_router(hostile.client, path, "")
        assert routed.status == 200
        sizes[path] = len(json.dumps(routed.response))
        team = find(routed.response, ids.filter_control("team", page))
        values = [o["value"] for o in team["options"]]
        assert len(values) == 200 and LONG not in values and max(len(o["label"]) for o in team["options"]) <= 60
        assert "Only the 200 teams with the most spend of 304 are listed" in texts(find(routed.response, ids.notes(page)))
        for got in call_page(hostile.client, page, default_filters()):
            sizes[got.output] = len(json.dumps(got.response))
    print(sorted(sizes.items(), key=lambda kv: -kv[1])[:5])
    assert max(sizes.values()) < 200_000, sizes


# ---- currencies ---------------------------------------------------------------------------------

@pytest.mark.parametrize("page", ["overview", "spend"])
def test_spend_in_another_currency_is_shown_apart_never_added(hostile, page):
    note = ("Also spent in other currencies (shown in their own currency beside the USD totals; no exchange rates are "
            "applied, so the USD figures and charts do not include it): EUR 1,234.50 (1 row).")
    shown = texts([c.response for c in call_page(hostile.client, page, default_filters())])
    beside = " + EUR 1,234.50"          # the Overview's Spend tile: beside the USD total, never added to it
    assert note in shown and (page != "overview" or beside in shown)
    assert "1,234" not in shown.replace(note, "").replace(beside, "")
    aws_only = parse({"env": "aws"}, datetime.now(timezone.utc).date()).to_data()
    assert "other currencies" not in texts([c.response for c in call_page(hostile.client, page, aws_only)])


# ---- in the browser -------------------------------------------------------------------------------

def test_hostile_names_render_as_text_in_the_browser(hostile):
    from selenium.webdriver.common.by import By

    from tests.dashboard.browser import console_errors, open_page, part
    from tests.dashboard.conftest import chromium

    driver = chromium()
    try:
        open_page(driver, f"{hostile.url}/spend?team={quote(LINK)}&team=research", "spend")
        chart = part(driver, "spend", "by-team", chart=True)
        assert LINK in chart.text                                          # the name, shown as text
        assert driver.find_elements(By.CSS_SELECTOR, 'a[href="http://evil"]') == []
        assert "EUR 1,234.50 (1 row)" in driver.find_element(By.ID, ids.part("spend", "currencies")).text
        assert "Only the 200 teams" in driver.find_element(By.ID, ids.notes("spend")).text
        assert console_errors(driver) == []
    finally:
        driver.quit()
