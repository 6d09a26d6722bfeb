"""Hand-computable scenarios: each expected number below is worked out by hand."""
from datetime import date

import pytest

from ingest.billing.load import ingest_billing
from ingest.rollup.run import rollup
from tests.ingest.rollup.conftest import at, focus_file, insert_samples, series

DAY = date(2026, 3, 2)
ONPREM = {"host": "dgx-1", "gpu_uuid": "GPU-1", "environment": "onprem", "pool": "dgx"}


def run(store, cfg, **kw):
    return rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-04T00:00:00"), **kw)


def busy_idle_gap_busy(store, **owner):
    insert_samples(store, series("2026-03-02T09:00", "2026-03-02T10:00", util_gpu=80.0, util_mem=40.0, **owner)
                   + series("2026-03-02T10:00", "2026-03-02T10:40", util_gpu=1.0, util_mem=0.5, **owner)
                   + series("2026-03-02T11:00", "2026-03-02T12:00", util_gpu=90.0, util_mem=50.0, **owner), **ONPREM)


def test_busy_idle_no_data_busy(store, cfg):
    busy_idle_gap_busy(store, process_count=1, team="nlp", user="ana")
    run(store, cfg)
    hours = store.rows("SELECT hour, covered_s, util_gpu_s / util_covered_s FROM gpu_hour ORDER BY hour")
    assert [(h.hour, c, round(u, 6)) for h, c, u in hours] == [(9, 3600.0, 80.0), (10, 2400.0, 1.0), (11, 3600.0, 90.0)]
    # no data 10:40-11:00 is neither idle nor busy: the 10:00 hour's average is over its 40 covered minutes
    windows = store.rows("SELECT start, end, duration_s, kind, team, user FROM idle_windows")
    assert windows == [(at("2026-03-02T10:00").replace(tzinfo=None), at("2026-03-02T10:40").replace(tzinfo=None),
                        2400, "allocated", "nlp", "ana")]
    fleet = store.rows("SELECT gpu_hours, round(utilization_pct, 6) FROM v_fleet_utilization")
    assert fleet == [(8 / 3, round((80 * 60 + 1 * 40 + 90 * 60) / 160, 6))]


def test_short_dip_is_not_a_window(store, cfg):
    insert_samples(store, series("2026-03-02T09:00", "2026-03-02T10:00", util_gpu=70.0, util_mem=30.0, process_count=1)
                   + series("2026-03-02T10:00", "2026-03-02T10:14", util_gpu=2.0, util_mem=1.0, process_count=1)
                   + series("2026-03-02T10:14", "2026-03-02T11:00", util_gpu=70.0, util_mem=30.0, process_count=1), **ONPREM)
    run(store, cfg)
    assert store.scalar("SELECT count() FROM idle_windows") == 0


def test_memory_activity_keeps_a_gpu_out_of_idle(store, cfg):
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:00", util_gpu=1.0, util_mem=20.0, process_count=1), **ONPREM)
    run(store, cfg)
    assert store.scalar("SELECT count() FROM idle_windows") == 0


def test_allocated_and_unallocated_idle_are_told_apart(store, cfg):
    insert_samples(store, series("2026-03-02T08:00", "2026-03-02T09:00", util_gpu=0.0, util_mem=0.0, process_count=1,
                                 team="nlp", job_id="job-7")
                   + series("2026-03-02T09:00", "2026-03-02T10:30", util_gpu=0.0, util_mem=0.0, process_count=0), **ONPREM)
    run(store, cfg)
    rows = store.rows("SELECT kind, team, job_id, start, end FROM v_idle_waste ORDER BY start")
    assert [(k, t, j, s.hour, e.hour, e.minute) for k, t, j, s, e in rows] == [
        ("allocated", "nlp", "job-7", 8, 9, 0), ("unallocated", "unallocated", "", 9, 10, 30)]


def test_short_gap_inside_idle_does_not_split_it(store, cfg):
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:10", util_gpu=0.0, util_mem=0.0, process_count=0)
                   + series("2026-03-02T10:12", "2026-03-02T10:30", util_gpu=0.0, util_mem=0.0, process_count=0), **ONPREM)
    run(store, cfg)
    assert store.rows("SELECT toString(start), toString(end) FROM idle_windows") == [("2026-03-02 10:00:00.000", "2026-03-02 10:30:00.000")]


