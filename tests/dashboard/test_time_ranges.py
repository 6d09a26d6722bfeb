"""Time as people mean it (issue #17): the hour-exact "Last 24 hours" reads the hourly tables, the
month presets and the date-range picker survive a reload, the budget card follows the selected
month and obeys the environment filter, and auto-refresh is kept in the URL. Expected figures
come from SQL written here over the hourly / daily tables, not from the queries the pages run."""
from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta, timezone

import pandas as pd
import pytest
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By

from dashboard import queries
from dashboard.filters import Filters, parse
from tests.dashboard.browser import open_page, part, pick, table_rows, text, wait
from tests.helpers import ROOT


def clock() -> datetime:
    """The site's clock (naive UTC): the site is mounted with the real clock."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


WINDOWED = sorted(p.stem for p in (ROOT / "sql" / "queries").glob("*.sql")
                  if re.search(r"__GPU_(COST|UTIL|WASTE)__", p.read_text()))


def test_every_windowed_query_reads_the_same_rows_hourly_over_whole_days(demo):
    """The resolution is safe: on whole days, each query that reads the window's rows returns the
    same from the hourly rollups as from the daily ones."""
    today = demo.end.date()
    f = Filters(today - timedelta(days=3), today + timedelta(days=1), now=demo.end.replace(tzinfo=None))
    extra = {"limit": 500, "gpu": "", "mig": "", "by": "job", "search": "", "max_gpus": 1000}
    assert len(WINDOWED) >= 7
    for daily in WINDOWED:
        a = demo.store.query_df(queries.query_sql(daily, daily=True), {**f.params(), **extra})
        b = demo.store.query_df(queries.query_sql(daily, daily=False), {**f.params(), **extra})
        assert not a.empty, daily
        key = [c for c in a.columns if not pd.api.types.is_numeric_dtype(a[c])]
        for df in (a, b):   # groupUniqArray lists (users, jobs) come in any order
            for c in key:
                df[c] = df[c].map(lambda v: " ".join(sorted(v.split(" "))) if isinstance(v, str) else v)
        if key:
            a, b = a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-6, obj=daily)


def test_last_24_hours_reads_exactly_the_hourly_window(demo):
    now = demo.end.astimezone(timezone.utc).replace(tzinfo=None) if demo.end.tzinfo else demo.end
    if now.hour == 23:           # the 24 hours up to midnight are one whole UTC day: take an hour earlier
        now -= timedelta(hours=1)
    f = parse({"range": "1d", "env": "aws"}, now)
    assert not f.whole_days and not queries.whole_days(f.params())
    assert "FROM gpu_cost_hour" in queries.query_sql("fleet", daily=False)
    assert "FROM gpu_cost_hour" not in queries.query_sql("fleet")
    end = datetime(now.year, now.month, now.day, now.hour) + timedelta(hours=1)
    hours, cost = demo.store.rows(
        "SELECT sum(gpu_hours), sum(cost_usd) FROM gpu_cost_hour WHERE hour >= {s:DateTime} AND hour < {e:DateTime} "
        "AND environment = 'aws'", {"s": end - timedelta(hours=24), "e": end})[0]
    fleet = queries.fleet(demo.store, f)
    assert hours > 0 and fleet["total_gpu_hours"].sum() == pytest.approx(hours)
    assert fleet["total_cost_usd"].sum() == pytest.approx(cost)
    whole_today = parse({"from": str(f.start), "to": str(f.end - timedelta(days=1)), "env": "aws"}, now)
    assert queries.fleet(demo.store, whole_today)["total_gpu_hours"].sum() > hours   # two whole days hold more
    waste = queries.waste_by_team(demo.store, f)
    w, = demo.store.rows("SELECT sum(cost_usd) FROM gpu_waste_hour WHERE hour >= {s:DateTime} AND hour < {e:DateTime} "
                         "AND environment = 'aws'", {"s": end - timedelta(hours=24), "e": end})[0:1]
    assert waste["spend_usd"].sum() == pytest.approx(w[0])
    assert "whole UTC days" in queries.whole_days_note(f, "spend") and not queries.whole_days_note(whole_today, "spend")


def expected_budget(store, month: date, today: date, envs=()) -> dict[str, tuple[float, float]]:
    """{team: (spend in month, forecast)} from team_spend_day, as documented in docs/dashboard.md."""
    following = (month.replace(day=28) + timedelta(days=4)).replace(day=1)
    rows = store.rows("SELECT team, sum(cost) FROM team_spend_day WHERE currency = 'USD' AND day >= {a:Date} "
                      "AND day < {b:Date} AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment)) "
                      "GROUP BY team", {"a": month, "b": following, "envs": list(envs)})
    out = {team: (spend, spend) for team, spend in rows if spend}
    if month == today.replace(day=1):
        recent = dict(store.rows("SELECT team, sum(cost) / 7 FROM team_spend_day WHERE currency = 'USD' "
                                 "AND day >= {a:Date} AND day < {b:Date} AND (empty({envs:Array(String)}) OR "
                                 "has({envs:Array(String)}, environment)) GROUP BY team",
                                 {"a": today - timedelta(days=7), "b": today, "envs": list(envs)}))
        days_left = (following - today).days
        out = {t: (s, s + recent.get(t, 0) * days_left) for t, (s, _) in out.items()}
    return out


def test_the_budget_follows_the_month_and_the_environment(demo):
    now = clock()
    for args in ({"range": "last-month"}, {"range": "mtd", "env": "aws"}, {"range": "30d", "env": "onprem"}):
        f = parse(args, now)
        got = queries.budget(demo.store, f).set_index("team")
        want = expected_budget(demo.store, f.budget_month, now.date(), f.envs)
        assert want, args
        for team, (spend, forecast) in want.items():
            assert got.loc[team, "spend_mtd_usd"] == pytest.approx(spend), (args, team)
            assert got.loc[team, "forecast_usd"] == pytest.approx(forecast), (args, team)
        assert bool(got["current_month"].all()) == (args["range"] != "last-month")


def search(browser) -> str:
    return browser.execute_script("return window.location.search")


def window_text(browser, page: str) -> str:
    """The filter bar's window line (its id is a JSON pattern id, so no CSS selector can name it)."""
    key = json.dumps({"type": "gl-filter", "name": "window", "page": page}, separators=(",", ":"), sort_keys=True)
    return browser.execute_script("const e = document.getElementById(arguments[0]); return e ? e.textContent : ''", key)


