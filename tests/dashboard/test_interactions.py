"""Using the dashboard in Chromium: filters change the URL and the charts, a link reproduces the
view, a CSV downloads the table behind a chart, silences are created and expired, and hostile
URL values do no harm."""
from __future__ import annotations

import csv
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, quote, urlparse

import pytest
from selenium.webdriver.common.by import By

from alerts.silences import list_silences
from dashboard import ids
from tests.dashboard.browser import by_json_id, open_page, part, pick, table_rows, text, wait

pytestmark = pytest.mark.usefixtures("no_console_errors")


def query_of(url: str) -> dict:
    return parse_qs(urlparse(url).query)


def gpus_tile(browser) -> str:
    return text(browser, "overview-tile-gpus").splitlines()[1]


def aws_gpus(site, days: int) -> tuple[int, int, int]:
    """GPUs (host, GPU UUID), GPU entities (whole GPUs and MIG instances) and MIG instances of aws
    sampled in the last ``days`` UTC days, today included (the Overview's "Last N days")."""
    return site.store.rows(
        "SELECT uniqExact(host, gpu_uuid), uniqExact(host, gpu_uuid, mig_instance), "
        "uniqExactIf((host, gpu_uuid, mig_instance), mig_instance != '') FROM gpu_hour "
        "WHERE environment = 'aws' AND hour >= toStartOfDay(now() - toIntervalDay({back:UInt32}))",
        {"back": days - 1})[0]


def gpus_tile_shows(d, counts, range_: str) -> bool:
    """Whether the GPUs tile was rendered for ``range_`` (its link carries the page's filters) and
    shows ``counts`` (aws_gpus()): the GPUs as its value, the GPU entities and MIG instances in its detail."""
    tile = (d.find_elements(By.ID, "overview-tile-gpus") or [None])[0]
    if tile is None or query_of(tile.get_attribute("href") or "").get("range") != [range_]:
        return False
    lines = tile.text.splitlines()
    gpus, entities, mig = counts
    return len(lines) > 2 and lines[1] == f"{gpus:,}" and \
        lines[2].startswith(f"{entities:,} GPU entities incl. {mig:,} MIG instances · aws ")


def test_filters_write_the_url_change_the_charts_and_links_reproduce_the_view(site, browser):
    open_page(browser, site.url + "/", "overview")
    part(browser, "overview", "tiles")
    everything = gpus_tile(browser)
    pick(browser, ids.filter_control("env", "overview"), "aws")
    wait(browser, lambda d: query_of(d.current_url).get("env") == ["aws"], "the URL never got env=aws")
    aws = aws_gpus(site, 30)
    wait(browser, lambda d: gpus_tile_shows(d, aws, "30d"), f"GPUs tile never showed aws's {aws} GPUs")
    assert gpus_tile(browser) != everything
    pick(browser, ids.filter_control("range", "overview"), "7d")
    wait(browser, lambda d: query_of(d.current_url).get("range") == ["7d"], "the URL never got range=7d")
    week = aws_gpus(site, 7)
    wait(browser, lambda d: gpus_tile_shows(d, week, "7d"), f"the GPUs tile never showed aws's {week} GPUs of the last 7 days")
    shared = browser.current_url
    tile_text = text(browser, "overview-tile-gpus")
    nav_spend = browser.find_element(By.ID, "nav-spend").get_attribute("href")
    assert query_of(nav_spend) == query_of(shared), "the navigation lost the filters"
    browser.get("about:blank")
    open_page(browser, shared, "overview")                        # a shared link reproduces the view
    wait(browser, lambda d: text(d, "overview-tile-gpus") == tile_text, "the shared link showed another view")
    assert by_json_id(browser, ids.filter_control("env", "overview")).text.strip() == "aws"


def test_team_filter_on_spend_and_empty_state_for_no_match(site, browser):
    open_page(browser, site.url + "/spend?range=30d&team=research", "spend")
    chart = part(browser, "spend", "by-team", chart=True)
    assert "research" in chart.text and "llm-finetune" not in chart.text
    open_page(browser, site.url + "/spend?range=30d&team=no-such-team", "spend")
    empty = part(browser, "spend", "by-team").find_element(By.CSS_SELECTOR, ".empty.no-match")
    today = datetime.now(timezone.utc).date()               # the dashboard's clock: "Last 30 days" ends today
    window = f"Last 30 days ({today - timedelta(days=29)} to {today})"
    assert f"No spend match {window} · all environments · no-such-team" in empty.text


