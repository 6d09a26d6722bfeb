"""The links in alert notifications (alerts.grouping.alert_url), built from the demo's own rows and
followed in Chromium: each opens its page with exactly the alert's filters applied. Independent of
which alerts the demo fires: the labels are made from the store's rows, as the rules make them."""
from __future__ import annotations

from datetime import datetime, timezone
from urllib.parse import parse_qs, urlparse

import pytest
from selenium.webdriver.common.by import By

from alerts.config import AlertsConfig
from alerts.grouping import alert_url
from alerts.rules import builtin_rules
from dashboard import ids
from dashboard.components import money
from tests.dashboard.browser import by_json_id, open_page, part, pick, table_rows, text, wait
from tests.dashboard.test_pages import window

pytestmark = pytest.mark.usefixtures("no_console_errors")
# OFFENDER_COLUMNS of dashboard/pages/idle.py: the windows tables
TEAM, HOST, GPU, MIG, START = 0, 3, 4, 5, 8


@pytest.fixture(scope="module")
def rules():
    return {r.name: r for r in builtin_rules(AlertsConfig())}


@pytest.fixture(scope="module")
def idle_window(site):
    """A real idle window (on a MIG instance when the demo has one), as gpu_idle_window labels it."""
    df = site.store.query_df(
        "SELECT host, gpu_uuid, mig_instance, team, environment, start, end, cost_usd, "
        "formatDateTime(start, '%Y-%m-%dT%H:%i:%SZ', 'UTC') AS window_start, "
        "formatDateTime(end, '%Y-%m-%dT%H:%i:%SZ', 'UTC') AS window_end "
        "FROM v_idle_waste ORDER BY mig_instance = '', cost_usd DESC, start LIMIT 1")
    assert not df.empty, "the demo has no idle windows"
    return df.iloc[0]


def facts(driver, element_id: str) -> dict[str, str]:
    """A <dl> of the focus card as {label: value}."""
    dl = wait(driver, lambda d: d.find_elements(By.ID, element_id), f"no #{element_id}")[0]
    return dict(zip([dt.text for dt in dl.find_elements(By.TAG_NAME, "dt")],
                    [dd.text for dd in dl.find_elements(By.TAG_NAME, "dd")]))


def control_values(driver, page: str, name: str) -> str:
    return by_json_id(driver, ids.filter_control(name, page)).text.strip()


def query_of(url: str) -> dict:
    return parse_qs(urlparse(url).query)


def test_an_idle_window_link_focuses_the_idle_page_on_that_gpu_and_window(site, browser, rules, idle_window):
    w = idle_window
    labels = {"team": w["team"], "environment": w["environment"], "gpu_uuid": w["gpu_uuid"],
              "mig_instance": w["mig_instance"], "window_start": w["window_start"], "host": w["host"]}
    url = alert_url(site.url, rules["gpu_idle_window"].page, labels, {"window_end": w["window_end"]},
                    datetime.now(timezone.utc).date())
    assert query_of(url)["gpu"] == [w["gpu_uuid"]] and query_of(url)["window"] == [w["window_start"]]
    open_page(browser, url, "idle")
    part(browser, "idle", "focus")
    assert text(browser, ids.notes("idle")) == ""                       # every parameter understood
    assert w["gpu_uuid"] in text(browser, ids.IDLE_FOCUS_BANNER)
    gpu = facts(browser, ids.IDLE_FOCUS_GPU)
    assert gpu["GPU"] == w["gpu_uuid"] and gpu["host"] == w["host"]
    if w["mig_instance"]:
        assert gpu["MIG"].split()[0] == w["mig_instance"]
    window = facts(browser, ids.IDLE_FOCUS_WINDOW)
    assert window["start"] == f"{w['start']:%Y-%m-%d %H:%M:%S} UTC" and window["cost"] == money(w["cost_usd"])
    assert window["team"] == w["team"]
    listed = table_rows(browser.find_element(By.ID, ids.IDLE_FOCUS_WINDOWS))
    assert listed and {(r[GPU], r[MIG]) for r in listed} == {(w["gpu_uuid"], w["mig_instance"])}
    assert f"{w['start']:%Y-%m-%d %H:%M}" in [r[START] for r in listed]
    marked = browser.find_elements(By.CSS_SELECTOR, f"#{ids.IDLE_FOCUS_WINDOWS} tr.marked")
    assert len(marked) == 1 and f"{w['start']:%Y-%m-%d %H:%M}" in marked[0].text
    # the rest of the page is narrowed to that GPU entity and the window's team, environment and days
    offenders = table_rows(part(browser, "idle", "offenders"))
    assert offenders and {(r[GPU], r[MIG], r[TEAM]) for r in offenders} == {(w["gpu_uuid"], w["mig_instance"], w["team"])}
    gpus = table_rows(part(browser, "idle", "waste-gpus"))
    assert gpus and {(r[2], r[3]) for r in gpus} == {(w["gpu_uuid"], w["mig_instance"])}
    assert control_values(browser, "idle", "team") == w["team"]
    assert control_values(browser, "idle", "env") == w["environment"]
    assert f"{w['start']:%Y-%m-%d} to" in control_values(browser, "idle", "range")
    # the other pages do not get the focus; a filter change on this page keeps it
    assert "gpu" not in query_of(browser.find_element(By.ID, "nav-spend").get_attribute("href"))
    pick(browser, ids.filter_control("range", "idle"), "30d")
    wait(browser, lambda d: query_of(d.current_url).get("range") == ["30d"], "the URL never got range=30d")
    assert query_of(browser.current_url)["gpu"] == [w["gpu_uuid"]]
    wait(browser, lambda d: d.find_elements(By.ID, ids.IDLE_FOCUS_BANNER) and "Last 30 days" in d.page_source,
         "the focus was lost")
    offenders = table_rows(part(browser, "idle", "offenders"))
    assert offenders and {(r[GPU], r[MIG]) for r in offenders} == {(w["gpu_uuid"], w["mig_instance"])}
    browser.find_element(By.ID, ids.IDLE_FOCUS_CLEAR).click()
    wait(browser, lambda d: "gpu" not in query_of(d.current_url) and not d.find_elements(By.ID, ids.IDLE_FOCUS_BANNER),
         "clear did not drop the focus")
    assert query_of(browser.current_url)["team"] == [w["team"]]


