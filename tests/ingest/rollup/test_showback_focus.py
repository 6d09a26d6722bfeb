"""v_showback_focus: the whole fleet in FOCUS columns, attributed to teams (sql/README.md "FOCUS showback").

A hand-computed case follows one bill line to the two teams whose GPUs it paid for; on the demo
fleet every figure is reconciled with the tables finance already trusts."""
from __future__ import annotations

from datetime import date

import pytest

from ingest.billing.load import ingest_billing
from ingest.rollup.run import rollup
from tests.ingest.rollup.conftest import at, focus_file, insert_samples, series

# FOCUS 1.x columns billing_line_items keeps that a showback row must carry as FOCUS names them
FOCUS = ["BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd", "BillingAccountId",
         "BillingAccountName", "SubAccountId", "SubAccountName", "ProviderName", "PublisherName", "InvoiceIssuerName",
         "BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "BillingCurrency", "ChargeCategory",
         "ChargeClass", "ChargeDescription", "ChargeFrequency", "PricingCategory", "PricingQuantity", "PricingUnit",
         "ListUnitPrice", "ContractedUnitPrice", "ConsumedQuantity", "ConsumedUnit", "CommitmentDiscountId",
         "RegionId", "RegionName", "AvailabilityZone", "ResourceId", "ResourceName", "ResourceType",
         "ServiceCategory", "ServiceName", "SkuId", "SkuPriceId", "Tags"]
EXTRA = ["x_Team", "x_AllocationMethod", "x_AllocationShare", "x_GpuHours", "x_IdleAllocatedCost",
         "x_IdleUnallocatedCost", "x_UnusedCost", "x_WasteCost", "x_NoDataCost", "x_Estimated"]
AWS = {"host": "ip-10-0-0-1", "environment": "aws", "region": "us-east-1", "instance_id": "i-0abc",
       "instance_type": "p4d.24xlarge", "pool": "aws-train"}


