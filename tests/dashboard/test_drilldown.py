"""Drill-down and aggregate-by in headless Chromium on the demo fleet (issue #17): on every page
that groups by team, a click on a team opens its GPUs and idle windows (the Idle & waste page
filtered to it), a GPU opens the GPU page, an idle window its focus; the "aggregate by" selector
regroups the card, with totals checked against SQL written here; the toggles live in the URL and
survive a reload."""
from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from selenium.common.exceptions import (
    JavascriptException,
    NoSuchElementException,
    StaleElementReferenceException,
    TimeoutException,
)
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.by import By

from dashboard import drill, ids, queries
from tests.dashboard.browser import choose, open_page, part, pick, table_rows, wait

pytestmark = pytest.mark.usefixtures("no_console_errors")
GPU_PAGE = Path(__file__).resolve().parents[2] / "dashboard" / "pages" / "gpu.py"
DAYS = 14


@pytest.fixture(scope="module")
def span(site):
    """A fixed window of whole days ending on the demo's last day, as URL arguments and as the
    bound parameters of the SQL below."""
    last = site.demo.end.date() if isinstance(site.demo.end, datetime) else site.demo.end
    first = last - timedelta(days=DAYS - 1)
    start, end = datetime.combine(first, datetime.min.time()), datetime.combine(last + timedelta(days=1), datetime.min.time())
    return {"search": f"?from={first}&to={last}", "from": str(first), "to": str(last),
            "params": {"start": start, "end": end, "start_day": first, "end_day": last + timedelta(days=1)}}


def query(browser) -> tuple[str, dict]:
    url = urlparse(browser.current_url)
    return url.path, parse_qs(url.query)


def wait_url(browser, path: str, **args) -> dict:
    """Wait until the browser is at ``path`` with (at least) ``args``; return its query."""
    def there(d):
        p, q = query(d)
        return q if p == path and all(q.get(k) == [v] for k, v in args.items()) else False
    return wait(browser, there, f"never reached {path} {args}; at {browser.current_url}")


def click_link(browser, element_id: str, pick_row, column: int) -> list[str]:
    """Click the link in cell ``column`` of the first row of table ``#element_id`` that ``pick_row``
    (the row's cell texts) accepts; return that row's cell texts. Retried while the table re-renders."""
    before = browser.current_url

    def attempt(d):
        try:
            for tr in d.find_elements(By.CSS_SELECTOR, f"#{element_id} table.data tbody tr"):
                cells = tr.find_elements(By.TAG_NAME, "td")
                texts = [td.text for td in cells]
                if pick_row(texts, tr):
                    link = cells[column].find_element(By.TAG_NAME, "a")
                    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
                    d.execute_script("arguments[0].click()", link)
                    # a click on a table a callback was replacing is lost: the URL must change
                    moved = wait(d, lambda d2: d2.current_url != before, "", timeout=5)
                    return texts if moved else False
        except (StaleElementReferenceException, NoSuchElementException, TimeoutException):
            return False
        return False
    return wait(browser, attempt, f"no row to click in #{element_id}")


def clickable_chart(browser, page: str, name: str):
    """The card ``page``-``name`` once its Plotly chart takes clicks: drawn (``part`` sees the first SVG
    while plotly.js is still drawing), with its drag layer (which takes the clicks) and dcc.Graph's
    ``plotly_click`` listener bound (dcc.Graph binds its events, the one that sets clickData among
    them, only once its first Plotly.react has resolved; a click before that is lost)."""
    element = part(browser, page, name, chart=True)

    def ready(d):
        try:
            return d.execute_script("""
                const gd = arguments[0].querySelector('.js-plotly-plot');
                if (!gd || !gd._fullLayout || !gd.data || !gd.isConnected) return false;
                if (!gd.querySelector('.nsewdrag')) return false;
                const ev = gd._ev;
                const n = ev && (typeof ev.listeners === 'function' ? ev.listeners('plotly_click').length
                                 : [].concat((ev._events || {}).plotly_click || []).length);
                return n > 0;""", element)
        except (StaleElementReferenceException, JavascriptException):
            return False
    wait(browser, ready, f"the chart in {page}-{name} never took clicks", timeout=15)   # retried by the caller
    return element