def type_day(browser, box_id: str, day: date, written, tries: int = 3) -> None:
    """Type ``day`` into the date box ``box_id`` until ``written(browser)`` holds. The box is found
    again for each try: keys typed while Dash re-renders the filter bar (each day typed re-renders
    the page) land in a box that is then replaced, as a click does in ``pick``."""
    def box(d):
        return d.execute_script("return document.getElementById(arguments[0])", box_id)

    for attempt in range(1, tries + 1):
        try:
            field = wait(browser, box, f"no {box_id}")
            field.click()
            field.send_keys("\ue009a")   # ctrl+a
            field.send_keys(str(day) + "\ue007\ue004")   # Enter, Tab
            wait(browser, written, "", timeout=15)
            return
        except (TimeoutException, StaleElementReferenceException):
            if attempt == tries:
                value = browser.execute_script("const e = document.getElementById(arguments[0]); return e && e.value", box_id)
                raise AssertionError(f"the picker never wrote {day} in {tries} tries: {search(browser)}, "
                                     f"box {box_id} holds {value}") from None


@pytest.mark.usefixtures("no_console_errors")
def test_last_month_and_a_picked_range_survive_a_reload(site, browser):
    open_page(browser, site.url + "/spend?range=7d&team=llm-finetune&rows=gpu", "spend")
    pick(browser, {"type": "gl-filter", "name": "range", "page": "spend"}, "last-month")
    wait(browser, lambda d: "range=last-month" in search(d), "the URL never took range=last-month")
    assert "team=llm-finetune" in search(browser) and "rows=gpu" in search(browser)   # other params kept
    f = parse({"range": "last-month"}, clock())
    browser.refresh()
    wait(browser, lambda d: d.find_elements(By.ID, "page-spend"), "the page never came back after a reload")
    budget = {r[0]: r for r in table_rows(part(browser, "spend", "budget", chart=True))}
    assert window_text(browser, "spend").startswith(f"{f.start} to {f.end - timedelta(days=1)}")
    assert browser.find_element(By.CSS_SELECTOR, "#spend-budget").find_element(
        By.XPATH, "./ancestor::section//h2").text == f"{f.budget_month:%B %Y}: spend, forecast and budget"
    want = expected_budget(site.store, f.budget_month, clock().date(), ())
    assert budget["llm-finetune"][2] == f"{want['llm-finetune'][0]:,.2f}"
    # a fixed window from the date-range picker: type both days
    first, last = f.start + timedelta(days=2), f.start + timedelta(days=9)
    picker = json.dumps({"type": "gl-filter", "name": "dates", "page": "spend"}, separators=(",", ":"), sort_keys=True)
    for box_id, day in ((picker, first), (picker + "-end-date", last)):   # Dash 4: the start box has the picker's id
        type_day(browser, box_id, day, lambda d, day=day: f"from={first}" in search(d) and (day == first or f"to={last}" in search(d)))
        wait(browser, lambda d: window_text(d, "spend").startswith(f"{first} to "), "the page never showed the day typed")
    assert "range=" not in search(browser)
    browser.refresh()
    wait(browser, lambda d: d.find_elements(By.ID, "page-spend"), "the page never came back after a reload")
    wait(browser, lambda d: window_text(d, "spend").startswith(f"{first} to {last}"), "the picked window was lost")