def test_a_bill_line_is_followed_to_the_teams_that_used_it(store, cfg, tmp_path):
    # i-0abc, 2 GPUs: GPU-0 (nlp, 60 %) 10:00-12:00, GPU-1 (vision, idle but held) 10:00-11:00 only.
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T12:00", util_gpu=60.0, process_count=1, team="nlp"),
                   **AWS, gpu_uuid="GPU-0", gpu_index=0)
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:00", util_gpu=0.0, util_mem=0.0, process_count=1,
                                 team="vision"), **AWS, gpu_uuid="GPU-1", gpu_index=1)
    # an on-prem GPU of nlp for an hour at 400 W
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:00", util_gpu=50.0, power_w=400.0, process_count=1,
                                 team="nlp"), host="dgx-1", gpu_uuid="GPU-9", environment="onprem", pool="dgx")
    ingest_billing(store, [focus_file(tmp_path / "bill.csv", [
        {"resource": "arn:aws:ec2:us-east-1:222222222222:instance/i-0abc", "start": "2026-03-02T10:00:00",
         "end": "2026-03-02T12:00:00", "cost": "40.00", "effective": "30.00"},
        {"resource": "vol-0123", "start": "2026-03-02T00:00:00", "end": "2026-03-03T00:00:00", "cost": "5.00",
         "service": "Amazon Elastic Block Store", "category": "Storage", "tags": '{"team": "vision"}'}])],
        progress=lambda m: None)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-04T00:00:00"))

    rows = store.query_df(
        "SELECT x_Team, x_AllocationMethod, x_CostComponent, ProviderName, ResourceId, ServiceName, EffectiveCost, "
        "BilledCost, ListCost, x_AllocationShare, x_GpuHours, x_IdleAllocatedCost, x_UnusedCost, x_WasteCost, "
        "toString(ChargePeriodStart) AS cps, toString(ChargePeriodEnd) AS cpe, BillingAccountId, SubAccountId, x_Estimated "
        "FROM v_showback_focus ORDER BY x_Team, x_CostComponent").to_dict("records")
    gpu = {(r["x_Team"], r["x_CostComponent"]): r for r in rows}
    # the line's $30 over 3 GPU-hours of its instance: hour 10 (two GPUs) carries 2/3, hour 11 (one) 1/3;
    # hour 10 halves between nlp and vision, hour 11 is nlp's
    nlp, vision = gpu[("nlp", "cloud_gpu")], gpu[("vision", "cloud_gpu")]
    assert nlp["x_AllocationMethod"] == vision["x_AllocationMethod"] == "gpu-time"
    assert (nlp["EffectiveCost"], nlp["BilledCost"], nlp["ListCost"]) == pytest.approx((20.0, 80 / 3, 80 / 3))
    assert (vision["EffectiveCost"], vision["BilledCost"], vision["x_AllocationShare"]) == pytest.approx((10.0, 40 / 3, 1 / 3))
    assert (nlp["x_GpuHours"], vision["x_GpuHours"]) == pytest.approx((2.0, 1.0))
    # vision held its GPU idle all its hour (allocated idle); nlp ran at 60 %: unused = $20 × 0.4
    assert (vision["x_IdleAllocatedCost"], vision["x_UnusedCost"]) == pytest.approx((10.0, 0.0))
    assert (nlp["x_IdleAllocatedCost"], nlp["x_UnusedCost"], nlp["x_WasteCost"]) == pytest.approx((0.0, 8.0, 8.0))
    assert (nlp["cps"], nlp["cpe"], vision["cpe"]) == ("2026-03-02 10:00:00", "2026-03-02 12:00:00", "2026-03-02 11:00:00")
    assert nlp["ProviderName"] == "AWS" and nlp["BillingAccountId"] == "111111111111" and nlp["SubAccountId"] == "222222222222"
    # the storage line, whole, to the team its tag names
    storage = gpu[("vision", "cloud_other")]
    assert (storage["x_AllocationMethod"], storage["EffectiveCost"], storage["ServiceName"]) == \
        ("rule", pytest.approx(5.0), "Amazon Elastic Block Store")
    # on-prem: capital $1/GPU-hour, operations $0.5, energy 0.4 kWh × PUE 1.5 × $0.10
    onprem = {r["x_CostComponent"]: r for r in rows if r["ProviderName"] == "On-premises"}
    assert {k: r["EffectiveCost"] for k, r in onprem.items()} == pytest.approx(
        {"onprem_capital": 1.0, "onprem_operations": 0.5, "onprem_energy": 0.06})
    assert {r["x_Team"] for r in onprem.values()} == {"nlp"}
    assert onprem["onprem_capital"]["ResourceId"] == "dgx-1/GPU-9" and onprem["onprem_capital"]["x_GpuHours"] == pytest.approx(1.0)
    assert onprem["onprem_energy"]["x_GpuHours"] == 0 and not any(r["x_Estimated"] for r in rows)
    # one FOCUS query gives what team_spend_day gives
    assert store.scalar("SELECT sum(EffectiveCost) FROM v_showback_focus") == \
        pytest.approx(store.scalar("SELECT sum(cost) FROM team_spend_day"))


