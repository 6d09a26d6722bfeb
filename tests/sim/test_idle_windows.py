"""Idle windows: every planted one is in the data exactly, the natural ones (notebooks idle
overnight, cloud instances left running) are exactly those listed, and there is no other."""
from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd
import pytest

from sim import build_fleet, natural_idle_windows, planted_problems, sample_frames
from sim.manifest import NATURAL_KINDS

from .conftest import DAYS, END, INTERVAL_S
from .runs import THRESHOLD, low_runs, window_keys

IDLE_KINDS = {"idle_allocated", "idle_unallocated", "idle_cloud_unused"}


@pytest.fixture
def natural(natural_windows):
    return natural_windows


def planted_idle(manifest) -> list[dict]:
    return [p for p in manifest if p["kind"] in IDLE_KINDS]


def span_of(samples, p) -> pd.DataFrame:
    return samples[(samples["gpu_uuid"] == p["gpu_uuid"])
                   & (samples["mig_instance"] == p["mig_instance"])
                   & (samples["ts"] >= pd.Timestamp(p["start"]))
                   & (samples["ts"] < pd.Timestamp(p["end"]))]


def test_manifest_has_each_idle_kind(manifest):
    kinds = [p["kind"] for p in planted_idle(manifest)]
    assert kinds.count("idle_allocated") == 3
    assert kinds.count("idle_unallocated") == 2
    assert kinds.count("idle_cloud_unused") == 1
    assert any(p["mig_instance"] for p in manifest if p["kind"] == "idle_allocated")


def test_low_utilization_runs_are_exactly_the_planted_and_natural_windows(samples, manifest,
                                                                          natural):
    found = {(r.host, r.gpu_uuid, r.mig_instance, r.start, r.end)
             for r in low_runs(samples, INTERVAL_S).itertuples()}
    planted, expected_natural = window_keys(planted_idle(manifest)), window_keys(natural)
    assert len(expected_natural) == len(natural)
    assert planted <= found, "a planted window is missing or cut"
    assert found - planted == expected_natural


def test_natural_windows_stay_off_the_planted_gpus(manifest, natural):
    """A planted idle window is the only idle time on its GPU entity, so it can be told apart
    from the natural waste by its entity alone."""
    planted = {(p["host"], p["gpu_uuid"], p["mig_instance"]) for p in planted_idle(manifest)}
    assert natural and not planted & {(w["host"], w["gpu_uuid"], w["mig_instance"])
                                      for w in natural}


def test_natural_windows_of_both_patterns_over_a_month(natural):
    assert {w["kind"] for w in natural} == set(NATURAL_KINDS)
    notebooks = [w for w in natural if w["kind"] == "notebook_overnight"]
    left = [w for w in natural if w["kind"] == "left_running"]
    # half the lane-weeks of 15 eligible 1g slices over 4+ weeks hold a session with up to 4
    # nights: far more than 20 windows unless notebooks stopped idling
    assert len(notebooks) >= 20
    assert len({w["gpu_uuid"] + w["mig_instance"] for w in notebooks}) >= 5
    # 3 fine-tuning instances with ~2 jobs a week, 30 % left running, plus regulated sessions
    incidents = {(w["instance_id"], w["start"]) for w in left}
    assert len(incidents) >= 3 and len({i for i, _ in incidents}) >= 2
    assert {w["idle_kind"] for w in notebooks} == {"allocated"}
    assert {w["idle_kind"] for w in left} == {"unallocated"}


