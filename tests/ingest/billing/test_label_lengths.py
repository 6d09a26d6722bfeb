"""Billing text held to ``ingest.limits`` (issue #15): an over-long value is quarantined by row
with a reason naming the column (FOCUS and provider-native files alike), the other rows load, and
a multi-MB cell refuses the file before it is parsed."""
from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from base.errors import InputError
from ingest.billing.load import ingest_billing


def test_over_long_focus_values_are_quarantined_naming_the_column(store, focus_sample, tmp_path, quiet):
    frame = pd.read_csv(focus_sample, dtype=str, keep_default_na=False).iloc[:20].copy()
    frame.loc[2, "ResourceId"] = "arn:aws:ec2:" + "r" * 3000
    frame.loc[5, "RegionName"] = "x" * 300
    frame.loc[8, "Tags"] = json.dumps({"team": "t" * 600})
    frame.loc[9, "ResourceId"] = "i-" + "0" * 2000                  # an id of 2002 bytes: within 2048
    frame.loc[10, "Tags"] = json.dumps({"team": "t" * 512})         # a tag of 512 bytes: within
    path = tmp_path / "long.csv"
    frame.to_csv(path, index=False)
    report = ingest_billing(store, [path], progress=quiet, max_quarantined_share=0.2)
    bad = store.rows("SELECT source_row, column, reason, length(value) FROM billing_quarantine ORDER BY source_row")
    print(f"rows stored {report.rows}, quarantined {report.quarantined_rows}: {bad}")
    assert (report.rows, report.quarantined_rows) == (17, 3)
    assert bad == [
        (3, "ResourceId", "3012 bytes, over the 2048-byte limit of ResourceId", 3012),
        (6, "RegionName", "300 bytes, over the 256-byte limit of RegionName", 300),
        (9, "Tags", "a tag key or value over the 512-byte limit of Tags", len(frame.loc[8, "Tags"])),
    ]
    assert store.scalar("SELECT max(length(ResourceId)) FROM billing_line_items") == 2002


def test_over_long_native_cur_value_is_quarantined(store, shared_data, tmp_path, quiet):
    frame = pd.read_csv(shared_data / "billing_native" / "aws_cur_legacy_sample.csv", dtype=str,
                        keep_default_na=False).iloc[:10].copy()
    frame.loc[4, "lineItem/ResourceId"] = "i-" + "9" * 5000
    path = tmp_path / "cur.csv"
    frame.to_csv(path, index=False)
    report = ingest_billing(store, [path], progress=quiet, max_quarantined_share=0.5)
    bad = store.rows("SELECT source_row, column, reason FROM billing_quarantine")
    print(f"CUR rows stored {report.rows}, quarantined {report.quarantined_rows}: {bad}")
    assert report.quarantined_rows == 1 and bad[0][1:] == ("ResourceId", "5002 bytes, over the 2048-byte limit of ResourceId")
    assert report.rows == 9


def test_a_multi_megabyte_billing_cell_refuses_the_file_before_parsing(store, focus_sample, tmp_path, quiet):
    frame = pd.read_csv(focus_sample, dtype=str, keep_default_na=False).iloc[:5].copy()
    frame.loc[3, "ChargeDescription"] = "d" * (6 << 20)
    path = tmp_path / "huge.csv"
    frame.to_csv(path, index=False)
    started = time.perf_counter()
    with pytest.raises(InputError) as info:
        ingest_billing(store, [path], progress=quiet, max_quarantined_share=0.5)
    print(f"{path.stat().st_size:,}-byte file refused in {time.perf_counter() - started:.2f}s: {str(info.value)[-200:]}")
    assert (info.value.row, info.value.column) == (4, "ChargeDescription")
    assert store.scalar("SELECT count() FROM billing_line_items") == 0