@pytest.mark.usefixtures("no_console_errors")
def test_last_24_hours_in_the_browser_and_refresh_in_the_url(site, browser):
    open_page(browser, site.url + "/?range=1d&refresh=1m", "overview")
    now = clock()
    end = datetime(now.year, now.month, now.day, now.hour) + timedelta(hours=1)
    hours, = site.store.rows("SELECT sum(gpu_hours) FROM gpu_cost_hour WHERE hour >= {s:DateTime} AND hour < {e:DateTime}",
                             {"s": end - timedelta(hours=24), "e": end})[0]
    part(browser, "overview", "tiles")
    assert f"of {hours:,.0f} GPU-hours" in text(browser, "overview-tile-utilization")
    assert "Times in UTC" in text(browser, "gl-timezone")
    client = site.platform.web.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = site.auth
    layout = str(client.get("/_dash-layout").get_json())
    assert "'id': 'gl-refresh-timer'" in layout and "'type': 'Interval'" in layout
    assert "refresh=1m" in search(browser)
    nav = browser.find_element(By.ID, "nav-spend").get_attribute("href")
    assert "refresh=1m" in nav and "range=1d" in nav
    browser.refresh()
    open_page(browser, browser.current_url, "overview")
    wait(browser, lambda d: "every minute" in text(d, "gl-refresh"), "the refresh choice was not shown from the URL")
    assert "refresh=1m" in search(browser)


def test_the_waste_tile_follows_the_budget_month(demo):
    """The Overview's waste (sql/queries/waste_month.sql) is the budget month's, by the documented formula
    summed from gpu_waste_hour."""
    now = clock()
    for args in ({"range": "last-month"}, {"range": "mtd", "env": "aws"}):
        f = parse(args, now)
        alloc, unalloc, unused = demo.store.rows(
            "SELECT sum(idle_allocated_usd), sum(idle_unallocated_usd), sum(unused_usd) FROM gpu_waste_hour "
            "WHERE toStartOfMonth(hour) = {m:Date} AND (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))",
            {"m": f.budget_month, "envs": list(f.envs)})[0]
        got = queries.waste_month(demo.store, f)
        assert alloc + unalloc + unused > 0, args
        assert got["waste_usd"].sum() == pytest.approx(alloc + unalloc + unused), args


def test_idle_cost_per_team_counts_the_part_of_a_window_inside_the_range(demo):
    """The Idle & waste page's "Cost wasted per team / pool" are the idle parts of its waste per team
    in the same range: a window crossing the range's edge counts only its part inside (they added
    the whole window), while the timeline and the worst offenders list each window whole."""
    rows = demo.store.rows("SELECT toDate(start), cost_usd FROM idle_windows WHERE toDate(end) > toDate(start) "
                           "AND end < {e:DateTime64(3)} ORDER BY cost_usd DESC LIMIT 1", {"e": demo.end.replace(tzinfo=None)})
    assert rows, "the demo has no idle window across midnight to cut"
    (last_day, _), now = rows[0], demo.end.replace(tzinfo=None)
    f = parse({"from": str(last_day - timedelta(days=2)), "to": str(last_day)}, now)   # ends inside the window
    inside = queries.idle_by_owner(demo.store, f)
    waste = queries.waste_by_team(demo.store, f)
    for team, group in inside.groupby("team"):
        row = waste[waste["team"] == team]
        assert group["cost_usd"].sum() == pytest.approx(float((row["idle_allocated_usd"] + row["idle_unallocated_usd"]).sum())), team
    assert inside["cost_usd"].sum() == pytest.approx((waste["idle_allocated_usd"] + waste["idle_unallocated_usd"]).sum())
    whole = queries.idle_windows(demo.store, f, limit=100_000)
    assert whole["cost_usd"].sum() > inside["cost_usd"].sum() + 0.01       # the cut window, whole
    assert inside["windows"].sum() == len(whole)
    assert inside["idle_gpu_hours"].sum() < whole["gpu_hours"].sum()