def test_csv_download_is_the_table_behind_the_chart(site, browser):
    open_page(browser, site.url + "/spend?range=30d", "spend")
    part(browser, "spend", "by-team", chart=True)
    before = set(browser.downloads.iterdir())
    by_json_id(browser, ids.csv_button("spend", "by-team")).click()
    path = wait(browser, lambda d: [p for p in set(d.downloads.iterdir()) - before if p.suffix == ".csv"],
                "no CSV was downloaded", timeout=30)[0]
    time.sleep(0.3)
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert path.name.startswith("gpuledger-spend-by-team-")
    assert set(rows[0]) >= {"team", "environment", "cost_kind", "cost_usd"}
    got: dict[str, float] = {}
    for r in rows:
        got[r["team"]] = got.get(r["team"], 0.0) + float(r["cost_usd"])
    end = datetime.now(timezone.utc).date() + timedelta(days=1)
    expected = dict(site.store.rows(
        "SELECT team, sum(cost_usd) FROM v_team_spend WHERE currency = 'USD' AND day >= {s:Date} AND day < {e:Date} "
        "GROUP BY team", {"s": end - timedelta(days=30), "e": end}))
    assert got.keys() == expected.keys()
    assert all(got[t] == pytest.approx(expected[t], rel=1e-9) for t in expected)


def test_create_and_expire_a_silence_from_the_page(site, browser):
    open_page(browser, site.url + "/alerts", "alerts")
    part(browser, "alerts", "firing")
    browser.find_element(By.ID, ids.SILENCE_MATCHERS).send_keys("team=data-science\nalertname=gpu_idle_window")
    browser.find_element(By.ID, ids.SILENCE_CREATE).click()          # no comment yet: refused, with the reason
    wait(browser, lambda d: "needs a comment" in d.find_element(By.ID, ids.SILENCE_MESSAGE).text, "no error shown")
    browser.find_element(By.ID, ids.SILENCE_COMMENT).send_keys("notebook owners notified")
    browser.find_element(By.ID, ids.SILENCE_CREATE).click()
    message = wait(browser, lambda d: "created" in d.find_element(By.ID, ids.SILENCE_MESSAGE).text and
                   d.find_element(By.ID, ids.SILENCE_MESSAGE).text, "no silence created")
    sid = message.split()[1]
    now = datetime.now(timezone.utc)
    stored = {s.id: s for s in list_silences(site.store, now)}
    assert sid in stored and stored[sid].created_by == "lead" and stored[sid].comment == "notebook owners notified"
    assert {(m.name, m.value) for m in stored[sid].matchers} == {("team", "data-science"), ("alertname", "gpu_idle_window")}
    assert stored[sid].ends_at - stored[sid].starts_at == timedelta(hours=2)
    row = next(r for r in table_rows(part(browser, "alerts", "silences")) if r[0] == sid)
    assert row[1] == "active" and row[5] == "lead"
    _choose_single(browser, sid)
    browser.find_element(By.ID, ids.SILENCE_EXPIRE).click()
    wait(browser, lambda d: f"Silence {sid} expired" in d.find_element(By.ID, ids.SILENCE_MESSAGE).text, "not expired")
    assert sid not in {s.id for s in list_silences(site.store, datetime.now(timezone.utc))}
    row = next(r for r in table_rows(part(browser, "alerts", "silences")) if r[0] == sid)
    assert row[1] == "expired"


def _choose_single(browser, value: str) -> None:
    browser.find_element(By.ID, ids.SILENCE_EXPIRE_ID).click()
    option = wait(browser, lambda d: [o for o in d.find_elements(By.CSS_SELECTOR, "[role=option]")
                                      if o.text.startswith(value)], f"no option for {value}")[0]
    option.click()


def test_hostile_url_values_are_harmless(site, browser):
    before = site.store.rows("SELECT count() FROM gpu_hour")[0][0]
    team = "x' OR 1=1; DROP TABLE gpu_hour; --"
    env = 'aws" OR "1"="1'
    url = (f"{site.url}/spend?range=%27%3B%20SELECT%201&team={quote(team)}&env={quote(env)}"
           f"&team={'A' * 5000}&from=2026-13-45")
    open_page(browser, url, "spend")
    notes = browser.find_element(By.ID, ids.notes("spend")).text
    assert "unknown time range" in notes and "environment" in notes and "5000 characters ignored" in notes
    empty = part(browser, "spend", "by-team").find_element(By.CSS_SELECTOR, ".empty.no-match")
    assert team in empty.text                               # shown as text, matched as a value: nothing
    assert site.store.rows("SELECT count() FROM gpu_hour")[0][0] == before
