"""Idle windows: every planted one is in the data exactly, and there is no other."""
from __future__ import annotations

import pandas as pd

from .conftest import INTERVAL_S

THRESHOLD = 5.0
MIN_LENGTH = pd.Timedelta(minutes=15)
STEP = pd.Timedelta(seconds=INTERVAL_S)
KEY = ["host", "gpu_uuid", "mig_instance"]
IDLE_KINDS = {"idle_allocated", "idle_unallocated", "idle_cloud_unused"}


def low_runs(samples: pd.DataFrame) -> pd.DataFrame:
    """Maximal runs of consecutive samples below the threshold on GPU and memory controller;
    a missing sample (stopped instance) ends a run."""
    data = samples.sort_values(KEY + ["ts"], kind="stable").reset_index(drop=True)
    low = (data["util_gpu"] < THRESHOLD) & (data["util_mem"] < THRESHOLD)
    same = (data[KEY] == data[KEY].shift()).all(axis=1)
    contiguous = same & (data["ts"] - data["ts"].shift() == STEP)
    starts = low & ~(low.shift(fill_value=False) & contiguous)
    run = starts.cumsum()[low]
    rows = data[low].assign(run=run)
    runs = rows.groupby("run").agg(host=("host", "first"), gpu_uuid=("gpu_uuid", "first"),
                                   mig_instance=("mig_instance", "first"),
                                   start=("ts", "min"), last=("ts", "max"))
    runs["end"] = runs["last"] + STEP
    return runs[runs["end"] - runs["start"] >= MIN_LENGTH].reset_index(drop=True)


def planted_idle(manifest) -> set[tuple]:
    return {(p["host"], p["gpu_uuid"], p["mig_instance"], pd.Timestamp(p["start"]),
             pd.Timestamp(p["end"])) for p in manifest if p["kind"] in IDLE_KINDS}


def test_manifest_has_each_idle_kind(manifest):
    kinds = [p["kind"] for p in manifest if p["kind"] in IDLE_KINDS]
    assert kinds.count("idle_allocated") == 3
    assert kinds.count("idle_unallocated") == 2
    assert kinds.count("idle_cloud_unused") == 1
    assert any(p["mig_instance"] for p in manifest if p["kind"] == "idle_allocated")


def test_low_utilization_runs_are_exactly_the_planted_windows(samples, manifest):
    found = {(r.host, r.gpu_uuid, r.mig_instance, r.start, r.end)
             for r in low_runs(samples).itertuples()}
    assert found == planted_idle(manifest)


def test_planted_windows_stay_below_threshold_and_have_the_right_owner(samples, manifest):
    for p in (p for p in manifest if p["kind"] in IDLE_KINDS):
        span = samples[(samples["gpu_uuid"] == p["gpu_uuid"])
                       & (samples["mig_instance"] == p["mig_instance"])
                       & (samples["ts"] >= pd.Timestamp(p["start"]))
                       & (samples["ts"] < pd.Timestamp(p["end"]))]
        assert len(span) == p["minutes"] * 60 // INTERVAL_S
        assert span["util_gpu"].max() < THRESHOLD and span["util_mem"].max() < THRESHOLD
        if p["kind"] == "idle_allocated":
            assert (span["team"] == p["team"]).all() and (span["job_id"] == p["job_id"]).all()
            assert (span["process_count"] > 0).all()
        else:
            assert (span["team"] == "").all() and (span["process_count"] == 0).all()


def test_held_gpus_carry_owners_and_unheld_ones_none(samples):
    held = samples["process_count"] > 0
    assert (samples.loc[held, "team"] != "").all()
    assert (samples.loc[held, "user"] != "").all()
    assert (samples.loc[~held, ["team", "user", "job_id"]] == "").all().all()
    k8s = samples["pool"].isin(["dgx-h100", "a100-mig"]) & held
    assert (samples.loc[k8s, "k8s_namespace"] == samples.loc[k8s, "team"]).all()
    slurm = (samples["pool"] == "a100-slurm") & held
    assert (samples.loc[slurm, "slurm_account"] == samples.loc[slurm, "team"]).all()


def test_unheld_onprem_capacity_outside_planted_windows_is_short(samples, manifest):
    onprem = samples[samples["environment"] == "onprem"]
    unheld = onprem[onprem["process_count"] == 0]
    share = len(unheld) / len(onprem)
    assert share < 0.05, f"{share:.1%} of on-prem samples unheld"
