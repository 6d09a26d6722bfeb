"""Each provider adapter's mapping, column by column, on real sample rows (and written-down rows)."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from collector.billing import aws_cur, azure, gcp
from collector.billing.tables import read_csv
from ingest.billing.load import ingest_billing
from tests.helpers import ROOT

DOCS = ROOT / "docs" / "billing.md"


@pytest.fixture(scope="module")
def cur(shared_data):
    return aws_cur.to_focus(read_csv(shared_data / "billing_native" / "aws_cur_legacy_sample.csv"))


@pytest.fixture(scope="module")
def az(shared_data):
    return azure.to_focus(read_csv(shared_data / "billing_native" / "azure_actual_cost_export_sample.csv"))


def test_cur_legacy_names_become_cur2_names():
    assert aws_cur.cur2_name("lineItem/UnblendedCost") == "line_item_unblended_cost"
    assert aws_cur.cur2_name("savingsPlan/SavingsPlanARN") == "savings_plan_savings_plan_a_r_n"
    assert aws_cur.cur2_name("product/regionCode") == "product_region_code"


def test_cur_usage_row_column_by_column(cur):
    row = cur.iloc[100].to_dict()  # row 101 of the sample: S3 inter-region transfer
    expected = {
        "BillingAccountId": "123412340534", "SubAccountId": "123412340534",
        "BillingPeriodStart": "2023-11-01T00:00:00.000Z", "BillingPeriodEnd": "2023-12-01T00:00:00.000Z",
        "ChargePeriodStart": "2023-11-08T10:00:00.000Z", "ChargePeriodEnd": "2023-11-08T11:00:00.000Z",
        "BilledCost": "1.46E-8", "EffectiveCost": "1.46E-8", "ListCost": "1.46E-8", "ListUnitPrice": "0.02",
        "ContractedCost": "1.46E-8", "ContractedUnitPrice": "0.02", "BillingCurrency": "USD",
        "ChargeCategory": "Usage", "ChargeClass": None, "ChargeFrequency": "Usage-Based",
        "ChargeDescription": "$0.02 per GB - US East (Northern Virginia) data transfer to Asia Pacific (Osaka)",
        "ConsumedQuantity": "7.32E-7", "ConsumedUnit": "GB", "PricingQuantity": "7.32E-7", "PricingUnit": "GB",
        "PricingCategory": "Standard", "ProviderName": "AWS", "PublisherName": "Amazon Web Services Canada, Inc.",
        "InvoiceIssuerName": "Amazon Web Services Canada, Inc.", "InvoiceId": None,
        "ServiceName": "Amazon Simple Storage Service", "ServiceCategory": "Storage", "RegionId": "us-east-1",
        "ResourceType": "Data Transfer", "SkuId": "4GFDNxxxxxx5DR5K", "SkuPriceId": "4GFDNCYJU3Z5Dxxx.xxxxxxxxxx.xxx6EN2CT7",
        "SkuMeter": "USE1-APN3-AWS-Out-Bytes", "CommitmentDiscountId": None, "Tags": None,
    }
    assert {k: row[k] for k in expected} == expected
    assert row["x_extensions"]["x_LineItemId"] == "lnqigm6opfabcdabcdabcdabcdabcdabcdabcdabc6ehjwae7pa"
    assert row["x_extensions"]["x_product_transfer_type"] == "InterRegion Outbound"


def test_cur_tax_row_and_commitment_rules():
    frame = pd.DataFrame([
        {"lineItem/LineItemType": "Tax", "lineItem/UnblendedCost": "2.5", "pricing/term": "",
         "bill/BillingPeriodStartDate": "2024-09-01T00:00:00Z", "lineItem/UsageStartDate": "2024-09-01T00:00:00Z",
         "lineItem/UsageEndDate": "2024-10-01T00:00:00Z", "resourceTags/user:team": "ml"},
        {"lineItem/LineItemType": "SavingsPlanCoveredUsage", "lineItem/UnblendedCost": "3.0", "pricing/term": "OnDemand",
         "savingsPlan/SavingsPlanEffectiveCost": "1.75", "savingsPlan/SavingsPlanARN": "arn:aws:savingsplans::1:sp/x",
         "lineItem/ResourceId": "i-0abc", "bill/BillingPeriodStartDate": "2024-09-01T00:00:00Z",
         "lineItem/UsageStartDate": "2024-09-01T00:00:00Z", "lineItem/UsageEndDate": "2024-09-01T01:00:00Z",
         "resourceTags/user:team": ""},
        {"lineItem/LineItemType": "Refund", "lineItem/UnblendedCost": "-4", "pricing/term": "",
         "bill/BillingPeriodStartDate": "2024-09-01T00:00:00Z", "lineItem/UsageStartDate": "2024-09-01T00:00:00Z",
         "lineItem/UsageEndDate": "2024-09-02T00:00:00Z", "resourceTags/user:team": ""},
    ])
    out = aws_cur.to_focus(frame)
    tax, covered, refund = (out.iloc[i] for i in range(3))
    assert (tax.ChargeCategory, tax.EffectiveCost, json.loads(tax.Tags)) == ("Tax", "2.5", {"team": "ml"})
    assert (covered.ChargeCategory, covered.BilledCost, covered.EffectiveCost, covered.PricingCategory) == (
        "Usage", "3.0", "1.75", "Committed")
    assert (covered.CommitmentDiscountType, covered.CommitmentDiscountCategory, covered.CommitmentDiscountStatus) == (
        "Savings Plan", "Spend", "Used")
    assert (refund.ChargeCategory, refund.ChargeClass, refund.BilledCost) == ("Credit", "Correction", "-4")


def test_cur2_names_map_the_same_way():
    frame = pd.DataFrame([{"line_item_line_item_type": "Usage", "line_item_unblended_cost": "1.5",
                           "bill_billing_period_start_date": "2024-09-01", "bill_billing_period_end_date": "2024-10-01",
                           "line_item_usage_start_date": "2024-09-02T00:00:00Z", "line_item_usage_end_date": "2024-09-02T01:00:00Z",
                           "line_item_resource_id": "i-0123", "resource_tags": '{"user_team": "vision"}',
                           "bill_payer_account_id": "111122223333", "line_item_product_code": "AmazonEC2"}])
    row = aws_cur.to_focus(frame).iloc[0]
    assert (row.BilledCost, row.ResourceId, row.BillingAccountId, row.ServiceCategory, json.loads(row.Tags)) == (
        "1.5", "i-0123", "111122223333", "Compute", {"team": "vision"})


def test_azure_actual_export_column_by_column(az):
    first, second = az.iloc[0].to_dict(), az.iloc[1].to_dict()
    assert {k: first[k] for k in ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd")} == {
        "BillingPeriodStart": "2023-09-01T00:00:00Z", "BillingPeriodEnd": "2023-10-01T00:00:00Z",
        "ChargePeriodStart": "2023-09-21T00:00:00Z", "ChargePeriodEnd": "2023-09-22T00:00:00Z"}
    assert {k: first[k] for k in ("ChargeCategory", "ChargeFrequency", "PricingCategory", "CommitmentDiscountType",
                                  "CommitmentDiscountCategory", "CommitmentDiscountId", "BilledCost", "EffectiveCost")} == {
        "ChargeCategory": "Purchase", "ChargeFrequency": "Recurring", "PricingCategory": "Committed",
        "CommitmentDiscountType": "Reservation", "CommitmentDiscountCategory": "Usage",
        "CommitmentDiscountId": "/providers/Microsoft.Capacity/reservationOrders/49ed0e4d-8e0c-4f1f-af2c-67c865056615/reservations/",
        "BilledCost": "3.25", "EffectiveCost": "3.25"}
    expected = {
        "BillingAccountId": "8611537", "BillingAccountName": "Trey Research Demo (DO NOT USE)",
        "SubAccountId": "ed570627-0265-4620-bb42-bae06bcfa914", "SubAccountName": "Trey Research IT",
        "ChargeDescription": "Tiered Block Blob - GRS - List and Create Container Operations - US East 2",
        "ServiceName": "Storage", "ServiceCategory": "Compute", "ServiceSubcategory": "Tiered Block Blob",
        "SkuId": "aaaef613-418a-4a5f-af72-d224d7dee2c6", "SkuPriceId": "AAD-37090",
        "SkuMeter": "GRS List and Create Container Operations", "RegionId": "eastus2", "RegionName": "Virginia",
        "ResourceName": "dbstoragewp6hglwvvrad2", "ResourceType": "Microsoft.Storage", "BilledCost": "0.00004",
        "ListUnitPrice": "0.1", "ContractedUnitPrice": "0.1", "ConsumedQuantity": "0.0004", "ConsumedUnit": "10K",
        "PricingCategory": "Standard", "ChargeFrequency": "Usage-Based", "ProviderName": "Microsoft",
        "PublisherName": "Microsoft", "BillingCurrency": "USD",
    }
    assert {k: second[k] for k in expected} == expected
    assert float(second["ListCost"]) == pytest.approx(0.00004)
    assert json.loads(second["Tags"])["databricks-environment"] == "true"
    assert second["x_extensions"]["x_ResourceGroup"] == "databricks-rg-PeskyData-s6taefbli5c5e"


def test_azure_amortized_rules():
    base = {"BillingPeriodStartDate": "09/01/2023", "BillingPeriodEndDate": "09/30/2023", "Date": "09/02/2023",
            "BillingCurrency": "EUR", "Frequency": "UsageBased"}
    frame = pd.DataFrame([
        {**base, "ChargeType": "Usage", "PricingModel": "Reservation", "Cost": "2.0"},
        {**base, "ChargeType": "UnusedReservation", "PricingModel": "Reservation", "Cost": "0.5"},
        {**base, "ChargeType": "Purchase", "PricingModel": "Reservation", "Cost": "100", "Frequency": "OneTime"},
        {**base, "ChargeType": "Usage", "PricingModel": "OnDemand", "Cost": "1.0"},
    ])
    assert azure.is_amortized(frame)
    out = azure.to_focus(frame, amortized=True)
    assert list(out.BilledCost) == ["0", "0", "100", "1.0"]
    assert list(out.EffectiveCost) == ["2.0", "0.5", "0", "1.0"]
    assert list(out.CommitmentDiscountStatus) == ["Used", "Unused", None, None]


def gcp_row(**overrides) -> dict:
    row = {
        "billing_account_id": "01ABCD-234567-89EFGH", "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
        "sku": {"id": "CP-COMPUTEENGINE-VMIMAGE-A2-HIGHGPU-1G", "description": "A2 Instance Core running in Americas"},
        "usage_start_time": "2024-09-03T10:00:00Z", "usage_end_time": "2024-09-03T11:00:00Z",
        "project": {"id": "ml-prod", "name": "ML prod", "number": "123456789"},
        "labels": [{"key": "team", "value": "vision"}],
        "location": {"location": "us-central1", "country": "US", "region": "us-central1", "zone": "us-central1-a"},
        "resource": {"name": "gpu-node-1", "global_name": "//compute.googleapis.com/projects/ml-prod/zones/us-central1-a/instances/4242"},
        "cost": 3.67, "currency": "USD", "currency_conversion_rate": 1.0,
        "usage": {"amount": 3600.0, "unit": "seconds", "amount_in_pricing_units": 1.0, "pricing_unit": "hour"},
        "credits": [{"name": "Committed use discount", "amount": -1.2, "type": "COMMITTED_USAGE_DISCOUNT"}],
        "invoice": {"month": "202409"}, "cost_type": "regular", "cost_at_list": 3.67,
        "price": {"effective_price": 3.67},
    }
    row.update(overrides)
    return row


def test_gcp_export_row_column_by_column():
    row = gcp.to_focus(gcp.frame_from_rows([gcp_row()])).iloc[0].to_dict()
    expected = {
        "BillingAccountId": "01ABCD-234567-89EFGH", "BillingPeriodStart": "2024-09-01T00:00:00Z",
        "BillingPeriodEnd": "2024-10-01T00:00:00Z", "ChargePeriodStart": "2024-09-03T10:00:00Z",
        "ChargePeriodEnd": "2024-09-03T11:00:00Z", "BilledCost": repr(3.67 - 1.2), "EffectiveCost": repr(3.67 - 1.2),
        "ListCost": "3.67", "ContractedUnitPrice": "3.67", "BillingCurrency": "USD", "ChargeCategory": "Usage",
        "ChargeDescription": "A2 Instance Core running in Americas", "ChargeFrequency": "Usage-Based",
        "ConsumedQuantity": "3600.0", "ConsumedUnit": "seconds", "PricingQuantity": "1.0", "PricingUnit": "hour",
        "PricingCategory": "Committed", "ProviderName": "Google Cloud", "PublisherName": "Google Cloud",
        "InvoiceIssuerName": "Google Cloud", "RegionId": "us-central1", "RegionName": "us-central1",
        "AvailabilityZone": "us-central1-a", "ResourceName": "gpu-node-1",
        "ResourceId": "//compute.googleapis.com/projects/ml-prod/zones/us-central1-a/instances/4242",
        "ServiceName": "Compute Engine", "ServiceCategory": "Compute", "SkuId": "CP-COMPUTEENGINE-VMIMAGE-A2-HIGHGPU-1G",
        "SubAccountId": "ml-prod", "SubAccountName": "ML prod", "Tags": '{"team": "vision"}',
    }
    assert {k: row[k] for k in expected} == expected
    assert row["x_extensions"]["x_ProjectNumber"] == "123456789"


def test_gcp_jsonl_and_bigquery_client_paths_load(store, tmp_path, quiet):
    path = tmp_path / "gcp_export.jsonl"
    path.write_text("\n".join(json.dumps(gcp_row(cost=c)) for c in (1.0, 2.0, 3.0)) + "\n")
    report = ingest_billing(store, [path], progress=quiet)
    assert report.rows == 3
    assert float(store.scalar("SELECT sum(BilledCost) FROM billing_line_items")) == pytest.approx(6.0 - 3 * 1.2)

    class FakeBigQuery:  # anything with query(sql, job_config).result() -> mapping rows
        def __init__(self):
            self.sql = ""

        def query(self, sql, job_config=None):
            self.sql, self.config = sql, job_config
            return self

        def result(self):
            return [gcp_row(cost=10.0)]

    client = FakeBigQuery()
    out = gcp.query_bigquery(client, "proj.billing.gcp_billing_export_v1_X", "202409")
    assert "`proj.billing.gcp_billing_export_v1_X`" in client.sql and client.config == {"month": "202409"}
    assert out.iloc[0].BilledCost == repr(10.0 - 1.2)


def test_native_files_load_and_sniff(store, shared_data, quiet):
    report = ingest_billing(store, [shared_data / "billing_native"], progress=quiet)
    assert report.quarantined_rows == 0
    cur = pd.read_csv(shared_data / "billing_native" / "aws_cur_legacy_sample.csv", dtype=str, keep_default_na=False)
    az = pd.read_csv(shared_data / "billing_native" / "azure_actual_cost_export_sample.csv", encoding="utf-8-sig")
    totals = dict(store.rows("SELECT source_kind, toFloat64(sum(BilledCost)) FROM billing_line_items GROUP BY 1"))
    assert totals["aws-cur"] == pytest.approx(pd.to_numeric(cur["lineItem/UnblendedCost"]).sum(), abs=1e-9)
    assert totals["azure-actual"] == pytest.approx(az["Cost"].sum(), abs=1e-9)   # the view read from its content
    assert store.scalar("SELECT count() FROM billing_line_items WHERE ProviderName = 'Microsoft'") == 11


@pytest.mark.parametrize("module", [aws_cur, azure, gcp])
def test_docs_have_every_mapped_column(module):
    text = DOCS.read_text()
    section = text.split(f"<!-- mapping:{module.__name__.rsplit('.', 1)[1]} -->", 1)[1].split("<!-- end -->", 1)[0]
    documented = set(re.findall(r"^\| (\w+) +\|", section, re.M)) - {"FOCUS"}
    assert documented == set(module.MAPPING)