def click_at(browser, x: float, y: float) -> None:
    """A real mouse click at viewport coordinates (plotly.js takes clicks on its drag layer)."""
    actions = ActionBuilder(browser)
    actions.pointer_action.move_to_location(int(x), int(y)).pause(0.2).click()
    actions.perform()


def until_it_leads_away(browser, click):
    """``click()`` (returning what it clicked) until the URL changes: a chart just drawn may not
    take clicks yet. Returns what the click that led away returned."""
    before = browser.current_url

    clicked = []

    def attempt(d):
        if d.current_url == before:
            try:
                clicked.append(click())
                wait(d, lambda d2: d2.current_url != before, "", timeout=8)
            except (TimeoutException, StaleElementReferenceException, JavascriptException):
                pass                      # the chart was redrawn under the click: find it again
        return d.current_url != before
    wait(browser, attempt, f"no click led away from {before}", timeout=150)
    return clicked[-1]


def click_category(browser, element, key: str) -> None:
    """A real mouse click on the bar (or box) of category ``key`` in the Plotly chart in ``element``."""
    where = browser.execute_script("""
        const gd = arguments[0].querySelector('.js-plotly-plot'), key = arguments[1];
        const traces = gd.querySelectorAll('.trace.bars, .trace.boxes');
        let best = null;                  // the tallest shape of the category (a flat box takes no hover)
        for (let i = 0; i < gd.data.length; i++) {
            const t = gd.data[i], j = Array.from(t.x || []).indexOf(key);
            if (j < 0 || (t.type === 'bar' && !(t.y[j] > 0))) continue;
            const shapes = traces[i].querySelectorAll(t.type === 'bar' ? '.point path' : 'path.box');
            const shape = t.type === 'bar' ? shapes[j] : shapes[j];
            if (shape && (!best || shape.getBBox().height > best.getBBox().height)) best = shape;
        }
        if (!best) return null;
        best.scrollIntoView({block: 'center'});
        const r = best.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2];""", element, key)
    assert where is not None, f"no bar or box for {key!r}"
    click_at(browser, *where)


def click_heatmap_cell(browser, element, row: int, column: int) -> dict:
    """A real mouse click on a heatmap cell of ``row``, the first from ``column`` on that has data (a
    cell without data takes no hover, so no click); returns that cell's customdata and time."""
    found = browser.execute_script("""
        const gd = arguments[0].querySelector('.js-plotly-plot'), t = gd.data[0], z = t.z[arguments[1]];
        let c = arguments[2];
        while (c < t.x.length && !(z[c] !== null && z[c] !== undefined && isFinite(z[c]))) c++;
        if (c >= t.x.length) throw new Error('no heatmap cell with data in row ' + arguments[1]);
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, x = t.x[c];
        let box = gd.getBoundingClientRect();
        window.scrollBy(0, box.top + ya._offset + ya.l2p(arguments[1]) - window.innerHeight / 2);
        box = gd.getBoundingClientRect();
        return {vx: box.left + xa._offset + xa.l2p(xa.d2l(x)), vy: box.top + ya._offset + ya.l2p(arguments[1]),
                customdata: t.text[arguments[1]][c].split('\\t'), x: String(x)};""", element, row, column)
    click_at(browser, found["vx"], found["vy"])
    return found


def chart_totals(browser, element) -> dict[str, float]:
    """The sum of the y values per x category over the bar traces of the chart in ``element``."""
    return browser.execute_script("""
        const gd = arguments[0].querySelector('.js-plotly-plot'), out = {};
        for (const t of gd.data) { if (t.type !== 'bar') continue;
            Array.from(t.x).forEach((x, j) => { out[x] = (out[x] || 0) + (t.y[j] || 0); }); }
        return out;""", element)


def assert_gpu_page(browser, gpu: str, mig: str, span) -> None:
    """At /gpu for ``gpu`` (and ``mig``) with the window kept; the page renders if it exists yet."""
    q = wait_url(browser, "/gpu", gpu_uuid=gpu, **({"mig_instance": mig} if mig else {}))
    assert ("mig_instance" in q) == bool(mig)
    assert q.get("from") == [span["from"]] and q.get("to") == [span["to"]]
    if GPU_PAGE.exists():
        wait(browser, lambda d: d.find_elements(By.ID, "page-gpu"), "the GPU page never rendered")


