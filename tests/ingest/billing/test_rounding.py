"""Cost cells with more decimals than the store keeps are rounded half-even (issue #18, item 5).

The store keeps Decimal(38, 12). ClickHouse's text-to-Decimal parsing cuts extra decimals toward
zero; every load path now rounds half-even instead. Checked cell by cell through the real command,
``gpuledger ingest billing``, on each path: a FOCUS CSV and a FOCUS Parquet file (read by the store
itself) and an Azure export (rows built by the adapter in Python).
"""
from __future__ import annotations

import csv
import io
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pandas as pd
import pytest

from collector.billing.common import times
from tests.ingest.billing.test_partial_bills import gpuledger

# text in the file -> what the store keeps (half-even at 12 decimals)
CASES = {
    "0.1234567890125": "0.123456789012",         # a tie: to the even neighbour (down)
    "-0.1234567890125": "-0.123456789012",
    "0.1234567890135": "0.123456789014",         # a tie: to the even neighbour (up; truncation gave ...013)
    "-0.1234567890135": "-0.123456789014",
    "0.12345678901249999": "0.123456789012",     # just under a tie
    "0.1234567890125000001": "0.123456789013",   # just over a tie (truncation gave ...012)
    "0.0001188669167459011366": "0.000118866917",  # a real Azure cell (EA amortized sample, 22 decimals)
    "2.5E-12": "0.000000000002",                 # an exponent
    "1.5e-12": "0.000000000002",
    "12.5": "12.5",                              # 12 decimals or fewer: as written
    "-0.000000000001": "-0.000000000001",
}


def half_even(text: str) -> Decimal:
    return Decimal(text).quantize(Decimal("1e-12"), ROUND_HALF_EVEN)


def test_the_expected_values_are_half_even_and_differ_from_truncation():
    for text, kept in CASES.items():
        assert half_even(text) == Decimal(kept)
    cut = {t for t in CASES if Decimal(t).quantize(Decimal("1e-12"), ROUND_DOWN) != half_even(t)}
    assert len(cut) == 5       # the cells truncation got wrong


def stored(dsn: str, cwd: Path, column: str) -> list[tuple[int, str]]:
    done = gpuledger(dsn, "query", "--format", "csv",
                     f"SELECT source_row, toString({column}) FROM billing_line_items ORDER BY source_row", cwd=cwd)
    assert done.returncode == 0, done.stderr
    return [(int(r), v) for r, v in list(csv.reader(io.StringIO(done.stdout)))[1:]]


def focus_rows() -> list[dict[str, str]]:
    return [{"BillingPeriodStart": "2024-09-01T00:00:00Z", "BillingPeriodEnd": "2024-10-01T00:00:00Z",
             "ChargePeriodStart": "2024-09-02T00:00:00Z", "ChargePeriodEnd": "2024-09-03T00:00:00Z",
             "ChargeCategory": "Usage", "ProviderName": "AWS", "BillingAccountId": "123456789012",
             "BillingCurrency": "USD", "BilledCost": text, "EffectiveCost": text, "ListCost": text,
             "PricingQuantity": text, "ContractedUnitPrice": text, "x_Text": text} for text in CASES]


def check_cells(dsn, cwd, columns):
    for column in columns:
        cells = stored(dsn, cwd, column)
        print(f"{column}: " + ", ".join(f"{t} -> {v}" for t, (_, v) in zip(CASES, cells)))
        assert [Decimal(v) for _, v in cells] == [Decimal(kept) for kept in CASES.values()], column


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_focus_file_is_rounded_half_even_cell_by_cell(tmp_path, kind):
    path = tmp_path / f"focus.{kind}"
    frame = pd.DataFrame(focus_rows())
    if kind == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    dsn = f"chdb://{tmp_path / 'store'}"
    done = gpuledger(dsn, "ingest", "billing", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    check_cells(dsn, tmp_path, ["BilledCost", "EffectiveCost", "ListCost", "PricingQuantity", "ContractedUnitPrice"])
    # the text itself is kept as given where it is kept as text
    assert [v for _, v in stored(dsn, tmp_path, "x_extensions['x_Text']")] == list(CASES)


def test_an_azure_export_is_rounded_half_even_cell_by_cell(tmp_path):
    path = tmp_path / "azure_costs.csv"
    rows = [{"BillingAccountId": "8611537", "BillingPeriodStartDate": "09/01/2023", "BillingPeriodEndDate": "09/30/2023",
             "Date": "09/04/2023", "ChargeType": "Usage", "PricingModel": "OnDemand", "BillingCurrency": "USD",
             "Cost": text, "PayGPrice": text, "UnitPrice": "1", "Quantity": "1"} for text in CASES]
    # ListCost = PayGPrice x Quantity, exact: a float product would lose the 12th decimal here
    rows.append({**rows[-1], "Cost": "0", "PayGPrice": "123456.123456789012", "Quantity": "1.5"})
    pd.DataFrame(rows).to_csv(path, index=False)
    dsn = f"chdb://{tmp_path / 'store'}"
    done = gpuledger(dsn, "ingest", "billing", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = stored(dsn, tmp_path, "ListCost")
    assert Decimal(listed.pop()[1]) == Decimal("185184.185185183518") != half_even(repr(123456.123456789012 * 1.5))
    done = gpuledger(dsn, "query", "--format", "csv", f"ALTER TABLE billing_line_items DELETE WHERE source_row = {len(rows)}",
                     "--write", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    check_cells(dsn, tmp_path, ["BilledCost", "EffectiveCost", "ListCost"])


def test_times_is_exact_and_blank_when_not_a_number():
    a = pd.Series(["123456.123456789012", "0.1", "", "abc", "2"])
    b = pd.Series(["1.5", "3", "1", "1", "NaN"])
    assert list(times(a, b)) == ["185184.1851851835180", "0.3", "", "", ""]
