"""S3 FOCUS exports and Cost Explorer pulls against moto's server on loopback."""
from __future__ import annotations

import gzip
import json
import urllib.request
from datetime import datetime, timezone

import boto3
import pandas as pd
import pytest

from ingest.billing.config import BillingConfig, BillingSourceConfig
from ingest.billing.load import ingest_billing
from ingest.billing.pulls import pull_sources


def test_s3_prefix_loads_csv_gz_and_parquet(store, aws_env, focus_sample, tmp_path, quiet):
    s3 = boto3.client("s3")  # endpoint from AWS_ENDPOINT_URL, like an operator's MinIO
    s3.create_bucket(Bucket="billing")
    frame = pd.read_csv(focus_sample, dtype=str, keep_default_na=False)
    s3.put_object(Bucket="billing", Key="focus/2024-09/part-1.csv.gz",
                  Body=gzip.compress(frame.iloc[:300].to_csv(index=False).encode()))
    frame.iloc[300:].to_parquet(tmp_path / "p2.parquet", index=False)
    s3.upload_file(str(tmp_path / "p2.parquet"), "billing", "focus/2024-09/part-2.parquet")
    s3.put_object(Bucket="billing", Key="focus/2024-09/manifest.json.txt", Body=b"{}")
    report = ingest_billing(store, ["s3://billing/focus/"], progress=quiet)
    assert report.rows == 600
    assert [f.label for f in report.files] == ["s3://billing/focus/2024-09/part-1.csv.gz",
                                               "s3://billing/focus/2024-09/part-2.parquet"]
    expected = pd.to_numeric(frame["BilledCost"]).sum()
    assert float(store.scalar("SELECT sum(BilledCost) FROM billing_line_items")) == pytest.approx(expected, abs=1e-9)
    assert store.scalar("SELECT countDistinct(source_file) FROM billing_line_items") == 2


def test_s3_missing_bucket_is_a_named_error(store, aws_env, quiet):
    from base.errors import InputError

    with pytest.raises(InputError, match="s3://no-such-bucket/x: cannot list objects"):
        ingest_billing(store, ["s3://no-such-bucket/x"], progress=quiet)


def ce_result(day: str, groups: list[tuple[str, str, str, str]]) -> dict:
    return {"ResultsByTime": [{
        "TimePeriod": {"Start": day, "End": day[:-2] + f"{int(day[-2:]) + 1:02d}"}, "Estimated": True, "Total": {},
        "Groups": [{"Keys": [svc, f"team${team}"], "Metrics": {
            "UnblendedCost": {"Amount": billed, "Unit": "USD"}, "AmortizedCost": {"Amount": amort, "Unit": "USD"},
            "UsageQuantity": {"Amount": "1", "Unit": "N/A"}}} for svc, team, billed, amort in groups]}],
        "DimensionValueAttributes": []}


def test_cost_explorer_pull_by_service_and_tag_and_repull_replaces(store, aws_env, quiet):
    results = [ce_result("2024-08-30", [("Amazon Elastic Compute Cloud - Compute", "ml", "10.5", "8.25")]),
               ce_result("2024-09-02", [("Amazon Elastic Compute Cloud - Compute", "ml", "20.0", "18.0"),
                                        ("Amazon Simple Storage Service", "", "-1.5", "-1.5")])]
    request = urllib.request.Request(f"{aws_env}/moto-api/static/ce/cost-and-usage-results",
                                     data=json.dumps({"results": results}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    assert urllib.request.urlopen(request).status == 201
    source = BillingSourceConfig(name="aws", kind="aws-cost-explorer", tag_key="team", endpoint_url=aws_env)
    clock = lambda: datetime(2024, 9, 3, 12, tzinfo=timezone.utc)  # noqa: E731
    out = pull_sources(store, BillingConfig(sources=[source]), clock, progress=quiet)
    assert [r.error for r in out] == [""]
    rows = store.rows("SELECT formatDateTime(BillingPeriodStart, '%Y-%m'), toDate(ChargePeriodStart), ServiceName, "
                      "Tags, toFloat64(BilledCost), toFloat64(EffectiveCost), BillingAccountId, BillingCurrency "
                      "FROM billing_line_items ORDER BY 2, 3")
    assert rows == [
        ("2024-08", datetime(2024, 8, 30).date(), "Amazon Elastic Compute Cloud - Compute", {"team": "ml"}, 10.5, 8.25, "123456789012", "USD"),
        ("2024-09", datetime(2024, 9, 2).date(), "Amazon Elastic Compute Cloud - Compute", {"team": "ml"}, 20.0, 18.0, "123456789012", "USD"),
        ("2024-09", datetime(2024, 9, 2).date(), "Amazon Simple Storage Service", {}, -1.5, -1.5, "123456789012", "USD"),
    ]
    pull_sources(store, [source], clock, progress=quiet)  # same answers again: nothing doubles
    assert store.scalar("SELECT count() FROM billing_line_items") == 3
    assert store.scalar("SELECT uniqExact(load_id) FROM billing_loads") == 2


def test_a_failing_source_is_reported_and_the_others_still_run(store, aws_env, focus_sample, quiet):
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="focus-ok")
    s3.upload_file(str(focus_sample), "focus-ok", "exp/sample.csv")
    sources = [BillingSourceConfig(name="broken", kind="s3-focus", url="s3://missing-bucket/x", endpoint_url=aws_env),
               BillingSourceConfig(name="ok", kind="s3-focus", url="s3://focus-ok/exp/", endpoint_url=aws_env)]
    out = pull_sources(store, sources, lambda: 1_725_000_000.0, progress=quiet)
    assert "cannot list objects" in out[0].error and out[1].error == "" and out[1].report.rows == 600