def team_to_gpu_to_window(site, browser, span, team: str) -> None:
    """On the Idle & waste page filtered to ``team`` (where a team click lands): only its GPUs and
    windows; a GPU opens the GPU page; an idle window's start opens its focus, whose GPU opens the GPU page."""
    q = wait_url(browser, "/idle", team=team, **{"from": span["from"], "to": span["to"]})
    assert "by" not in q and "rows" not in q
    open_page(browser, browser.current_url, "idle")
    gpus = part(browser, "idle", "waste-gpus")
    rows = table_rows(gpus)
    expected = site.store.rows(
        "SELECT host, gpu_uuid, mig_instance FROM gpu_waste_day WHERE day >= {start_day:Date} AND day < {end_day:Date} "
        "AND team = {team:String} GROUP BY host, gpu_uuid, mig_instance "
        "HAVING sum(idle_allocated_usd + idle_unallocated_usd + unused_usd) > 0", span["params"] | {"team": team})
    assert rows and {r[0] for r in rows} == {team}
    assert {(r[1], r[2], r[3]) for r in rows} <= set(expected)
    assert len(rows) == min(len(expected), 25)
    windows = table_rows(part(browser, "idle", "offenders"))
    assert windows and {r[0] for r in windows} == {team}
    # a window: its start opens the page focused on it, the window marked
    first = click_link(browser, ids.part("idle", "offenders"), lambda texts, tr: True, list(drill_columns()).index("start"))
    gpu, mig = first[4], first[5]
    wait_url(browser, "/idle", gpu=gpu, team=team)
    part(browser, "idle", "focus")
    marked = click_link(browser, ids.IDLE_FOCUS_WINDOWS, lambda texts, tr: "marked" in (tr.get_attribute("class") or ""), 4)
    assert marked[4] == gpu and marked[3] == first[3]
    assert_gpu_page(browser, gpu, mig, span)
    # and back on the team's page, a GPU of the waste table opens the GPU page
    open_page(browser, f"{site.url}/idle{span['search']}&team={team}", "idle")
    part(browser, "idle", "waste-gpus")
    first = click_link(browser, ids.part("idle", "waste-gpus"), lambda texts, tr: True, 2)
    assert_gpu_page(browser, first[2], first[3], span)


def drill_columns():
    from dashboard.pages.idle import OFFENDER_COLUMNS
    return OFFENDER_COLUMNS


def biggest_team(site, span) -> str:
    """The team with the most idle-window cost in the window (it has GPUs and windows to drill into)."""
    return site.store.rows("SELECT team FROM v_idle_waste WHERE start < {end:DateTime} AND end > {start:DateTime} "
                           "AND team NOT IN ('', 'unallocated') GROUP BY team ORDER BY sum(cost_usd) DESC LIMIT 1", span["params"])[0][0]


def test_spend_team_bar_drills_to_its_gpus_windows_and_a_gpu(site, browser, span):
    team = biggest_team(site, span)
    open_page(browser, f"{site.url}/spend{span['search']}", "spend")
    until_it_leads_away(browser, lambda: click_category(browser, clickable_chart(browser, "spend", "by-team"), team))
    team_to_gpu_to_window(site, browser, span, team)


def test_utilization_team_box_drills_to_its_gpus_windows_and_a_gpu(site, browser, span):
    team = biggest_team(site, span)
    open_page(browser, f"{site.url}/utilization{span['search']}", "utilization")
    until_it_leads_away(browser, lambda: click_category(browser, clickable_chart(browser, "utilization", "distribution"), team))
    team_to_gpu_to_window(site, browser, span, team)