def test_onprem_energy_from_a_power_trace(store, cfg):
    # 400 W for 30 minutes then 200 W for 30 minutes = 0.3 kWh; × PUE 1.5 × $0.10/kWh = $0.045
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:30", util_gpu=50.0, power_w=400.0, process_count=1)
                   + series("2026-03-02T10:30", "2026-03-02T11:00", util_gpu=50.0, power_w=200.0, process_count=1), **ONPREM)
    run(store, cfg)
    row = store.rows("SELECT energy_kwh, onprem_energy_usd, onprem_capital_usd, onprem_operations_usd, cost_usd FROM gpu_cost_hour")
    assert row == [pytest.approx((0.3, 0.045, 1.0, 0.5, 1.545))]


def test_eight_gpu_instance_bill_is_split_and_estimated_until_billed(store, cfg, tmp_path):
    gpus = [{"host": "ip-10-0-0-1", "gpu_uuid": f"GPU-{i}", "gpu_index": i, "environment": "aws", "region": "us-east-1",
             "instance_id": "i-0abc", "instance_type": "p4d.24xlarge", "pool": "aws-train"} for i in range(8)]
    for gpu in gpus:
        insert_samples(store, series("2026-03-02T10:00", "2026-03-02T12:00", util_gpu=60.0, process_count=1, team="nlp"), **gpu)
    ingest_billing(store, [focus_file(tmp_path / "bill.csv", [
        {"resource": "arn:aws:ec2:us-east-1:222222222222:instance/i-0abc", "start": "2026-03-02T10:00:00", "cost": "40.00",
         "effective": "24.00", "tags": '{"team": "nlp"}'}])], progress=lambda m: None)
    run(store, cfg)
    per_gpu = store.rows("SELECT hour, gpu_uuid, cloud_gpu_usd, estimated FROM gpu_cost_hour ORDER BY hour, gpu_uuid")
    # 10:00 billed: EffectiveCost $24 (commitment-discounted) / 8 GPUs; 11:00 not billed yet: list $32/h / 8, flagged
    assert [(h.hour, c, e) for h, _, c, e in per_gpu] == [(10, pytest.approx(3.0), 0)] * 8 + [(11, pytest.approx(4.0), 1)] * 8
    spend = store.rows("SELECT cost_kind, cost, estimated_cost FROM team_spend_day WHERE team = 'nlp'")
    assert spend == [("cloud_gpu", pytest.approx(56.0), pytest.approx(32.0))]


def test_bill_without_telemetry_is_kept_as_other_spend(store, cfg, tmp_path):
    ingest_billing(store, [focus_file(tmp_path / "bill.csv", [
        {"resource": "vol-0123", "start": "2026-03-02T00:00:00", "end": "2026-03-03T00:00:00", "cost": "12.50",
         "service": "Amazon Elastic Block Store", "category": "Storage", "tags": '{"team": "vision"}'},
        {"resource": "", "start": "2026-03-02T00:00:00", "end": "2026-03-03T00:00:00", "cost": "3.25",
         "service": "AWS Data Transfer", "category": "Networking"}])], progress=lambda m: None)
    run(store, cfg)
    rows = store.rows("SELECT team, environment, cost_kind, cost FROM team_spend_day ORDER BY team")
    assert rows == [("unallocated", "aws", "cloud_other", 3.25), ("vision", "aws", "cloud_other", 12.5)]
    assert store.scalar("SELECT round(coverage_pct, 4) FROM v_allocation_coverage") == round(100 * 12.5 / 15.75, 4)


def test_attribution_precedence(store, cfg):
    from ingest.rollup.config import AttributionRule

    cfg.attribution = [
        AttributionRule(name="research namespace", team="research", when={"k8s_namespace": "research-*"}),
        AttributionRule(name="slurm account", team_from="slurm_account"),
        AttributionRule(name="pool owner", team="platform", when={"pool": "dgx"}),
    ]
    common = {"util_gpu": 50.0, "process_count": 1}
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:00", k8s_namespace="research-llm", slurm_account="acct-x", **common),
                   **ONPREM)
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:00", slurm_account="acct-y", **common), **ONPREM | {"gpu_uuid": "GPU-2"})
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:00", **common), **ONPREM | {"gpu_uuid": "GPU-3"})
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:00", **common), **ONPREM | {"gpu_uuid": "GPU-4", "pool": "other"})
    run(store, cfg)
    rows = store.rows("SELECT gpu_uuid, team, attributed_by FROM gpu_cost_hour ORDER BY gpu_uuid")
    assert rows == [("GPU-1", "research", "research namespace"), ("GPU-2", "acct-y", "slurm account"),
                    ("GPU-3", "platform", "pool owner"), ("GPU-4", "unallocated", "")]


