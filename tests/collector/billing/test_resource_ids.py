"""Billing ResourceIds meet collector instance ids: Python and SQL normalise alike; the view joins."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest

from collector.billing.resource_ids import normalize_resource_id
from ingest.billing.load import Input, load_inputs
from ingest.rollup.run import rollup_day

CASES = [
    ("arn:aws:ec2:us-east-1:123456789012:instance/i-0abc123", "i-0abc123"),
    ("i-0abc123", "i-0abc123"),
    ("arn:aws:s3:::bucket/key", "arn:aws:s3:::bucket/key"),
    ("/subscriptions/S1/resourceGroups/GPU/providers/Microsoft.Compute/virtualMachines/ND96-1/",
     "/subscriptions/s1/resourcegroups/gpu/providers/microsoft.compute/virtualmachines/nd96-1"),
    ("//compute.googleapis.com/projects/p/zones/us-central1-a/instances/4242", "4242"),
    ("projects/p/zones/us-central1-a/instances/4242", "4242"),
    ("  plain-id ", "plain-id"),
    ("", ""),
]


@pytest.mark.parametrize("raw,key", CASES)
def test_python_normalisation(raw, key):
    assert normalize_resource_id(raw) == key


DAY = (datetime.now(timezone.utc) - timedelta(days=2)).replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)


def focus_rows(resource_ids: list[str], cost: str = "4.0") -> pd.DataFrame:
    return pd.DataFrame([{
        "BillingPeriodStart": DAY.strftime("%Y-%m-01"), "BillingPeriodEnd": DAY.strftime("%Y-%m-28"),
        "ChargePeriodStart": DAY.isoformat() + "Z", "ChargePeriodEnd": (DAY + timedelta(hours=1)).isoformat() + "Z", "BilledCost": cost, "EffectiveCost": cost, "ChargeCategory": "Usage",
        "ProviderName": "Mixed", "BillingCurrency": "USD", "ResourceId": rid} for rid in resource_ids])


def test_sql_column_matches_python(store, quiet):
    load_inputs(store, [Input("test", "focus", frame=lambda: focus_rows([raw for raw, _ in CASES]))], quiet)
    got = dict(store.rows("SELECT ResourceId, resource_key FROM billing_line_items"))
    assert got == {raw.strip() if raw.strip() else raw: normalize_resource_id(raw) for raw, _ in CASES}


def test_view_joins_instances_to_collector_hosts(store, quiet):
    load_inputs(store, [Input("test", "focus", frame=lambda: focus_rows(
        ["arn:aws:ec2:us-east-1:1:instance/i-0gpu", "/subscriptions/S1/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/VM1",
         "//compute.googleapis.com/projects/p/zones/z/instances/77", "arn:aws:ec2:us-east-1:1:instance/i-0nogpu"]))], quiet)
    samples = [
        (DAY + timedelta(minutes=5), "aws-h1", "i-0gpu", "GPU-a"), (DAY + timedelta(minutes=6), "aws-h1", "i-0gpu", "GPU-b"),
        (DAY + timedelta(minutes=5), "az-h1", "/subscriptions/s1/resourcegroups/g/providers/microsoft.compute/virtualMachines/vm1", "GPU-c"),
        (DAY + timedelta(minutes=5), "gcp-h1", "77", "GPU-d"),
    ]
    store.client.insert("gpu_samples", samples, column_names=["ts", "host", "instance_id", "gpu_uuid"])
    rollup_day(store, DAY.date(), {"max_gap_s": 300, "default_interval_s": 60})  # the view reads gpu_hour
    rows = store.rows("SELECT host, gpus, toFloat64(effective_cost), currency FROM v_billing_instances ORDER BY host")
    assert rows == [("aws-h1", 2, 4.0, "USD"), ("az-h1", 1, 4.0, "USD"), ("gcp-h1", 1, 4.0, "USD")]