def test_idle_team_bar_and_row_drill_to_its_gpus_windows_and_a_gpu(site, browser, span):
    team = biggest_team(site, span)
    open_page(browser, f"{site.url}/idle{span['search']}", "idle")
    until_it_leads_away(browser, lambda: click_category(browser, clickable_chart(browser, "idle", "waste"), team))
    team_to_gpu_to_window(site, browser, span, team)
    # the table row's team is a link to the same
    open_page(browser, f"{site.url}/idle{span['search']}", "idle")
    part(browser, "idle", "waste", chart=True)
    click_link(browser, ids.part("idle", "waste"), lambda texts, tr: texts[0] == team, 0)
    wait_url(browser, "/idle", team=team)


def test_utilization_heatmap_cell_and_mig_row_open_the_gpu(site, browser, span):
    open_page(browser, f"{site.url}/utilization{span['search']}&rows=gpu", "utilization")
    cell = until_it_leads_away(browser, lambda: click_heatmap_cell(
        browser, clickable_chart(browser, "utilization", "heatmap"), 0, 1))
    day = cell["x"][:10]
    q = wait_url(browser, "/gpu", gpu_uuid=cell["customdata"][0])
    assert q["from"] == [day] and q["to"] == [day]
    first = site.store.rows(
        "SELECT gpu_uuid, mig_instance FROM gpu_cost_day WHERE day >= {start_day:Date} AND day < {end_day:Date} "
        "GROUP BY pool, host, gpu_uuid, mig_instance ORDER BY pool, host, gpu_uuid, leftPad(mig_instance, 4, '0') LIMIT 1", span["params"])[0]
    assert cell["customdata"] == list(first)
    # pools: a cell opens that pool's environment on the Idle & waste page, that day
    open_page(browser, f"{site.url}/utilization{span['search']}", "utilization")
    cell = until_it_leads_away(browser, lambda: click_heatmap_cell(
        browser, clickable_chart(browser, "utilization", "heatmap"), 0, 1))
    wait_url(browser, "/idle", env=cell["customdata"][0], **{"from": cell["x"][:10], "to": cell["x"][:10]})
    # the MIG table: a MIG instance opens the GPU page for that slice
    open_page(browser, f"{site.url}/utilization{span['search']}", "utilization")
    part(browser, "utilization", "mig")
    parents: list[str] = []

    def child(texts, tr):
        if "parent" in (tr.get_attribute("class") or ""):
            parents.append(texts[0].split()[-1])
        return "child" in (tr.get_attribute("class") or "")
    texts = click_link(browser, ids.part("utilization", "mig"), child, 0)
    assert_gpu_page(browser, parents[-1], texts[0].split()[-1], span)


def test_utilization_search_narrows_the_gpu_lists_and_survives_a_reload(site, browser, span):
    """A link with find= shows only the matching GPUs in both lists and in the box, and again after a reload."""
    host = site.store.rows(
        "SELECT host FROM gpu_cost_day WHERE mig_instance != '' AND day >= {start_day:Date} AND day < {end_day:Date} "
        "GROUP BY host ORDER BY host DESC LIMIT 1", span["params"])[0][0]
    gpus = {r[0] for r in site.store.rows(
        "SELECT DISTINCT gpu_uuid FROM gpu_cost_day WHERE host = {h:String} AND day >= {start_day:Date} "
        "AND day < {end_day:Date}", {**span["params"], "h": host})}
    open_page(browser, f"{site.url}/utilization{span['search']}&rows=gpu&find={host}", "utilization")
    for reload in (False, True):
        if reload:
            browser.refresh()
            open_page(browser, browser.current_url, "utilization")

        def heatmap_gpus(d):
            return d.execute_script("""
                const gd = document.querySelector('#utilization-heatmap .js-plotly-plot');
                const t = gd && gd.data && gd.data.find(tr => tr.type === 'heatmap');
                return t ? t.text.flat().map(c => c.split('\\t')[0]) : null;""")
        wait(browser, lambda d: set(heatmap_gpus(d) or ["?"]) <= gpus, f"the heatmap never narrowed to {host}")
        rows = wait(browser, lambda d: table_rows(part(d, "utilization", "mig")) or False, "no MIG rows")
        parents = [r[0] for r in rows if r and not r[0].startswith("└")]
        assert parents and all(p.startswith(host + " ") for p in parents), parents
        assert wait(browser, lambda d: d.find_element(By.ID, ids.UTIL_SEARCH), "no search box").get_attribute("value") == host