def test_a_window_that_matches_nothing_and_bad_values_get_notes(site, browser, idle_window):
    w = idle_window
    open_page(browser, f"{site.url}/idle?gpu={w['gpu_uuid']}&mig={w['mig_instance']}&window=2001-01-01T00:00:00Z",
              "idle")
    note = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f"#{ids.part('idle', 'focus')} .note"),
                "no note about the window")[0]
    assert "No idle window of" in note.text and "2001-01-01 00:00:00 UTC" in note.text
    assert facts(browser, ids.IDLE_FOCUS_GPU)["GPU"] == w["gpu_uuid"]         # the GPU is still shown
    before = site.store.rows("SELECT count() FROM idle_windows")[0][0]
    open_page(browser, f"{site.url}/idle?gpu=x%27%20OR%201%3D1%20--&window=yesterday&mig={'9' * 500}", "idle")
    notes = text(browser, ids.notes("idle"))
    assert "window 'yesterday' ignored" in notes and "500 characters ignored" in notes
    assert "No GPU x' OR 1=1 -- in the store" in part(browser, "idle", "focus").text
    assert part(browser, "idle", "offenders").find_elements(By.CSS_SELECTOR, ".empty.no-match")
    assert site.store.rows("SELECT count() FROM idle_windows")[0][0] == before
    open_page(browser, f"{site.url}/idle?window={w['window_start']}", "idle")
    assert "they need gpu" in text(browser, ids.notes("idle")) and not browser.find_elements(By.ID, ids.IDLE_FOCUS_BANNER)


@pytest.mark.parametrize("rule, page", [("team_budget_exceeded", "spend"), ("team_utilization_low", "idle")])
def test_a_team_link_filters_its_page_to_the_team(site, browser, rules, idle_window, rule, page):
    team = idle_window["team"] if idle_window["team"] != "unallocated" else \
        site.store.rows("SELECT team FROM v_idle_waste WHERE kind = 'allocated' ORDER BY cost_usd DESC LIMIT 1")[0][0]
    url = alert_url(site.url, rules[rule].page, {"team": team, "alertname": rule})
    assert url == f"{site.url}/{page}?team={team}"
    open_page(browser, url, page)
    if page == "spend":
        tables = [table_rows(part(browser, "spend", "budget", chart=True))]
        chart = part(browser, "spend", "by-team", chart=True).text
        others = {t for t, in site.store.rows("SELECT DISTINCT team FROM team_spend_day")} - {team}
        assert team in chart and not [t for t in others if t in chart.split()]
    else:
        tables = [table_rows(part(browser, "idle", name)) for name in ("waste", "waste-gpus", "offenders")]
    assert control_values(browser, page, "team") == team
    assert all(tables) and {r[0] for rows in tables for r in rows} == {team}


def test_a_compliance_link_filters_to_its_environment(site, browser, rules):
    team, env = site.store.rows("SELECT team, environment FROM v_compliance_open WHERE environment != '' "
                                "ORDER BY team = '', policy LIMIT 1")[0]
    labels = {"environment": env, **({"team": team} if team else {})}
    url = alert_url(site.url, rules["compliance_residency"].page, labels)
    open_page(browser, url, "compliance")
    matrix = part(browser, "compliance", "runtime")
    assert control_values(browser, "compliance", "env") == env
    assert control_values(browser, "compliance", "team") == team
    pools = [th.text for th in matrix.find_elements(By.CSS_SELECTOR, "tbody th")]
    assert pools and all(p.startswith(f"{env} · ") for p in pools)
    shown = part(browser, "compliance", "findings").find_elements(By.CSS_SELECTOR, "details.finding")
    expected, = site.store.rows("SELECT count() FROM v_compliance_open WHERE environment = {e:String} "
                                "AND (team = {t:String} OR {t:String} = '') AND last_seen >= {start:DateTime}",
                                {"e": env, "t": team, "start": window()["start"]})[0]
    assert len(shown) == expected >= 1


def test_the_group_link_opens_the_alerts_page(site, browser):
    url = alert_url(site.url, "alerts", {})
    assert url == f"{site.url}/alerts"
    open_page(browser, url, "alerts")
    part(browser, "alerts", "firing")
    assert text(browser, ids.notes("alerts")) == ""
    assert control_values(browser, "alerts", "team") in ("", "All teams")