def test_an_on_prem_gpu_and_unbilled_cloud_gpu_time_are_one_row_a_day_per_component(store, cfg):
    # dgx-1/GPU-9 (nlp) 10:00-12:30 at 400 W, then 200 W, then 300 W: every hour's energy differs,
    # and hour 12 (half) costs half the capital of the others; i-0abc's GPU-0 (vision) 10:00-11:30, no bill
    for start, end, watts in [("10:00", "11:00", 400.0), ("11:00", "12:00", 200.0), ("12:00", "12:30", 300.0)]:
        insert_samples(store, series(f"2026-03-02T{start}", f"2026-03-02T{end}", util_gpu=50.0, power_w=watts,
                                     process_count=1, team="nlp"), host="dgx-1", gpu_uuid="GPU-9",
                       environment="onprem", pool="dgx")
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:30", util_gpu=60.0, process_count=1, team="vision"),
                   **AWS, gpu_uuid="GPU-0", gpu_index=0)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-04T00:00:00"))

    rows = store.query_df(
        "SELECT x_CostComponent, EffectiveCost, PricingQuantity, PricingUnit, ListUnitPrice, x_GpuHours, x_Estimated, "
        "toString(ChargePeriodStart) AS cps, toString(ChargePeriodEnd) AS cpe FROM v_showback_focus "
        "ORDER BY x_CostComponent").to_dict("records")
    # one row per day, GPU entity, team and component (sql/README.md "FOCUS showback"), not one per hourly amount
    assert [r["x_CostComponent"] for r in rows] == ["cloud_gpu", "onprem_capital", "onprem_energy", "onprem_operations"]
    assert {(r["cps"], r["cpe"]) for r in rows} == {("2026-03-02 10:00:00", "2026-03-02 12:00:00"),
                                                    ("2026-03-02 10:00:00", "2026-03-02 13:00:00")}
    got = {r["x_CostComponent"]: r for r in rows}
    # capital $1/GPU-hour x 2.5, operations $0.5 x 2.5; energy (0.4 + 0.2 + 0.15) kWh x PUE 1.5 x $0.10
    assert (got["onprem_capital"]["EffectiveCost"], got["onprem_capital"]["PricingQuantity"],
            got["onprem_capital"]["ListUnitPrice"], got["onprem_capital"]["x_GpuHours"]) == pytest.approx((2.5, 2.5, 1.0, 2.5))
    assert got["onprem_operations"]["EffectiveCost"] == pytest.approx(1.25)
    assert (got["onprem_energy"]["EffectiveCost"], got["onprem_energy"]["PricingQuantity"], got["onprem_energy"]["PricingUnit"],
            got["onprem_energy"]["ListUnitPrice"]) == pytest.approx((0.1125, 0.75, "kWh", 0.15))
    # the unbilled GPU at list price ($32 / 8 GPUs an hour) for 1.5 GPU-hours, estimated
    cloud = got["cloud_gpu"]
    assert (cloud["EffectiveCost"], cloud["PricingQuantity"], cloud["x_GpuHours"], cloud["x_Estimated"]) == \
        pytest.approx((6.0, 1.5, 1.5, 1))
    assert store.scalar("SELECT sum(EffectiveCost) FROM v_showback_focus") == \
        pytest.approx(store.scalar("SELECT sum(cost) FROM team_spend_day"))


def test_the_view_carries_focus_columns(demo):
    columns = demo.store.columns("v_showback_focus")
    assert [c for c in FOCUS + EXTRA if c not in columns] == []


