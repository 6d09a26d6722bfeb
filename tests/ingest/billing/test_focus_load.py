"""FOCUS files load with totals equal to pandas over the same file, and reloads never double."""
from __future__ import annotations

import gzip
import shutil

import pandas as pd
import pytest

from ingest.billing.load import ingest_billing


def pandas_totals(path) -> pd.DataFrame:
    frame = pd.read_csv(path, na_values=["NULL", "null"], keep_default_na=False)
    frame["day"] = pd.to_datetime(frame["ChargePeriodStart"]).dt.strftime("%Y-%m-%d")
    return (frame.groupby(["ProviderName", "ServiceName", "day"])[["BilledCost", "EffectiveCost"]].sum()
            .reset_index().sort_values(["ProviderName", "ServiceName", "day"]).reset_index(drop=True))


def store_totals(store) -> pd.DataFrame:
    frame = store.query_df(
        "SELECT ProviderName, ServiceName, toString(toDate(ChargePeriodStart)) AS day, "
        "toFloat64(sum(BilledCost)) AS BilledCost, toFloat64(sum(EffectiveCost)) AS EffectiveCost "
        "FROM billing_line_items GROUP BY ProviderName, ServiceName, day ORDER BY ProviderName, ServiceName, day")
    return frame.reset_index(drop=True)


def test_sample_totals_per_provider_service_day_equal_pandas(store, focus_sample, quiet):
    report = ingest_billing(store, [focus_sample], progress=quiet)
    assert report.rows == 600 and report.quarantined_rows == 0
    expected, got = pandas_totals(focus_sample), store_totals(store)
    assert len(got) == len(expected) > 50
    assert list(got["ServiceName"]) == list(expected["ServiceName"])
    assert list(got["day"]) == list(expected["day"])
    for column in ("BilledCost", "EffectiveCost"):
        assert got[column].tolist() == pytest.approx(expected[column].tolist(), abs=1e-9)


def test_reloading_the_same_file_changes_nothing(store, focus_sample, quiet):
    ingest_billing(store, [focus_sample], progress=quiet)
    before = store_totals(store)
    keys_before = store.rows("SELECT line_item_key FROM billing_line_items ORDER BY line_item_key")
    ingest_billing(store, [focus_sample], progress=quiet)
    assert store.scalar("SELECT count() FROM billing_line_items") == 600
    pd.testing.assert_frame_equal(store_totals(store), before)
    assert store.rows("SELECT line_item_key FROM billing_line_items ORDER BY line_item_key") == keys_before


def test_restated_period_replaces_the_earlier_delivery(store, focus_sample, tmp_path, quiet):
    ingest_billing(store, [focus_sample], progress=quiet)
    restated = tmp_path / "restated.csv.gz"
    frame = pd.read_csv(focus_sample, dtype=str, keep_default_na=False)
    frame = frame.iloc[:400].copy()
    frame.loc[0, "BilledCost"] = "100.5"
    with gzip.open(restated, "wt", newline="") as handle:
        frame.to_csv(handle, index=False)
    ingest_billing(store, [restated], progress=quiet)
    assert store.scalar("SELECT count() FROM billing_line_items") == 400
    expected = pd.to_numeric(frame["BilledCost"].replace("NULL", None)).sum()
    assert float(store.scalar("SELECT sum(BilledCost) FROM billing_line_items")) == pytest.approx(expected, abs=1e-9)


def test_focus_values_tags_extensions_and_case_insensitive_names(store, focus_dir, quiet):
    ingest_billing(store, [focus_dir], progress=quiet, max_quarantined_share=1)
    tags = store.scalar("SELECT Tags FROM billing_line_items WHERE Tags['application'] = 'BrightLensMatrix' LIMIT 1")
    assert tags["environment"] == "dev"
    assert store.scalar("SELECT count() FROM billing_line_items WHERE x_extensions['Id'] != ''") == 600
    # spec example header says SkuPriceid: matched to SkuPriceId; x_CommitmentDiscountUnitPrice kept
    row = store.rows("SELECT SkuPriceId, x_extensions['x_CommitmentDiscountUnitPrice'] FROM billing_line_items "
                     "WHERE SkuId = 'VM_LARGE' AND ChargeCategory = 'Usage' LIMIT 1")[0]
    assert row == ("VM_LARGE_COMMITTED_HOUR", "1.50")
    # literal null -> NULL / empty, never the text 'null'
    assert store.scalar("SELECT count() FROM billing_line_items WHERE CommitmentDiscountId = 'null'") == 0


def test_impossible_timestamp_is_quarantined_and_the_rest_loads(store, focus_dir, quiet):
    report = ingest_billing(store, [focus_dir / "spec_examples"], progress=quiet, max_quarantined_share=1)
    bad = store.rows("SELECT source_file, source_row, column, reason, value FROM billing_quarantine")
    assert [(b[0].rsplit("/", 1)[1], *b[1:]) for b in sorted(bad)] == [
        ("commitment_discount_purchase_scenario_2.csv", 3, "ChargePeriodEnd", "not a valid timestamp", "2023-02-01T30:00:00Z"),
        ("commitment_discount_purchase_scenario_3.csv", 4, "ChargePeriodEnd", "not a valid timestamp", "2023-02-01T30:00:00Z"),
    ]
    assert report.rows == 23 and report.quarantined_rows == 2
    assert "2 row(s) quarantined" in report.summary()
    raw = store.scalar("SELECT raw FROM billing_quarantine LIMIT 1")
    assert raw["ChargeCategory"] == "Purchase"


def test_negative_costs_and_mixed_currencies_are_kept(store, focus_sample, tmp_path, quiet):
    frame = pd.read_csv(focus_sample, dtype=str, keep_default_na=False).iloc[:10].copy()
    frame.loc[0, ["BilledCost", "EffectiveCost", "ChargeCategory"]] = ["-25.5", "-25.5", "Credit"]
    frame.loc[1, "BillingCurrency"] = "EUR"
    path = tmp_path / "credits.csv"
    frame.to_csv(path, index=False)
    report = ingest_billing(store, [path], progress=quiet)
    assert report.quarantined_rows == 0
    by_currency = dict(store.rows("SELECT BillingCurrency, count() FROM billing_line_items GROUP BY 1"))
    assert by_currency == {"USD": 9, "EUR": 1}
    assert float(store.scalar("SELECT min(BilledCost) FROM billing_line_items")) == -25.5
    assert [t[0] for t in report.totals] == ["EUR", "USD"]


def test_parquet_and_gzip_give_the_same_rows_as_csv(store, focus_sample, tmp_path, quiet):
    frame = pd.read_csv(focus_sample, dtype=str, keep_default_na=False)
    frame.to_parquet(tmp_path / "sample.parquet", index=False)
    ingest_billing(store, [tmp_path / "sample.parquet"], progress=quiet)
    parquet = store_totals(store)
    shutil.copyfileobj(open(focus_sample, "rb"), gzip.open(tmp_path / "sample.csv.gz", "wb"))
    ingest_billing(store, [tmp_path / "sample.csv.gz"], progress=quiet)
    pd.testing.assert_frame_equal(store_totals(store), parquet)
    assert store.scalar("SELECT count() FROM billing_line_items") == 600
