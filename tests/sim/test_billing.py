"""FOCUS billing: same conventions as the FOCUS sample, hours and ids equal to the samples."""
from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from sim import build_fleet, write_billing

from .conftest import DAYS, END


@pytest.fixture(scope="module")
def billing_files(fleet, tmp_path_factory):
    return write_billing(fleet, tmp_path_factory.mktemp("billing"), DAYS, END)


@pytest.fixture(scope="module")
def billing(billing_files) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p) for p in billing_files], ignore_index=True)


def compute_lines(billing: pd.DataFrame) -> pd.DataFrame:
    return billing[(billing["ServiceCategory"] == "Compute")
                   & (billing["ChargeCategory"] == "Usage")]


def test_one_file_per_provider_with_the_sample_columns(billing_files, shared_data):
    assert [p.name for p in billing_files] == ["focus_aws.csv", "focus_gcp.csv", "focus_azure.csv"]
    sample = shared_data / "focus" / "focus_1.0_sample_first600rows.csv"
    with open(sample, newline="") as fh:
        expected = next(csv.reader(fh))
    for path in billing_files:
        with open(path, newline="") as fh:
            assert next(csv.reader(fh)) == expected
        text = path.read_text()
        assert ",NULL," in text and "\r\n" not in text


def test_billed_hours_equal_sampled_running_hours(billing, samples):
    cloud = samples[samples["instance_id"] != ""]
    sampled = set(zip(cloud["instance_id"], cloud["ts"].dt.floor("h")))
    lines = compute_lines(billing)
    billed = set(zip(lines["ResourceId"],
                     pd.to_datetime(lines["ChargePeriodStart"]).dt.tz_localize("UTC")))
    assert billed == sampled
    assert len(billed) == len(lines)  # one line per instance-hour
    assert (lines["ConsumedQuantity"] == 1.0).all() and (lines["ConsumedUnit"] == "Hours").all()
    per_hour = cloud.groupby(["instance_id", "gpu_uuid", cloud["ts"].dt.floor("h")]).size()
    assert per_hour.eq(60).all()  # instances run whole hours


def test_regions_and_resource_ids_match_the_samples(billing, samples, fleet):
    cloud = samples[samples["instance_id"] != ""].drop_duplicates("instance_id")
    region_of = dict(zip(cloud["instance_id"], cloud["region"]))
    lines = compute_lines(billing)
    assert dict(zip(lines["ResourceId"], lines["RegionId"])) == region_of
    ids = set(lines["ResourceId"])
    assert any(i.startswith("i-0") for i in ids)
    assert any(i.startswith("projects/") and "/zones/" in i and "/instances/" in i for i in ids)
    assert any(i.startswith("/subscriptions/") and "/providers/Microsoft.Compute/virtualMachines/"
               in i for i in ids)


def test_costs_are_consistent(billing):
    lines = compute_lines(billing)
    assert (lines["ListCost"] == lines["ListUnitPrice"] * lines["PricingQuantity"]).all()
    committed = lines[lines["PricingCategory"] == "Committed"]
    assert len(committed) > 0 and (committed["BilledCost"] == 0).all()
    assert (committed["EffectiveCost"] < committed["ListCost"]).all()
    standard = lines[lines["PricingCategory"] == "Standard"]
    assert (standard["EffectiveCost"] == standard["BilledCost"]).all()
    purchases = billing[billing["ChargeCategory"] == "Purchase"]
    assert purchases["BilledCost"].sum() == pytest.approx(committed["EffectiveCost"].sum(), rel=1e-6)
    assert (purchases["EffectiveCost"] == 0).all()


def test_every_line_is_tagged_with_a_team_except_the_untagged_instance(billing, manifest):
    untagged = next(p for p in manifest if p["kind"] == "untagged_instance")
    tags = billing["Tags"].map(json.loads)
    missing = billing[~tags.map(lambda t: "team" in t)]
    assert set(missing["ResourceId"]) == {untagged["instance_id"]}
    assert len(missing) == untagged["billed_hours"] > 0
    other = billing[(billing["ServiceCategory"] != "Compute")]
    assert {"Storage", "Networking"} <= set(other["ServiceCategory"])


def test_billing_is_deterministic(fleet, traces_dir, billing_files, tmp_path):
    again = write_billing(build_fleet(64, 7, traces_dir=traces_dir), tmp_path, DAYS, END)
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in billing_files]
    other = write_billing(build_fleet(64, 8, traces_dir=traces_dir), tmp_path / "o", DAYS, END)
    assert [p.read_bytes() for p in other] != [p.read_bytes() for p in billing_files]