def test_demo_showback_reconciles_with_spend_waste_and_bills(demo):
    s = demo.store
    assert s.scalar("SELECT count() FROM v_showback_focus WHERE ProviderName = 'On-premises'") > 0
    # per day, team, environment, cost kind and currency: exactly team_spend_day
    mismatched = s.rows("""
        SELECT day, team, environment, kind, currency, a, b FROM
        (SELECT day, x_Team AS team, x_Environment AS environment, x_CostComponent AS kind, BillingCurrency AS currency,
                sum(EffectiveCost) AS a, sum(x_GpuHours) AS ah FROM showback_focus_day GROUP BY ALL) AS f
        FULL JOIN
        (SELECT day, team, environment, cost_kind AS kind, currency, sum(cost) AS b, sum(gpu_hours) AS bh
         FROM team_spend_day GROUP BY ALL) AS t USING (day, team, environment, kind, currency)
        WHERE abs(a - b) > 1e-6 * greatest(1, abs(b)) OR abs(ah - bh) > 1e-6 * greatest(1, bh)""")
    assert mismatched == []
    # waste per month and team: what v_team_waste says
    assert s.rows("""
        SELECT month, team, w, v FROM
        (SELECT toStartOfMonth(day) AS month, x_Team AS team, sum(x_WasteCost) AS w, sum(x_NoDataCost) AS nd
         FROM showback_focus_day GROUP BY ALL) AS f
        FULL JOIN (SELECT month, team, sum(waste_usd) AS v, sum(no_data_usd) AS vnd FROM v_team_waste GROUP BY ALL) AS t
        USING (month, team)
        WHERE abs(w - v) > 1e-6 * greatest(1, v) OR abs(nd - vnd) > 1e-6 * greatest(1, vnd)""") == []
    # every bill line of the derived days is there once in all: its parts add up to the line
    assert s.rows("""
        SELECT k, share, cost, line FROM
        (SELECT x_LineItemKey AS k, sum(x_AllocationShare) AS share, sum(EffectiveCost) AS cost
         FROM showback_focus_day WHERE x_LineItemKey != '' GROUP BY k) AS f
        INNER JOIN (SELECT toString(line_item_key) AS k, toFloat64(EffectiveCost) AS line FROM billing_line_items) AS b USING k
        WHERE abs(share - 1) > 1e-9 OR abs(cost - line) > 1e-6 * greatest(1, abs(line))""") == []
    # on-prem rows: gpu_cost_hour's on-prem cost, component by component
    by_component = dict(s.rows("SELECT x_CostComponent, sum(EffectiveCost) FROM showback_focus_day "
                               "WHERE ProviderName = 'On-premises' GROUP BY 1"))
    expected = s.rows("SELECT sum(onprem_capital_usd), sum(onprem_operations_usd), sum(onprem_energy_usd) FROM gpu_cost_hour "
                      "WHERE environment IN ('onprem', '')")[0]
    assert [by_component.get(k, 0) for k in ("onprem_capital", "onprem_operations", "onprem_energy")] == \
        pytest.approx(list(expected))


def test_bill_lines_that_share_an_identity_are_each_counted_once(store, cfg, tmp_path):
    """Seen by an independent check on the FOCUS spec's own examples (two identical rows): lines
    whose identity columns are equal (FOCUS has no line id; tags, quantities and costs are not
    identity) shared one line_item_key, so the showback paired each with every other (N² rows) and
    a GPU instance's lines spread each over the weight of all (half of $20 lost from team spend)."""
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:00", util_gpu=60.0, process_count=1, team="nlp"),
                   **AWS, gpu_uuid="GPU-0", gpu_index=0)
    instance = {"resource": "arn:aws:ec2:us-east-1:222222222222:instance/i-0abc", "start": "2026-03-02T10:00:00",
                "cost": "10.00"}
    volume = {"resource": "vol-1", "start": "2026-03-02T00:00:00", "end": "2026-03-03T00:00:00",
              "service": "Amazon Elastic Block Store", "category": "Storage"}
    ingest_billing(store, [focus_file(tmp_path / "bill.csv", [instance, instance, {**volume, "cost": "3.00"},
                                                              {**volume, "cost": "4.00"}])], progress=lambda m: None)
    keys = store.rows("SELECT count(), uniqExact(line_item_key) FROM billing_line_items")[0]
    assert keys == (4, 4)
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-04T00:00:00"))
    assert store.scalar("SELECT sum(cost_usd) FROM gpu_cost_hour") == pytest.approx(20.0)
    spend = dict(store.rows("SELECT cost_kind, sum(cost) FROM team_spend_day GROUP BY cost_kind"))
    assert spend == pytest.approx({"cloud_gpu": 20.0, "cloud_other": 7.0})
    showback = dict(store.rows("SELECT x_CostComponent, sum(EffectiveCost) FROM v_showback_focus GROUP BY 1"))
    assert showback == pytest.approx({"cloud_gpu": 20.0, "cloud_other": 7.0})
    # loaded again, the same lines keep the same keys (the first of each identity keeps its own)
    before = store.rows("SELECT line_item_key, EffectiveCost FROM billing_line_items ORDER BY 1")
    ingest_billing(store, [str(tmp_path / "bill.csv")], progress=lambda m: None)
    assert store.rows("SELECT line_item_key, EffectiveCost FROM billing_line_items ORDER BY 1") == before