def test_notebook_windows_are_nights_of_their_owner(samples, natural, fleet):
    offsets = {e.host: e.utc_offset_h for e in fleet.entities}
    for w in (w for w in natural if w["kind"] == "notebook_overnight"):
        span = span_of(samples, w)
        assert len(span) == w["minutes"] * 60 // INTERVAL_S
        assert span["util_gpu"].max() < THRESHOLD and span["util_mem"].max() < THRESHOLD
        assert w["team"] == "data-science" and (span["team"] == w["team"]).all()
        assert (span["job_id"] == w["job_id"]).all() and w["job_id"].startswith("jupyter-")
        assert (span["user"] == w["user"]).all() and (span["process_count"] > 0).all()
        assert w["mig_profile"] == "1g.10gb"
        start, end = pd.Timestamp(w["start"]), pd.Timestamp(w["end"])
        local_start = start + pd.Timedelta(hours=offsets[w["host"]])
        if start > samples["ts"].min():
            # left in the evening, after the notebook was used during the day
            assert 17 <= local_start.hour <= 20, w
            before = samples[(samples["gpu_uuid"] == w["gpu_uuid"])
                             & (samples["mig_instance"] == w["mig_instance"])
                             & (samples["ts"] == start - pd.Timedelta(seconds=INTERVAL_S))]
            assert list(before["job_id"]) == [w["job_id"]] and before["util_gpu"].iloc[0] >= 10
        if end <= samples["ts"].max():
            # back the next working morning, or on Monday 00:00 UTC after a weekend
            local_end = end + pd.Timedelta(hours=offsets[w["host"]])
            monday = end.day_of_week == 0 and end.hour == 0 and end.minute == 0
            assert monday or (8 <= local_end.hour <= 10 and local_end.day_of_week < 5), w


def test_left_running_windows_are_unallocated_cloud_time_after_a_job(samples, natural):
    for w in (w for w in natural if w["kind"] == "left_running"):
        assert w["environment"] in ("aws", "gcp", "azure") and w["instance_id"]
        span = span_of(samples, w)
        assert len(span) == w["minutes"] * 60 // INTERVAL_S
        assert (span["util_gpu"] == 0).all() and (span["process_count"] == 0).all()
        assert (span[["team", "user", "job_id"]] == "").all().all()
        start = pd.Timestamp(w["start"])
        if start > samples["ts"].min():
            before = samples[(samples["gpu_uuid"] == w["gpu_uuid"])
                             & (samples["ts"] == start - pd.Timedelta(seconds=INTERVAL_S))]
            assert list(before["job_id"]) == [w["after_job_id"]]
            assert list(before["team"]) == [w["instance_team"]]
        after = samples[(samples["gpu_uuid"] == w["gpu_uuid"])
                        & (samples["ts"] == pd.Timestamp(w["end"]))]
        assert after.empty or (after["process_count"] > 0).all()  # stopped, or the next job


def test_planted_windows_stay_below_threshold_and_have_the_right_owner(samples, manifest):
    for p in planted_idle(manifest):
        span = span_of(samples, p)
        assert len(span) == p["minutes"] * 60 // INTERVAL_S
        assert span["util_gpu"].max() < THRESHOLD and span["util_mem"].max() < THRESHOLD
        if p["kind"] == "idle_allocated":
            assert (span["team"] == p["team"]).all() and (span["job_id"] == p["job_id"]).all()
            assert (span["process_count"] > 0).all()
        else:
            assert (span["team"] == "").all() and (span["process_count"] == 0).all()


def test_windows_on_a_coarse_grid_start_and_end_at_samples(traces_dir):
    """Notebook phases change on whole minutes; at 300 s the listed windows are still the ones
    the samples show (a window starts at its first idle sample, ends at the next sample)."""
    fleet = build_fleet(64, 3, traces_dir=traces_dir)
    end = datetime(2024, 3, 7, 6, tzinfo=timezone.utc)  # a Thursday morning: nights in the window
    samples = pd.concat(list(sample_frames(fleet, 4, 300, end)), ignore_index=True)
    found = {(r.host, r.gpu_uuid, r.mig_instance, r.start, r.end)
             for r in low_runs(samples, 300).itertuples()}
    planted = window_keys(planted_idle(planted_problems(fleet, 4, 300, end)))
    natural = natural_idle_windows(fleet, 4, 300, end)
    assert any(w["kind"] == "notebook_overnight" for w in natural)
    assert found == planted | window_keys(natural)
    assert all(pd.Timestamp(w["start"]).minute % 5 == 0 and pd.Timestamp(w["end"]).minute % 5 == 0
               for w in natural)


def test_natural_windows_are_deterministic(fleet, natural, traces_dir):
    again = natural_idle_windows(build_fleet(64, 7, traces_dir=traces_dir), DAYS, INTERVAL_S, END)
    assert again == natural
    other = natural_idle_windows(build_fleet(64, 8, traces_dir=traces_dir), DAYS, INTERVAL_S, END)
    assert other and {(w["kind"], w["start"], w["end"]) for w in other} != {
        (w["kind"], w["start"], w["end"]) for w in natural}


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
