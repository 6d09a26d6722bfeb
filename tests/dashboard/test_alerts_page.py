"""The Alerts page in Chromium: each firing alert's value, unit, active since, owner and delivery
checked against the store's rows (read here with SQL of their own), the tables fit a 1600 px window
without sideways scrolling, and a new silence previews the alerts it would match before it is
saved, then shows them as silenced (by whom, until when). Every silence made here is expired again."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, urlparse

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from alerts.config import AlertsConfig
from alerts.delivery.retry import ATTEMPT_COLUMNS
from alerts.evaluate import with_unit
from alerts.outbox import OutboxEntry, write
from alerts.rules import builtin_rules
from alerts.silences import expire_silence, list_silences
from dashboard import ids
from dashboard.reader import RECENT_S
from tests.dashboard.browser import open_page, part, screenshot, wait

pytestmark = pytest.mark.usefixtures("no_console_errors")
HEADERS = ["severity", "alert", "status", "value", "unit", "active since", "owner", "GPU", "delivered", "summary"]


def firing(site) -> dict[str, dict]:
    """{fingerprint: row} of the firing alerts, straight from alert_state."""
    df = site.store.query_df(
        "SELECT fingerprint, rule, value, active_since, labels['team'] AS team, labels['gpu_uuid'] AS gpu_uuid, "
        "labels['mig_instance'] AS mig_instance, labels['host'] AS host, labels "
        "FROM alert_state FINAL WHERE state = 'firing'")
    assert not df.empty, "the demo fires no alert"
    return {r["fingerprint"]: r for r in df.to_dict("records")}


@pytest.fixture(scope="module")
def notified(site):
    """One firing alert notified on two channels (delivered on one, failed with HTTP 503 on the
    other), recorded in the outbox and the attempts as the deliverer records them; neither is pending,
    so no later delivery round sends them."""
    fp, row = sorted(firing(site).items(), key=lambda kv: (kv[1]["rule"], kv[0]))[0]
    at = max(datetime.now(timezone.utc), row["active_since"].replace(tzinfo=timezone.utc) + timedelta(seconds=1))
    write(site.store, [
        OutboxEntry("test-alerts-page-ok", "ops-slack", "{}", "firing", [fp], [], "{}", "delivered", at, at,
                    at + timedelta(seconds=2), 1, ""),
        OutboxEntry("test-alerts-page-bad", "finance-hook", "{}", "firing", [fp], [], "{}", "failed", at, at,
                    None, 3, "HTTP 503 from the receiver")])
    site.store.insert("alert_delivery_attempts", [[at + timedelta(seconds=3), "test-alerts-page-bad", "finance-hook",
                                                   3, False, 503, "HTTP 503 from the receiver", 0.0, 12.0]],
                      ATTEMPT_COLUMNS)
    time.sleep(RECENT_S + 0.5)                     # the page's cached alert rows are at most RECENT_S old
    return fp


def rows_by_fingerprint(browser) -> dict:
    card = part(browser, "alerts", "firing")
    return {tr.get_attribute("data-fingerprint"): tr for tr in card.find_elements(By.CSS_SELECTOR, "table.data tbody tr")}


def cells(tr) -> dict[str, object]:
    return dict(zip(HEADERS, tr.find_elements(By.TAG_NAME, "td")))


def test_firing_alerts_show_value_unit_active_since_owner_gpu_and_delivery(site, browser, notified, screenshots_dir):
    expected = firing(site)
    units = {r.name: r.unit for r in builtin_rules(AlertsConfig())}
    contacts = dict(site.store.rows("SELECT team, contact FROM config_teams WHERE contact != ''"))
    sent = {}
    for fp, channel, status, attempts, code in site.store.rows(
            "SELECT fp, n.channel, argMax(n.status, n.created_at), argMax(n.attempts, n.created_at), "
            "any(a.status_code) FROM alert_notifications AS n FINAL ARRAY JOIN n.firing AS fp "
            "LEFT JOIN (SELECT key, argMax(status_code, ts) AS status_code FROM alert_delivery_attempts GROUP BY key) "
            "AS a ON a.key = n.key GROUP BY fp, n.channel"):
        sent.setdefault(fp, {})[channel] = (status, attempts, code)
    assert set(sent[notified]) == {"ops-slack", "finance-hook"}
    open_page(browser, site.url + "/alerts?range=7d", "alerts")
    head = part(browser, "alerts", "firing").find_elements(By.CSS_SELECTOR, "table.data thead th")
    assert [th.text for th in head] == HEADERS
    shown = rows_by_fingerprint(browser)
    assert set(shown) == set(expected)
    for fp, want in expected.items():
        got = cells(shown[fp])
        assert got["alert"].text == want["rule"]
        unit = units[want["rule"]]
        assert got["unit"].text == unit
        value = got["value"].text if unit == "USD" else f"{got['value'].text} {unit}".strip()
        assert value == with_unit(want["value"], unit)
        assert got["active since"].text == f"{want['active_since']:%Y-%m-%d %H:%M}"
        if want["team"]:
            link = got["owner"].find_element(By.TAG_NAME, "a")
            assert link.text == want["team"]
            url = urlparse(link.get_attribute("href"))
            assert url.path == "/idle" and parse_qs(url.query) == {"range": ["7d"], "team": [want["team"]]}
            contact = contacts.get(want["team"], "")
            assert (f"pages {contact}" in got["owner"].text) if contact else "pages" not in got["owner"].text
        else:
            assert got["owner"].text == "–"
        if want["gpu_uuid"]:
            url = urlparse(got["GPU"].find_element(By.TAG_NAME, "a").get_attribute("href"))
            query = parse_qs(url.query)
            assert url.path == "/gpu" and query["gpu_uuid"] == [want["gpu_uuid"]] and query["range"] == ["7d"]
            assert query.get("mig_instance", [""]) == [want["mig_instance"]]
        else:
            assert got["GPU"].text == "–"
        lines = got["delivered"].text.splitlines()
        if fp not in sent:
            assert lines == ["not sent"]
            continue
        assert len(lines) == len(sent[fp])
        for channel, (status, attempts, code) in sent[fp].items():
            line = next(ln for ln in lines if ln.startswith(f"{channel}: "))
            assert line.split(": ", 1)[1].startswith("delivered" if status == "delivered" else
                                                      f"failed after {attempts} attempts" if status == "failed" else
                                                      "queued")
            assert (f"HTTP {code}" in line) == (status != "delivered" and bool(code))
    screenshot(browser, screenshots_dir, "alerts")


def test_the_alert_tables_fit_a_1600px_window(site, browser):
    browser.set_window_size(1600, 1000)
    try:
        open_page(browser, site.url + "/alerts", "alerts")
        for name in ("firing", "pending", "resolved", "history"):
            part(browser, "alerts", name)
        assert browser.execute_script("return document.scrollingElement.scrollWidth <= "
                                      "document.scrollingElement.clientWidth")
        table = part(browser, "alerts", "firing").find_element(By.CSS_SELECTOR, "table.data")
        assert browser.execute_script("const b = arguments[0].closest('.card-body'); "
                                      "return b.scrollWidth <= b.clientWidth", table)
    finally:
        browser.set_window_size(1440, 1000)


def type_matchers(browser, text: str) -> None:
    box = browser.find_element(By.ID, ids.SILENCE_MATCHERS)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.DELETE)
    box.send_keys(text)


def preview_fingerprints(browser) -> set[str] | None:
    items = browser.find_elements(By.CSS_SELECTOR, f"#{ids.SILENCE_PREVIEW_LIST} li")
    return {li.get_attribute("data-fingerprint") for li in items} or None


def test_a_new_silence_previews_its_alerts_then_shows_them_silenced(site, browser, notified):
    alerts = firing(site)
    target = next((r for fp, r in sorted(alerts.items(), key=lambda kv: kv[1]["rule"])
                   if r["host"] and fp != notified), None)
    assert target is not None, "no firing alert with a host label"
    matchers = f"alertname={target['rule']}\nhost={target['host']}"
    expected = {fp for fp, in site.store.rows(
        "SELECT fingerprint FROM alert_state FINAL WHERE state = 'firing' AND labels['alertname'] = {r:String} "
        "AND labels['host'] = {h:String}", {"r": target["rule"], "h": target["host"]})}
    assert notified not in expected           # its deliveries would be listed instead of "not sent: silenced"
    open_page(browser, site.url + "/alerts", "alerts")
    part(browser, "alerts", "firing")
    type_matchers(browser, matchers)
    assert wait(browser, lambda d: preview_fingerprints(d) == expected and preview_fingerprints(d),
                "the preview never listed the matching alert")
    type_matchers(browser, "alertname=no_such_alert_anywhere")
    warning = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f"#{ids.SILENCE_PREVIEW} .alerts-preview-none"),
                   "no warning for matchers that match nothing")[0]
    assert "match none" in warning.text and not preview_fingerprints(browser)
    type_matchers(browser, matchers)
    wait(browser, lambda d: preview_fingerprints(d) == expected, "the preview did not come back")
    browser.find_element(By.ID, ids.SILENCE_COMMENT).send_keys("alerts page test")
    browser.find_element(By.ID, ids.SILENCE_CREATE).click()
    message = wait(browser, lambda d: "created" in d.find_element(By.ID, ids.SILENCE_MESSAGE).text and
                   d.find_element(By.ID, ids.SILENCE_MESSAGE).text, "no silence created")
    sid = message.split()[1]
    try:
        made = {s.id: s for s in list_silences(site.store, datetime.now(timezone.utc))}[sid]
        assert made.created_by == "lead"
        until = f"{made.ends_at:%Y-%m-%d %H:%M}"
        for fp in expected:
            row = wait(browser, lambda d, fp=fp: "silenced" in (rows_by_fingerprint(d)[fp].get_attribute("class") or "")
                       and rows_by_fingerprint(d)[fp], "the silenced alert is not marked")
            assert cells(row)["status"].text == f"firing, silenced by lead until {until}"
            assert cells(row)["delivered"].text == "not sent: silenced"
        others = {fp: tr for fp, tr in rows_by_fingerprint(browser).items() if fp not in expected}
        assert len(others) == len(alerts) - len(expected)            # still listed, not hidden
        assert all("silenced" not in cells(tr)["status"].text for tr in others.values())
    finally:
        expire_silence(site.store, sid, now=datetime.now(timezone.utc), author="lead")
    assert sid not in {s.id for s in list_silences(site.store, datetime.now(timezone.utc))}
