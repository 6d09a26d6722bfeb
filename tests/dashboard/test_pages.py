"""Every page in headless Chromium on the demo fleet: real numbers (checked against SQL over the
views), the planted problems visible, no console errors. Writes the README's screenshots when
GPULEDGER_SCREENSHOTS is set."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from selenium.webdriver.common.by import By

from dashboard import ids
from dashboard.components import money
from tests.dashboard.browser import open_page, part, screenshot, table_rows, text

pytestmark = pytest.mark.usefixtures("no_console_errors")


def window():
    """The default range (last 30 days), as the dashboard computes it."""
    end = datetime.now(timezone.utc).date() + timedelta(days=1)
    start = end - timedelta(days=30)
    return {"start": datetime.combine(start, datetime.min.time()), "end": datetime.combine(end, datetime.min.time()),
            "start_day": start, "end_day": end}


def one(store, sql, **params):
    return store.rows(sql, window() | params)[0]


def test_overview_tiles_match_the_views(site, browser, screenshots_dir):
    open_page(browser, site.url + "/", "overview")
    part(browser, "overview", "tiles")
    store = site.store
    gpus, = one(store, "SELECT uniqExact(host, gpu_uuid) FROM gpu_hour WHERE hour >= {start:DateTime} AND hour < {end:DateTime}")
    # this month's waste by the documented formula, summed from the hourly table (not the view the tile reads)
    spend, alloc, unalloc, unused, no_data = one(store, "SELECT sum(cost_usd), sum(idle_allocated_usd), "
                                                        "sum(idle_unallocated_usd), sum(unused_usd), sum(no_data_usd) "
                                                        "FROM gpu_waste_hour WHERE toStartOfMonth(hour) = toStartOfMonth(today())")
    mtd, = one(store, "SELECT sum(spend_mtd_usd) FROM v_team_budget WHERE month = toStartOfMonth(today())")
    coverage, = one(store, "SELECT 100 * sum(allocated_usd) / sum(cost_usd) FROM v_allocation_coverage "
                           "WHERE day >= {start_day:Date} AND day < {end_day:Date}")
    firing, = one(store, "SELECT count() FROM alert_state FINAL WHERE state = 'firing'")
    findings, = one(store, "SELECT count() FROM v_compliance_open WHERE last_seen >= {start:DateTime}")
    tile = lambda key: text(browser, f"overview-tile-{key}").splitlines()
    assert tile("gpus")[1] == f"{gpus:,}" and "MIG instances" in tile("gpus")[2]
    waste = alloc + unalloc + unused
    assert tile("idle")[0].lower() == "waste this month" and tile("idle")[1] == money(waste)
    assert tile("idle")[2] == (f"idle {money(alloc + unalloc)} (allocated {money(alloc)} · unallocated {money(unalloc)}) · "
                               f"unused {money(unused)} · efficiency {100 * (1 - waste / spend):.1f} % of {money(spend)} · "
                               f"no data {money(no_data)}")
    assert tile("spend")[1] == money(mtd) and "over: llm-finetune" in tile("spend")[2]       # the planted overrun
    assert tile("coverage")[1] == f"{coverage:.1f} %"
    assert firing >= 5 and tile("alerts")[1] == str(firing)     # the planted budget overrun and findings at least
    assert findings == 4 and tile("findings")[1] == "4"
    part(browser, "overview", "fleet", chart=True)
    screenshot(browser, screenshots_dir, "overview")
    browser.find_element(By.ID, "overview-tile-idle").click()
    open_page(browser, browser.current_url, "idle")
    assert browser.current_url.startswith(site.url + "/idle?range=30d")


def test_utilization_heatmap_distribution_and_mig_under_gpu(site, browser, screenshots_dir):
    open_page(browser, site.url + "/utilization", "utilization")
    heatmap = part(browser, "utilization", "heatmap", chart=True)
    assert "onprem · a100-mig" in heatmap.text and "aws · aws-us-east-1-p4d" in heatmap.text
    part(browser, "utilization", "distribution", chart=True)
    rows = table_rows(part(browser, "utilization", "mig"))
    planted = next(p for p in site.demo.planted if p["kind"] == "idle_allocated" and p["mig_instance"])
    gpu_row = next(i for i, r in enumerate(rows) if r[0] == f"{planted['host']} {planted['gpu_uuid']}")
    children = []
    for r in rows[gpu_row + 1:]:
        if not r[0].startswith("└ MIG"):
            break
        children.append(r)
    assert [planted["mig_instance"], planted["mig_profile"]] in [[r[0].split()[-1], r[1]] for r in children]
    n, = one(site.store, "SELECT uniqExact(mig_instance) FROM gpu_hour WHERE host = {h:String} AND gpu_uuid = {g:String} "
                         "AND mig_instance != '' AND hour >= {start:DateTime} AND hour < {end:DateTime}",
             h=planted["host"], g=planted["gpu_uuid"])
    assert len(children) == n > 1
    screenshot(browser, screenshots_dir, "utilization")


def test_idle_ranks_teams_by_waste_with_efficiency(site, browser):
    open_page(browser, site.url + "/idle", "idle")
    card = part(browser, "idle", "waste", chart=True)
    rows = table_rows(card)
    expected = site.store.rows(
        "SELECT if(team = '', 'unallocated', team) AS t, sum(idle_allocated_usd + idle_unallocated_usd + unused_usd) AS w, "
        "sum(cost_usd) AS s FROM gpu_waste_hour WHERE hour >= {start:DateTime} AND hour < {end:DateTime} "
        "GROUP BY t ORDER BY w DESC, t", window())
    assert [r[0] for r in rows] == [t for t, _, _ in expected]
    for row, (team, waste, spend) in zip(rows, expected):
        assert row[1] == f"{waste:,.2f}" and row[2] == f"{100 * (1 - waste / spend):,.2f}", team
    gpus = table_rows(part(browser, "idle", "waste-gpus"))
    assert gpus and {r[0] for r in gpus} <= {t for t, _, _ in expected}
    worst, = one(site.store, "SELECT max(w) FROM (SELECT sum(idle_allocated_usd + idle_unallocated_usd + unused_usd) AS w "
                             "FROM gpu_waste_hour WHERE hour >= {start:DateTime} AND hour < {end:DateTime} "
                             "GROUP BY team, host, gpu_uuid, mig_instance)")
    assert gpus[0][9] == f"{worst:,.2f}"


def test_idle_shows_every_planted_window_with_owner(site, browser, screenshots_dir):
    open_page(browser, site.url + "/idle", "idle")
    part(browser, "idle", "timeline", chart=True)
    part(browser, "idle", "by-team", chart=True)
    rows = table_rows(part(browser, "idle", "offenders"))
    worst, = one(site.store, "SELECT max(cost_usd) FROM v_idle_waste WHERE start < {end:DateTime} AND end > {start:DateTime}")
    assert rows[0][11] == f"{worst:,.2f}"
    screenshot(browser, screenshots_dir, "idle")
    # the fleet's own waste can outrank them among the worst offenders: each is opened as its alert links to it
    planted = [p for p in site.demo.planted if p["kind"].startswith("idle_")]
    for p in planted:
        open_page(browser, f"{site.url}/idle?gpu={p['gpu_uuid']}&mig={p.get('mig_instance') or ''}&window={p['start']}",
                  "idle")
        part(browser, "idle", "focus")
        marked = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                  for tr in browser.find_elements(By.CSS_SELECTOR, f"#{ids.IDLE_FOCUS_WINDOWS} tr.marked")]
        assert len(marked) == 1, f"planted {p['kind']} on {p['host']} {p['gpu_uuid']} not found"
        row = marked[0]
        assert row[3] == p["host"] and row[8] == p["start"].replace("T", " ")[:16]
        if p["kind"] == "idle_allocated":
            assert row[0] == p["team"] and row[1] == p["user"] and row[2] == p["job_id"]
        assert float(row[10]) == pytest.approx(p["minutes"] / 60, abs=0.05)


def test_spend_per_team_budget_and_unallocated(site, browser, screenshots_dir):
    open_page(browser, site.url + "/spend", "spend")
    by_team = part(browser, "spend", "by-team", chart=True)
    assert "llm-finetune" in by_team.text and "onprem · onprem_capital" in by_team.text
    part(browser, "spend", "trend", chart=True)
    budget = {r[0]: r for r in table_rows(part(browser, "spend", "budget", chart=True))}
    expected = site.store.rows("SELECT team, budget_usd, spend_mtd_usd, forecast_usd FROM v_team_budget "
                               "WHERE month = toStartOfMonth(today())")
    for team, _budget, mtd, forecast in expected:
        assert budget[team][2] == f"{mtd:,.2f}" and budget[team][3] == f"{forecast:,.2f}"
    assert budget["llm-finetune"][5] == "yes" and budget["research"][5] == "no"
    unallocated = part(browser, "spend", "unallocated", chart=True)
    usd, = one(site.store, "SELECT sum(cost_usd) FROM v_unallocated WHERE day >= {start_day:Date} AND day < {end_day:Date}")
    assert f"Unallocated: {money(usd)}" in unallocated.text
    screenshot(browser, screenshots_dir, "spend")


def test_placement_rates_and_recommendations(site, browser, screenshots_dir):
    open_page(browser, site.url + "/placement", "placement")
    part(browser, "placement", "demand", chart=True)
    rates = {r[0]: r for r in table_rows(part(browser, "placement", "rates", chart=True))}
    expected = site.store.rows("SELECT environment, sum(cost_usd) / sum(utilized_gpu_hours) FROM gpu_cost_hour "
                               "WHERE hour >= {start:DateTime} AND hour < {end:DateTime} GROUP BY environment", window())
    assert {env: rates[env][1] for env, _ in expected} == {env: f"{rate:,.2f}" for env, rate in expected}
    recs = table_rows(part(browser, "placement", "recommendations"))
    kinds = {(r[0], r[1] or r[2]) for r in recs}
    assert ("move baseline on-prem", "search-inference") in kinds       # steady inference demand in the clouds
    assert ("burst to cloud", "dgx-h100") in kinds                      # saturated on-prem pool
    savings = [float(r[10].replace(",", "")) for r in recs]
    assert savings == sorted(savings, reverse=True)
    # the queues: the crowded H100 pool's waits, as SQL over the hourly rollup says, and its burst advice
    queued = {(r[0], r[1]): r for r in table_rows(part(browser, "placement", "queues", chart=True))}
    waits = site.store.rows(
        "SELECT pool, team, quantileExact(0.95)(w) FROM (SELECT pool, team, job_id, "
        "dateDiff('second', min(submitted), max(last_seen)) / 3600 AS w FROM queue_pending_hour WHERE job_id != '' "
        "AND hour >= {start:DateTime} AND hour < {end:DateTime} GROUP BY pool, team, scheduler, cluster, job_id) "
        "GROUP BY pool, team", window())
    assert {(p, t): queued[(p, t)][6] for p, t, _ in waits} == {(p, t): f"{w:,.2f}" for p, t, w in waits}
    # the planted crowded pool gets burst advice, and every burst row is a team that waited for an
    # on-prem pool [analytics] queue_burst_wait_hours or more at p95 by that SQL (which other pools'
    # teams do depends on where the week's window cuts the simulated queues)
    bursts = [r for r in recs if r[0] == "burst queued demand"]
    p95_wait = {(p, t): w for p, t, w in waits}
    assert "dgx-h100" in {r[2] for r in bursts}
    assert all(p95_wait[(r[2], r[1])] >= site.demo.cfg.analytics.queue_burst_wait_hours for r in bursts)
    assert all(r[11].startswith(f"{r[1]} waited p95 ") and r[11].endswith(": burst") for r in bursts)
    screenshot(browser, screenshots_dir, "placement")


def test_compliance_findings_with_evidence_and_runtime_matrix(site, browser, screenshots_dir):
    open_page(browser, site.url + "/compliance", "compliance")
    part(browser, "compliance", "by-policy", chart=True)
    findings = part(browser, "compliance", "findings")
    residency = next(p for p in site.demo.planted if p["kind"] == "residency_violation")
    drift = next(p for p in site.demo.planted if p["kind"] == "driver_drift")
    untagged = next(p for p in site.demo.planted if p["kind"] == "untagged_instance")
    summaries = findings.text
    assert residency["team"] in summaries and residency["region"] in summaries
    assert drift["host"] in summaries and untagged["instance_id"] in summaries
    details = findings.find_elements(By.CSS_SELECTOR, "details.finding")
    details[0].find_element(By.TAG_NAME, "summary").click()
    assert table_rows(details[0]), "a finding opened with no evidence rows"
    matrix = part(browser, "compliance", "runtime")
    drifting = [tr.find_element(By.TAG_NAME, "th").text for tr in matrix.find_elements(By.CSS_SELECTOR, "tr.drifting")]
    assert drifting == [f"onprem · {drift['pool']}"]
    assert f"{drift['actual_driver']} / CUDA {drift['actual_cuda']}" in matrix.text
    screenshot(browser, screenshots_dir, "compliance")


def test_alerts_page_lists_firing_alerts_and_history(site, browser, screenshots_dir):
    open_page(browser, site.url + "/alerts", "alerts")
    firing = table_rows(part(browser, "alerts", "firing"))
    names = {r[1] for r in firing}
    assert {"team_budget_exceeded", "compliance_residency"} <= names
    count, rules = one(site.store, "SELECT count(), groupUniqArray(rule) FROM alert_state FINAL WHERE state = 'firing'")
    assert len(firing) == count and names == set(rules)
    assert "No pending alerts match" in part(browser, "alerts", "pending").text
    history = table_rows(part(browser, "alerts", "history"))
    assert any(r[1] == "compliance_residency" and r[4] == "firing" for r in history)
    part(browser, "alerts", "silences")
    screenshot(browser, screenshots_dir, "alerts")
