"""The non-idle planted problems are in the data, each exactly once."""
from __future__ import annotations

import json

import pandas as pd

from sim import fleet_metadata


def one(manifest, kind) -> dict:
    found = [p for p in manifest if p["kind"] == kind]
    assert len(found) == 1, kind
    return found[0]


def test_manifest_is_json_and_complete(manifest):
    json.dumps(manifest)
    assert {p["kind"] for p in manifest} == {
        "idle_allocated", "idle_unallocated", "idle_cloud_unused", "untagged_instance",
        "residency_violation", "driver_drift", "gpu_health", "budget_overrun"}


def test_residency_violation_is_the_only_forbidden_placement(samples, manifest, fleet):
    p = one(manifest, "residency_violation")
    team = samples[samples["team"] == p["team"]]
    allowed = {(a["environment"], r) for a in fleet.team(p["team"]).allowed for r in a["regions"]}
    ok = team.apply(lambda r: (r["environment"], "*") in allowed
                    or (r["environment"], r["region"]) in allowed, axis=1)
    bad = team[~ok]
    assert set(zip(bad["environment"], bad["region"], bad["instance_id"])) == {
        (p["environment"], p["region"], p["instance_id"])}
    assert bad["ts"].min() == pd.Timestamp(p["start"])
    assert bad["ts"].max() + pd.Timedelta(minutes=1) == pd.Timestamp(p["end"])


def test_one_host_drifts_from_its_pool_baseline(samples, manifest):
    p = one(manifest, "driver_drift")
    versions = samples.drop_duplicates(["host", "driver_version", "cuda_version"])
    drifted = versions[(versions["driver_version"] != p["expected_driver"])
                       | (versions["cuda_version"] != p["expected_cuda"])]
    assert list(drifted["host"]) == [p["host"]]
    assert drifted.iloc[0]["driver_version"] == p["actual_driver"]
    assert drifted.iloc[0]["cuda_version"] == p["actual_cuda"]
    assert (versions[versions["pool"] == p["pool"]]["host"].nunique()) >= 2


def test_gpu_health_problem_is_on_one_gpu_only(samples, manifest):
    p = one(manifest, "gpu_health")
    xids = samples[samples["xid_count"] > 0]
    assert set(xids["gpu_uuid"]) == {p["gpu_uuid"]}
    assert [(t.isoformat().replace("+00:00", "Z"), int(x)) for t, x in
            zip(xids["ts"], xids["xid_last"])] == [(e["ts"], e["xid"]) for e in p["xids"]]
    ecc = samples[samples["ecc_uncorrected_volatile"] > 0]
    assert set(ecc["gpu_uuid"]) == {p["gpu_uuid"]}
    assert ecc["ts"].min() == pd.Timestamp(p["ts"])
    assert (ecc["ecc_uncorrected_volatile"] == p["ecc_uncorrected_volatile"]).all()


def test_untagged_instance_runs_and_its_samples_name_the_team(samples, manifest):
    p = one(manifest, "untagged_instance")
    rows = samples[samples["instance_id"] == p["instance_id"]]
    assert rows["ts"].dt.floor("h").nunique() == p["billed_hours"]
    assert set(rows.loc[rows["process_count"] > 0, "team"]) == {p["team_in_samples"]}
    assert "team" not in p["tags"]


def test_exactly_one_team_is_over_budget(manifest, fleet):
    p = one(manifest, "budget_overrun")
    assert p["cloud_effective_cost_usd"] > p["budget_usd"]
    budgets = {t.name: t.budget_usd for t in fleet.teams}
    assert budgets[p["team"]] == p["budget_usd"]
    assert sorted(budgets.values())[0] == p["budget_usd"]


def test_metadata_is_json_and_describes_the_fleet(fleet, samples):
    meta = json.loads(json.dumps(fleet_metadata(fleet)))
    assert set(meta["hosts"]) == set(samples["host"].unique())
    assert {p["name"]: p["environment"] for p in meta["pools"]}["a100-mig"] == "onprem"
    onprem = [p for p in meta["pools"] if p["environment"] == "onprem"]
    assert all(p["capital_usd_per_gpu"] > 0 for p in onprem)
    regulated = [t for t in meta["teams"] if t["residency"]]
    assert [t["name"] for t in regulated] == ["clinical-ai"]
    assert meta["list_prices"]["p4d.24xlarge"]["usd_per_hour"] > 30


def test_fleet_is_half_onprem_over_three_clouds(fleet):
    gpus = {e.gpu_uuid: fleet.pool(e.pool).environment for e in fleet.entities}
    envs = pd.Series(gpus).value_counts()
    assert 28 <= envs["onprem"] <= 36
    assert all(8 <= envs[p] <= 14 for p in ("aws", "gcp", "azure"))
    assert all(len({i.region for i in fleet.instances if i.provider == p}) >= 2
               for p in ("aws", "gcp", "azure"))
    assert all(e.gpu_uuid.startswith("GPU-") and len(e.gpu_uuid) == 40 for e in fleet.entities)
    mig = [e for e in fleet.entities if e.mig_instance]
    assert {e.mig_profile for e in mig} == {"3g.40gb", "2g.20gb", "1g.10gb"}
