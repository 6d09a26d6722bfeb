"""Team budgets and on-prem pool load, hand-computed: a bill line with no currency is USD spend,
the forecast's recent days cross the month's start, every team with a budget has this month's
row (spend or not, its name kept), and a pool of two GPU models is judged as one pool."""
from datetime import date, datetime, timedelta, timezone

from ingest.billing.load import ingest_billing
from ingest.rollup.run import rollup
from tests.ingest.rollup.conftest import at, focus_file, insert_samples, series

SPEND_COLUMNS = ["day", "team", "environment", "cost_kind", "currency", "cost", "estimated_cost", "gpu_hours",
                 "utilized_gpu_hours"]


def test_a_bill_line_without_a_currency_is_usd_spend(store, cfg, tmp_path):
    bill = focus_file(tmp_path / "bill.csv", [
        {"start": "2026-03-02T00:00", "end": "2026-03-03T00:00", "cost": "30", "resource": "vol-1",
         "service": "Amazon Elastic Block Store", "category": "Storage", "tags": '{"team": "nlp"}'},
        {"start": "2026-03-02T00:00", "end": "2026-03-03T00:00", "cost": "7", "resource": "vol-2", "currency": "",
         "service": "Amazon Elastic Block Store", "category": "Storage", "tags": '{"team": "nlp"}'},
    ])
    ingest_billing(store, [bill], progress=lambda m: None)
    rollup(store, cfg, since=date(2026, 3, 2), until=date(2026, 3, 2), now=at("2026-03-03T00:00"))
    assert store.rows("SELECT team, cost_kind, currency, cost FROM team_spend_day") == [("nlp", "cloud_other", "USD", 37.0)]


def test_team_budget_forecast_and_a_team_without_spend(store):
    today = datetime.now(timezone.utc).date()             # the view's clock: UTC
    store.insert("config_teams", [["nlp", 1000.0], ["ghost", 500.0]], ["team", "budget_usd_month"])
    # nlp spent $100 a day until yesterday, so nothing yet today
    store.insert("team_spend_day", [[today - timedelta(days=k), "nlp", "onprem", "onprem_capital", "USD", 100.0, 0., 1., 1.]
                                    for k in range(1, 11)], SPEND_COLUMNS)
    month = today.replace(day=1)
    rows = {(team, m): (budget, mtd, forecast) for team, m, budget, mtd, forecast in store.rows(
        "SELECT team, month, budget_usd, spend_mtd_usd, forecast_usd FROM v_team_budget")}
    assert rows[("ghost", month)] == (500.0, 0.0, 0.0)
    days_left = ((month + timedelta(days=32)).replace(day=1) - today).days       # today included
    mtd = 100.0 * min(today.day - 1, 10)          # on the 1st of a month: none this month, still a row
    # the last 7 complete days average $100, whichever month they fall in
    assert rows[("nlp", month)] == (1000.0, mtd, mtd + 100.0 * days_left)


def test_a_pool_of_two_models_is_one_pool_a_day(store, cfg):
    day = ("2026-03-02T00:00", "2026-03-03T00:00")
    insert_samples(store, series(*day, 300, host="dgx-1", gpu_uuid="GPU-1", model="NVIDIA H100 80GB HBM3",
                                 util_gpu=70.0, util_mem=30.0, process_count=1)
                   + series(*day, 300, host="dgx-2", gpu_uuid="GPU-2", model="NVIDIA A100-SXM4-80GB",
                            util_gpu=0.0, util_mem=0.0, process_count=0),
                   environment="onprem", pool="dgx")
    rollup(store, cfg, since=date(2026, 3, 2), until=date(2026, 3, 2), now=at("2026-03-03T00:00"))
    rows = store.rows("SELECT day, pool, model, gpus, gpu_hours, round(allocated_pct, 6), round(utilization_pct, 6), "
                      "status FROM v_pool_load")
    # half the pool held (the H100 at 70 %): 50 % allocated, 35 % utilized, neither saturated nor under-used
    assert rows == [(date(2026, 3, 2), "dgx", "NVIDIA A100-SXM4-80GB, NVIDIA H100 80GB HBM3", 2, 48.0, 50.0, 35.0, "ok")]
