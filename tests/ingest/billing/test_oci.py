"""OCI cost reports through ``gpuledger ingest billing``: a real published cost report, cell by cell.

The sample (``data/reports_cost-csv_0000000030000269.csv``, see ``data/SOURCES.md``) is loaded by
the real command into its own store and read back through ``gpuledger query``; every stored
cell is compared with the raw file's, costs exactly (Decimal(38, 12), rounded half-even).
"""
from __future__ import annotations

import csv
import io
import json
import re
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pandas as pd
import pytest

from collector.billing import adapters, oci
from ingest.billing.read import read_header
from tests.ingest.billing.test_partial_bills import gpuledger

DATA = Path(__file__).parent / "data"
SAMPLE = DATA / "reports_cost-csv_0000000030000269.csv"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "billing.md"
# The columns of OCI's FOCUS report as OCI documents and delivers them (FOCUS 1.0-preview names plus oci_…),
# as in published loaders of OCI's "FOCUS Reports" (e.g. oci-landing-zones' OCI_FINOPS_REPORTS table).
OCI_FOCUS_HEADER = (
    "AvailabilityZone,BilledCost,BillingAccountId,BillingAccountName,BillingCurrency,BillingPeriodEnd,"
    "BillingPeriodStart,ChargeCategory,ChargeDescription,ChargeFrequency,ChargePeriodEnd,ChargePeriodStart,"
    "ChargeSubcategory,CommitmentDiscountCategory,CommitmentDiscountId,CommitmentDiscountName,"
    "CommitmentDiscountType,EffectiveCost,InvoiceIssuer,ListCost,ListUnitPrice,PricingCategory,PricingQuantity,"
    "PricingUnit,Provider,Publisher,Region,ResourceId,ResourceName,ResourceType,ServiceCategory,ServiceName,SkuId,"
    "SkuPriceId,SubAccountId,SubAccountName,Tags,UsageQuantity,UsageUnit,oci_ReferenceNumber,oci_CompartmentId,"
    "oci_CompartmentName,oci_OverageFlag,oci_UnitPriceOverage,oci_BilledQuantityOverage,oci_CostOverage,"
    "oci_AttributedUsage,oci_AttributedCost,oci_BackReferenceNumber").split(",")
CENT_12 = Decimal("1e-12")


def stored(value: str) -> Decimal:
    """What Decimal(38, 12) holds for the raw text: exact, rounded half-even at 12 decimals."""
    return Decimal(value).quantize(CENT_12, rounding=ROUND_HALF_EVEN)


def query(dsn: str, cwd: Path, sql: str) -> list[dict]:
    done = gpuledger(dsn, "query", "--format", "csv", sql, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return list(csv.DictReader(io.StringIO(done.stdout)))


def when(text: str) -> pd.Timestamp:
    return pd.to_datetime(text, utc=True)   # stored times are UTC without a zone; the raw ones end in Z


def test_cost_report_loads_through_the_cli_cell_by_cell(tmp_path):
    raw = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False)
    dsn = f"chdb://{tmp_path / 'store'}"
    done = gpuledger(dsn, "ingest", "billing", str(SAMPLE), cwd=tmp_path)   # no --format: sniffed
    assert done.returncode == 0, done.stderr
    assert "506 rows from 1 input(s)" in done.stdout and "0 row(s) quarantined" in done.stdout
    rows = query(dsn, tmp_path, "SELECT source_row, source_kind, BillingAccountId, SubAccountId, "
                 "toString(BillingPeriodStart) AS bps, toString(BillingPeriodEnd) AS bpe, "
                 "toString(ChargePeriodStart) AS cps, toString(ChargePeriodEnd) AS cpe, toString(BilledCost) AS billed, "
                 "toString(EffectiveCost) AS effective, toString(ContractedUnitPrice) AS price, "
                 "toString(PricingQuantity) AS pq, toString(ConsumedQuantity) AS cq, PricingUnit, ConsumedUnit, "
                 "BillingCurrency, ChargeCategory, ChargeClass, ChargeFrequency, ChargeDescription, ProviderName, "
                 "RegionId, RegionName, AvailabilityZone, ResourceId, ServiceName, ServiceCategory, SkuId, "
                 "toJSONString(Tags) AS tags, x_extensions['x_LineItemId'] AS line, "
                 "x_extensions['x_product_compartmentName'] AS compartment "
                 "FROM billing_line_items ORDER BY source_row")
    assert len(rows) == len(raw) == 506
    tag_columns = [c for c in raw.columns if c.startswith("tags/")]
    for got, (_, want) in zip(rows, raw.iterrows()):
        where = f"row {got['source_row']}"
        assert got["source_kind"] == "oci-export"
        assert got["BillingAccountId"] == want["cost/subscriptionId"], where
        assert got["SubAccountId"] == want["lineItem/tenantId"], where
        assert (got["bps"], got["bpe"]) == ("2023-11-01 00:00:00.000", "2023-12-01 00:00:00.000"), where
        assert when(got["cps"]) == when(want["lineItem/intervalUsageStart"]), where
        assert when(got["cpe"]) == when(want["lineItem/intervalUsageEnd"]), where
        assert Decimal(got["billed"]) == Decimal(got["effective"]) == stored(want["cost/myCost"]), where
        assert Decimal(got["price"]) == stored(want["cost/unitPrice"]), where
        assert Decimal(got["pq"]) == Decimal(got["cq"]) == stored(want["usage/billedQuantity"]), where
        assert got["PricingUnit"] == got["ConsumedUnit"] == want["cost/skuUnitDescription"], where
        assert got["BillingCurrency"] == want["cost/currencyCode"] == "USD"
        assert (got["ChargeCategory"], got["ChargeClass"], got["ChargeFrequency"]) == ("Usage", "", "Usage-Based")
        assert got["ChargeDescription"] == want["product/Description"], where
        assert got["ProviderName"] == "Oracle"
        assert got["RegionId"] == got["RegionName"] == want["product/region"], where
        assert got["AvailabilityZone"] == want["product/availabilityDomain"], where
        assert got["ResourceId"] == want["product/resourceId"], where
        assert got["ServiceName"] == want["product/service"], where
        assert got["ServiceCategory"] == oci.SERVICE_CATEGORY.get(want["product/service"], "Other"), where
        assert got["SkuId"] == want["cost/productSku"], where
        assert json.loads(got["tags"]) == {c[len("tags/"):]: want[c] for c in tag_columns if want[c]}, where
        assert (got["line"], got["compartment"]) == (want["lineItem/referenceNo"], want["product/compartmentName"])
    # totals: the stored sum is the sum of the stored cells, within 0.5e-12 a row of the raw file's sum
    raw_total = sum(Decimal(v) for v in raw["cost/myCost"])
    total = Decimal(query(dsn, tmp_path, "SELECT toString(sum(BilledCost)) AS t FROM billing_line_items")[0]["t"])
    assert total == sum(stored(v) for v in raw["cost/myCost"])
    assert abs(total - raw_total) <= len(raw) * Decimal("0.5e-12")
    assert re.search(r"USD: BilledCost 2\.52, EffectiveCost 2\.52", done.stdout)
    print(f"\n{SAMPLE.name}: {len(rows)} rows stored, BilledCost {total} USD; raw sum(cost/myCost) {raw_total}")