def test_idle_timeline_bar_opens_the_gpu(site, browser, span):
    team = biggest_team(site, span)
    open_page(browser, f"{site.url}/idle{span['search']}&team={team}", "idle")
    timeline = clickable_chart(browser, "idle", "timeline")
    # the first bar with a part inside the plot area: a window that began before the range's first day
    # is drawn from outside the axis, where a click lands on nothing
    target = browser.execute_script("""
        const gd = arguments[0].querySelector('.js-plotly-plot');
        for (const trace of gd.querySelectorAll('.trace.bars')) {
            const data = trace.__data__[0].trace;
            for (const point of trace.querySelectorAll('.point')) {
                const path = point.querySelector('path');
                if (!path) continue;
                path.scrollIntoView({block: 'center'});
                const r = path.getBoundingClientRect(), area = gd.querySelector('.nsewdrag').getBoundingClientRect();
                const left = Math.max(r.left, area.left), right = Math.min(r.right, area.right);
                if (right - left >= 2 && r.height > 0)
                    return [left + Math.min((right - left) / 2, 3), r.top + r.height / 2, data.customdata[point.__data__.i]];
            }
        }
        return null;""", timeline)
    assert target, "no idle window's bar inside the timeline's plot area"
    until_it_leads_away(browser, lambda: click_at(browser, target[0], target[1]) or True)
    wait_url(browser, "/gpu", gpu_uuid=target[2][4])


def test_aggregate_by_regroups_with_totals_from_sql(site, browser, span):
    assert tuple(drill.BY) == queries.BY_KEYS
    params = span["params"]
    # Spend by namespace: GPU cost only, per namespace ('' reads "(none)")
    open_page(browser, f"{site.url}/spend{span['search']}", "spend")
    part(browser, "spend", "by-team", chart=True)
    radio = f"#{ids.aggregate_by('spend')} input[value='namespace']"
    # clicked again until the URL takes it: a click before Dash bound the radio's callback is lost
    wait(browser, lambda d: "by=namespace" in d.current_url or d.find_element(By.CSS_SELECTOR, radio).click(),
         "the aggregate-by radio never reached the URL")
    wait_url(browser, "/spend", by="namespace")
    wait(browser, lambda d: "Spend per namespace" in d.find_element(By.ID, "page-spend").text, "card not regrouped")
    totals = chart_totals(browser, part(browser, "spend", "by-team", chart=True))
    expected = dict(site.store.rows(
        "SELECT if(ns = '', '(none)', ns), sum(c) FROM (SELECT k8s_namespace AS ns, cost_usd AS c FROM gpu_cost_hour "
        "WHERE hour >= {start:DateTime} AND hour < {end:DateTime}) GROUP BY ns", params))
    assert len(expected) > 1 and set(totals) == set(expected)
    for key, usd in expected.items():
        assert totals[key] == pytest.approx(usd, rel=1e-6), key
    assert "GPU cost only" in part(browser, "spend", "by-team", chart=True) \
        .find_element(By.XPATH, "ancestor::section").text
    # Idle & waste by user: the table's waste per user
    open_page(browser, f"{site.url}/idle{span['search']}&by=user", "idle")
    rows = table_rows(part(browser, "idle", "waste", chart=True))
    expected = site.store.rows(
        "SELECT if(user = '', '(none)', user) AS u, sum(idle_allocated_usd + idle_unallocated_usd + unused_usd) AS w "
        "FROM gpu_waste_hour WHERE hour >= {start:DateTime} AND hour < {end:DateTime} GROUP BY u ORDER BY w DESC, u", params)
    assert len(expected) > 1 and [r[0] for r in rows] == [u for u, _ in expected][:50]
    for row, (user, waste) in zip(rows, expected):
        assert row[1] == f"{waste:,.2f}", user
    # Utilization by GPU model: the spread's extremes per model and environment
    open_page(browser, f"{site.url}/utilization{span['search']}&by=model", "utilization")
    boxes = browser.execute_script("""
        const gd = arguments[0].querySelector('.js-plotly-plot'), out = [];
        for (const t of gd.data) Array.from(t.x).forEach((x, j) => out.push([x, t.name, t.lowerfence[j], t.upperfence[j]]));
        return out;""", part(browser, "utilization", "distribution", chart=True))
    expected = site.store.rows(
        "SELECT model, environment, min(u), max(u) FROM (SELECT toDate(hour) AS d, model, environment, host, gpu_uuid, "
        "mig_instance, 100 * sum(utilized_gpu_hours) / sum(gpu_hours) AS u FROM gpu_cost_hour WHERE held "
        "AND hour >= {start:DateTime} AND hour < {end:DateTime} GROUP BY d, model, environment, host, gpu_uuid, "
        "mig_instance HAVING sum(gpu_hours) > 0) GROUP BY model, environment", params)
    assert len(expected) > 1
    assert sorted((m, e) for m, e, _, _ in boxes) == sorted((m, e) for m, e, _, _ in expected)
    got = {(m, e): (lo, hi) for m, e, lo, hi in boxes}
    for model, env, lo, hi in expected:
        assert got[(model, env)] == (pytest.approx(lo), pytest.approx(hi)), (model, env)