def test_late_samples_and_restated_bill_are_corrected_without_double_counting(store, cfg, tmp_path):
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:30", util_gpu=50.0, process_count=1, team="nlp"), **ONPREM)
    assert run(store, cfg).days == [DAY]
    assert store.scalar("SELECT sum(gpu_hours) FROM gpu_cost_hour") == pytest.approx(0.5)
    assert run(store, cfg).days == []  # nothing changed, nothing recomputed
    # late samples for the same day arrive: the day is recomputed on its own, not added to
    insert_samples(store, series("2026-03-02T10:30", "2026-03-02T11:00", util_gpu=50.0, process_count=1, team="nlp"), **ONPREM)
    assert run(store, cfg).days == [DAY]
    assert store.scalar("SELECT sum(gpu_hours) FROM gpu_cost_hour") == pytest.approx(1.0)
    assert store.scalar("SELECT sum(cost) FROM team_spend_day") == pytest.approx(1.5, rel=1e-3)
    # a bill, then the provider restates it: the spend follows the restatement, never both
    cloud = {"host": "g-1", "gpu_uuid": "GPU-C", "environment": "gcp", "region": "europe-west4",
             "instance_id": "projects/p/zones/europe-west4-a/instances/4242", "instance_type": "a2-highgpu-1g"}
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T11:00", util_gpu=90.0, process_count=1, team="nlp"), **cloud)
    bill = {"resource": "//compute.googleapis.com/projects/p/zones/europe-west4-a/instances/4242", "start": "2026-03-02T10:00:00",
            "provider": "Google Cloud", "region": "europe-west4", "tags": '{"team": "nlp"}'}
    ingest_billing(store, [focus_file(tmp_path / "v1.csv", [bill | {"cost": "3.67"}])], progress=lambda m: None)
    run(store, cfg)
    ingest_billing(store, [focus_file(tmp_path / "v2.csv", [bill | {"cost": "3.10"}])], progress=lambda m: None)
    assert run(store, cfg).days == [DAY]
    assert store.scalar("SELECT sum(cost) FROM team_spend_day WHERE cost_kind = 'cloud_gpu'") == pytest.approx(3.10)


def test_new_hours_recompute_from_the_changed_hour_only(store, cfg):
    """An hour of new samples recomputes from the hour before it; earlier rows are kept, and the
    result equals a full recomputation."""
    insert_samples(store, series("2026-03-02T08:00", "2026-03-02T12:00", util_gpu=40.0, process_count=1, team="nlp"), **ONPREM)
    run(store, cfg)
    before = store.rows("SELECT minute, covered_s FROM gpu_minute WHERE minute < '2026-03-02 11:00:00' ORDER BY minute")
    insert_samples(store, series("2026-03-02T12:00", "2026-03-02T13:00", util_gpu=2.0, util_mem=0.0, process_count=0), **ONPREM)
    progress = []
    run(store, cfg, progress=progress.append)
    assert progress == ["[1/1] minutes of 2026-03-02 from 11:00", "[1/1] derived 2026-03-02 from 11:00"]
    assert store.rows("SELECT minute, covered_s FROM gpu_minute WHERE minute < '2026-03-02 11:00:00' ORDER BY minute") == before
    incremental = store.rows("SELECT * EXCEPT computed_at FROM idle_windows ORDER BY start")
    hours = store.rows("SELECT hour, team, gpu_hours, cost_usd FROM gpu_cost_hour ORDER BY hour, team")
    spend = store.rows("SELECT * FROM team_spend_day ORDER BY ALL")
    run(store, cfg, force=True)
    assert store.rows("SELECT * EXCEPT computed_at FROM idle_windows ORDER BY start") == incremental
    assert store.rows("SELECT hour, team, gpu_hours, cost_usd FROM gpu_cost_hour ORDER BY hour, team") == hours
    assert store.rows("SELECT * FROM team_spend_day ORDER BY ALL") == spend
    assert len(incremental) == 1 and incremental[0][5] == 3600  # 12:00-13:00 unallocated idle