def test_sniffing_tells_oci_from_aws_cur_and_focus(shared_data, focus_sample):
    assert adapters.sniff(read_header(SAMPLE)) == "oci"
    assert adapters.sniff(OCI_FOCUS_HEADER) == "oci"
    assert adapters.sniff(read_header(shared_data / "billing_native" / "aws_cur_legacy_sample.csv")) == "aws-cur"
    assert adapters.sniff(read_header(focus_sample)) == "focus"


def test_oci_focus_report_header_is_read_with_focus_1_0_names():
    names = oci.focus_names(OCI_FOCUS_HEADER)
    for preview, focus in oci.PREVIEW_NAMES.items():
        assert focus in names and preview not in names
    assert oci.missing_columns(OCI_FOCUS_HEADER) == []
    assert oci.missing_columns([c for c in OCI_FOCUS_HEADER if c != "EffectiveCost"]) == ["EffectiveCost"]


def test_format_oci_through_the_cli(tmp_path):
    dsn = f"chdb://{tmp_path / 'store'}"
    done = gpuledger(dsn, "ingest", "billing", "--format", "oci", str(SAMPLE), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "506 rows from 1 input(s)" in done.stdout


def cut_at_60_percent(tmp_path):
    path = tmp_path / "cost_cut.csv"
    data = SAMPLE.read_bytes()
    path.write_bytes(data[: int(len(data) * 0.6)])
    return path, "ends mid-record"


def without_currency(tmp_path):
    raw = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False)
    path = tmp_path / "cost_no_currency.csv"
    raw.drop(columns=["cost/currencyCode"]).to_csv(path, index=False)
    return path, "not a complete oci file: missing column(s) cost/currencyCode"


@pytest.mark.parametrize("make", [cut_at_60_percent, without_currency])
def test_unreadable_cost_report_is_one_line_naming_the_file(tmp_path, make):
    path, why = make(tmp_path)
    done = gpuledger(f"chdb://{tmp_path / 'store'}", "ingest", "billing", str(path), cwd=tmp_path)
    said = [line for line in done.stderr.splitlines() if " INFO " not in line]
    print(f"\n{path.name}: exit {done.returncode}: {said[:3]}")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(said) == 1 and said[0].startswith("gpuledger: error: ")
    assert str(path) in said[0] and why in said[0]


def test_docs_have_every_mapped_column():
    section = DOCS.read_text().split("<!-- mapping:oci -->", 1)[1].split("<!-- end -->", 1)[0]
    documented = dict(re.findall(r"^\| (\w+) +\| (.+?) \|$", section, re.M))
    documented.pop("FOCUS")
    assert documented == oci.MAPPING