def test_toggles_live_in_the_url_and_survive_a_reload(site, browser, span):
    open_page(browser, f"{site.url}/utilization{span['search']}", "utilization")
    part(browser, "utilization", "heatmap", chart=True)
    choose(browser, f"#{ids.UTIL_ROWS} input[value='gpu']")
    wait_url(browser, "/utilization", rows="gpu")
    choose(browser, f"#{ids.aggregate_by('utilization')} input[value='job']")
    wait_url(browser, "/utilization", rows="gpu", by="job")
    # a filter change keeps them
    pick(browser, ids.filter_control("env", "utilization"), "onprem")
    q = wait_url(browser, "/utilization", rows="gpu", by="job", env="onprem")
    assert q["from"] == [span["from"]]
    url = browser.current_url
    browser.refresh()
    open_page(browser, url, "utilization")
    heatmap = part(browser, "utilization", "heatmap", chart=True)
    checked = browser.find_element(By.CSS_SELECTOR, f"#{ids.UTIL_ROWS} input:checked").get_attribute("value")
    assert checked == "gpu"
    rows = browser.execute_script("return arguments[0].querySelector('.js-plotly-plot').data[0].text.length",
                                  heatmap)
    gpus = site.store.rows("SELECT uniqExact(host, gpu_uuid, mig_instance) FROM gpu_cost_day WHERE environment = 'onprem' "
                           "AND day >= {start_day:Date} AND day < {end_day:Date}", span["params"])[0][0]
    assert rows == min(gpus, 200)
    assert browser.find_element(By.CSS_SELECTOR, f"#{ids.aggregate_by('utilization')} input:checked") \
        .get_attribute("value") == "job"
    assert "Utilization per job and environment" in browser.find_element(By.ID, "page-utilization").text
    # back to the defaults: left out of the URL
    choose(browser, f"#{ids.UTIL_ROWS} input[value='pool']")
    wait(browser, lambda d: "rows" not in query(d)[1] and query(d)[1].get("by") == ["job"], "rows=pool not dropped")
    for page in ("spend", "idle"):
        open_page(browser, f"{site.url}/{page}{span['search']}&by=environment", page)
        part(browser, page, "by-team" if page == "spend" else "waste", chart=True)
        browser.refresh()
        open_page(browser, browser.current_url, page)
        assert query(browser)[1]["by"] == ["environment"]
        assert browser.find_element(By.CSS_SELECTOR, f"#{ids.aggregate_by(page)} input:checked") \
            .get_attribute("value") == "environment"
        body = part(browser, page, "by-team" if page == "spend" else "waste", chart=True)
        xs = browser.execute_script("return Array.from(arguments[0].querySelector('.js-plotly-plot').data[0].x)", body)
        envs = {e for e, in site.store.rows("SELECT DISTINCT environment FROM gpu_cost_day WHERE day >= {start_day:Date} "
                                              "AND day < {end_day:Date}", span["params"])}
        assert set(xs) <= envs and xs
