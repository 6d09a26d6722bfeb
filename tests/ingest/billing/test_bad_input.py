"""Bad files are refused by name (or their bad rows quarantined) and earlier data stays intact."""
from __future__ import annotations

import gzip

import pandas as pd
import pytest

from base.errors import InputError
from ingest.billing.load import ingest_billing


@pytest.fixture
def loaded(store, focus_sample, quiet):
    ingest_billing(store, [focus_sample], progress=quiet)
    return store.rows("SELECT count(), sum(BilledCost) FROM billing_line_items")[0]


def unchanged(store, loaded) -> bool:
    return store.rows("SELECT count(), sum(BilledCost) FROM billing_line_items")[0] == loaded


def sample_rows(focus_sample, n=20) -> pd.DataFrame:
    return pd.read_csv(focus_sample, dtype=str, keep_default_na=False).iloc[:n].copy()


def test_missing_required_columns_refused_naming_file_missing_and_unknown(store, loaded, focus_sample, tmp_path, quiet):
    frame = sample_rows(focus_sample).drop(columns=["BilledCost", "ChargePeriodEnd"]).rename(columns={"ServiceName": "Servce"})
    path = tmp_path / "broken_header.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError) as err:
        ingest_billing(store, [path], progress=quiet)
    message = str(err.value)
    assert str(path) in message
    assert "missing required FOCUS column(s): ChargePeriodEnd, BilledCost" in message
    assert "unknown column(s) (neither FOCUS nor x_…): Id, Servce" in message
    assert unchanged(store, loaded)


def test_one_refused_file_stops_the_whole_load(store, loaded, focus_sample, tmp_path, quiet):
    good = tmp_path / "a_good.csv"
    frame = sample_rows(focus_sample, 5)
    frame.to_csv(good, index=False)
    (tmp_path / "b_empty.csv").write_text("")
    with pytest.raises(InputError, match="b_empty.csv: the file is empty"):
        ingest_billing(store, [tmp_path], progress=quiet)
    assert unchanged(store, loaded)


def test_garbage_rows_are_quarantined_with_row_column_reason(store, loaded, focus_sample, tmp_path, quiet):
    frame = sample_rows(focus_sample)
    frame.loc[3, "BilledCost"] = "12,5O"
    frame.loc[7, "ChargePeriodStart"] = "yesterday"
    frame.loc[9, "BillingCurrency"] = "US Dollar"
    frame.loc[11, "Tags"] = "{not json"
    path = tmp_path / "garbage.csv"
    frame.to_csv(path, index=False)
    report = ingest_billing(store, [path], progress=quiet, max_quarantined_share=0.2)
    assert report.rows == 16 and report.quarantined_rows == 4
    bad = store.rows("SELECT source_row, column, reason, value FROM billing_quarantine ORDER BY source_row")
    assert bad == [
        (4, "BilledCost", "not a number", "12,5O"),
        (8, "ChargePeriodStart", "not a valid timestamp", "yesterday"),
        (10, "BillingCurrency", "not an ISO 4217 currency code", "US Dollar"),
        (12, "Tags", "not a JSON object", "{not json"),
    ]
    assert "4 row(s) quarantined" in report.summary() and "BilledCost: not a number" in report.summary()


def test_rows_of_the_wrong_width_and_broken_quotes(store, loaded, focus_sample, tmp_path, quiet):
    text = focus_sample.read_text().splitlines()
    path = tmp_path / "ragged.csv"
    path.write_text("\n".join([text[0], text[1], "this is not a billing row", text[2], text[3] + ',"extra"']) + "\n")
    report = ingest_billing(store, [path], progress=quiet, max_quarantined_share=0.5)
    assert report.rows == 2
    rows = dict(store.rows("SELECT source_row, any(column) FROM billing_quarantine GROUP BY source_row"))
    assert set(rows) == {2, 4}
    unterminated = tmp_path / "unterminated.csv"
    unterminated.write_text("\n".join([text[0], text[1], '"' + text[2]]) + "\n")
    with pytest.raises(InputError, match="unterminated.csv: line 3: unterminated quote"):
        ingest_billing(store, [unterminated], progress=quiet)


def test_wrong_encoding(store, loaded, focus_sample, tmp_path, quiet):
    frame = sample_rows(focus_sample, 5)
    utf16 = tmp_path / "utf16.csv"
    utf16.write_bytes(frame.to_csv(index=False).encode("utf-16"))
    with pytest.raises(InputError, match="utf16.csv: the file is UTF-16 text"):
        ingest_billing(store, [utf16], progress=quiet)
    frame.loc[2, "ChargeDescription"] = "Caf\u00e9 r\u00e9seau"
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes(frame.to_csv(index=False).encode("latin-1"))
    report = ingest_billing(store, [latin1], progress=quiet, max_quarantined_share=0.2)
    assert report.rows == 4
    assert store.rows("SELECT source_row, column, reason FROM billing_quarantine") == [(3, "ChargeDescription", "not UTF-8 text")]


def test_empty_and_header_only_files(store, loaded, focus_sample, tmp_path, quiet):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty.csv: the file is empty"):
        ingest_billing(store, [empty], progress=quiet)
    header_only = tmp_path / "header_only.csv"
    header_only.write_text(focus_sample.read_text().splitlines()[0] + "\n")
    report = ingest_billing(store, [header_only], progress=quiet)
    assert report.rows == 0 and report.periods == []
    assert unchanged(store, loaded)


def test_truncated_gzip_is_refused_and_nothing_changes(store, loaded, focus_sample, tmp_path, quiet):
    data = gzip.compress(focus_sample.read_bytes())
    path = tmp_path / "truncated.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated.csv.gz.*(truncated|corrupt)"):
        ingest_billing(store, [path], progress=quiet)
    assert unchanged(store, loaded)
    assert store.scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() AND name LIKE '\\_bl\\_%'") == 0


def test_unknown_format_and_missing_path(store, tmp_path, quiet):
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(InputError, match="cannot tell the billing format"):
        ingest_billing(store, [odd], progress=quiet)
    with pytest.raises(InputError, match="no such file"):
        ingest_billing(store, [tmp_path / "nope.csv"], progress=quiet)
    with pytest.raises(InputError, match="unknown billing format 'xls'"):
        ingest_billing(store, [odd], fmt="xls", progress=quiet)
