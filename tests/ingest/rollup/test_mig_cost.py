"""A MIG GPU's cost, shared by its instances (sql/rollup/entity_share.sql), hand-computed: the
GPU's cost adds up whatever the shape its telemetry comes in (the NVML agent's whole-GPU row beside
the instances, dcgm-exporter's instances alone, nvidia-smi -q -x without profiles) and on any MIG
model (an A30 has 4 compute slices, not 7). On-prem a GPU-hour costs $1.5 of capital and
operations (conftest's cfg) plus its energy; in the cloud it costs its share of the bill."""
from datetime import date

import pytest

from ingest.billing.load import ingest_billing
from ingest.rollup.run import rollup
from tests.ingest.rollup.conftest import at, focus_file, insert_samples, series

HOURS = ("2026-03-02T10:00", "2026-03-02T12:00")          # two hours


def run(store, cfg):
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-04T00:00:00"))


def gpu(store, host, model, instances, whole_row, watts=280.0, **where):
    """One GPU: ``instances`` (mig_instance, profile, team); with ``whole_row`` the NVML agent's
    whole-GPU row (power, no utilization) beside them, without it dcgm-exporter's shape (each
    instance repeats the GPU's power)."""
    common = {"host": host, "gpu_uuid": f"GPU-{host}", "model": model, "environment": "onprem", "pool": "dgx", **where}
    if whole_row:
        insert_samples(store, series(*HOURS, power_w=watts), **common)
    for mig, profile, team in instances:
        insert_samples(store, series(*HOURS, util_gpu=50.0, process_count=1, team=team,
                                     power_w=None if whole_row else watts),
                       **common, mig_instance=mig, mig_profile=profile)


def per_entity(store, host, column="gpu_hours"):
    return dict(store.rows(f"SELECT mig_instance, sum({column}) FROM gpu_cost_hour WHERE host = {{h:String}} "
                           "GROUP BY mig_instance", {"h": host}))


def test_the_gpu_adds_up_in_every_shape(store, cfg):
    a100 = [("1", "3g.40gb", "alpha"), ("2", "2g.20gb", "beta")]           # 5 of 7 slices
    gpu(store, "nvml", "NVIDIA A100-SXM4-80GB", a100, whole_row=True)
    gpu(store, "dcgm", "NVIDIA A100-SXM4-80GB", a100, whole_row=False)
    gpu(store, "a30", "NVIDIA A30", [("1", "2g.12gb", "alpha"), ("2", "1g.6gb", "beta")], whole_row=True)
    gpu(store, "xml", "NVIDIA A100-SXM4-80GB", [("1", "", "alpha"), ("2", "", "beta")], whole_row=False)
    gpu(store, "full", "NVIDIA H100 80GB HBM3", [("1", "3g.40gb", "alpha"), ("2", "2g.20gb", "beta"),
                                               ("3", "2g.20gb", "beta")], whole_row=True)
    run(store, cfg)

    # beside a whole-GPU row, the slices no instance holds stay with it: 3/7, 2/7 and 2/7 of 2 h
    assert per_entity(store, "nvml") == {"1": pytest.approx(6 / 7), "2": pytest.approx(4 / 7), "": pytest.approx(4 / 7)}
    # without one (dcgm-exporter) the instances share the whole GPU by their slices (was 6/7 + 4/7:
    # 2/7 of the GPU's capital and operations charged to no one)
    assert per_entity(store, "dcgm") == {"1": pytest.approx(6 / 5), "2": pytest.approx(4 / 5)}
    # an A30 has 4 slices (was sevenths: 4/7 + 2/7 of 2 h, and the whole-GPU row 8/7)
    assert per_entity(store, "a30") == {"1": pytest.approx(1.0), "2": pytest.approx(0.5), "": pytest.approx(0.5)}
    # without profiles the instances share the GPU equally (was 0 GPU-hours and $0 of capital)
    assert per_entity(store, "xml") == {"1": pytest.approx(1.0), "2": pytest.approx(1.0)}
    # instances that fill the GPU leave its whole-GPU row nothing, and v_unallocated no empty row
    assert per_entity(store, "full")[""] == pytest.approx(0.0)
    assert store.rows("SELECT host, cost_usd FROM v_unallocated WHERE host IN ('full', 'xml')") == []

    # each GPU: 2 GPU-hours × $1.5 of capital and operations, and 280 W × 2 h = 0.56 kWh counted
    # once (× PUE 1.5 × $0.10), whatever its shape
    for host in ("nvml", "dcgm", "a30", "xml", "full"):
        assert sum(per_entity(store, host).values()) == pytest.approx(2.0), host
        assert sum(per_entity(store, host, "energy_kwh").values()) == pytest.approx(0.56), host
        assert sum(per_entity(store, host, "cost_usd").values()) == pytest.approx(2 * 1.5 + 0.56 * 1.5 * 0.10), host
    # energy goes with the GPU-hours: the 3g instance of the dcgm GPU 3/5 of it
    assert per_entity(store, "dcgm", "energy_kwh")["1"] == pytest.approx(0.56 * 3 / 5)

    # the fleet view counts physical GPUs and their hours, not one per instance (was 7 "GPUs", 14
    # GPU-hours and 3.36 kWh for these three A100s); the NVML agent's GPU is utilized on the 5/7
    # its instances hold, at 50 %
    fleet = store.rows("SELECT gpus, gpu_hours, energy_kwh, utilization_pct FROM v_fleet_utilization "
                       "WHERE model LIKE '%A100%'")
    assert fleet == [(3, pytest.approx(6.0), pytest.approx(3 * 0.56), pytest.approx(100 * (10 / 7 + 2 + 2) * 0.5 / 6))]


def test_a_cloud_bill_is_not_charged_to_the_whole_gpu_row_of_a_partitioned_gpu(store, cfg, tmp_path):
    """The NVML agent's shape on a 2-GPU instance billed $20 an hour: the MIG GPU's half goes to its
    instances by slices (3:2:2 of 7) and its whole-GPU row, holding no slice, costs nothing (was a
    third of the bill on the whole-GPU row, as if it were one more GPU)."""
    where = {"environment": "aws", "region": "us-east-1", "instance_id": "i-0mig", "instance_type": "p4d.24xlarge"}
    gpu(store, "ip-1", "NVIDIA A100-SXM4-80GB", [("1", "3g.40gb", "alpha"), ("2", "2g.20gb", "beta"),
                                                  ("3", "2g.20gb", "")], whole_row=True, **where)
    insert_samples(store, series(*HOURS, util_gpu=50.0, process_count=1, team="delta"),
                   host="ip-1", gpu_uuid="GPU-B", gpu_index=1, model="NVIDIA A100-SXM4-80GB", **where)
    ingest_billing(store, [focus_file(tmp_path / "bill.csv", [
        {"resource": "arn:aws:ec2:us-east-1:222222222222:instance/i-0mig", "start": "2026-03-02T10:00:00",
         "end": "2026-03-02T12:00:00", "cost": "40.00"}])], progress=lambda m: None)
    run(store, cfg)
    cost = dict(store.rows("SELECT concat(gpu_uuid, '/', mig_instance), sum(cloud_gpu_usd) FROM gpu_cost_hour "
                           "GROUP BY gpu_uuid, mig_instance"))
    assert cost == {"GPU-B/": pytest.approx(20.0), "GPU-ip-1/": pytest.approx(0.0), "GPU-ip-1/1": pytest.approx(20 * 3 / 7),
                    "GPU-ip-1/2": pytest.approx(20 * 2 / 7), "GPU-ip-1/3": pytest.approx(20 * 2 / 7)}
    assert store.scalar("SELECT sum(cost) FROM billing_line_hour") == pytest.approx(40.0)
    showback = dict(store.rows("SELECT x_Team, sum(EffectiveCost) FROM showback_focus_day "
                               "WHERE x_AllocationMethod = 'gpu-time' GROUP BY x_Team"))
    assert showback == {"alpha": pytest.approx(20 * 3 / 7), "beta": pytest.approx(20 * 2 / 7), "delta": pytest.approx(20.0),
                        "unallocated": pytest.approx(20 * 2 / 7)}


def test_an_hour_in_which_the_gpu_is_repartitioned_still_adds_up(store, cfg):
    """dcgm-exporter's shape: 7g until 10:30, then 3g + 4g; 10:00 holds both layouts."""
    common = {"host": "re", "gpu_uuid": "GPU-re", "model": "NVIDIA H100 80GB HBM3", "environment": "onprem", "pool": "dgx",
              "util_gpu": 50.0, "process_count": 1, "power_w": 300.0}
    insert_samples(store, series("2026-03-02T10:00", "2026-03-02T10:30"), mig_instance="0", mig_profile="7g.80gb", **common)
    for mig, profile in (("1", "3g.40gb"), ("2", "4g.40gb")):
        insert_samples(store, series("2026-03-02T10:30", "2026-03-02T12:00"), mig_instance=mig, mig_profile=profile, **common)
    run(store, cfg)
    hours = dict(store.rows("SELECT toHour(hour), sum(gpu_hours) FROM gpu_cost_hour GROUP BY hour"))
    assert hours == {10: pytest.approx(1.0), 11: pytest.approx(1.0)}
    assert per_entity(store, "re") == {"0": pytest.approx(0.5), "1": pytest.approx(1.5 * 3 / 7), "2": pytest.approx(1.5 * 4 / 7)}


def test_the_runtime_matrix_counts_a_partitioned_gpu_once(store):
    # v_runtime_matrix's gpus are physical GPUs, as the Compliance page's matrix counts them: the
    # whole-GPU row and three instances of one A100 are one GPU (it said 4)
    from datetime import datetime, timezone

    hour = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0, tzinfo=None)
    rows = [["h1", "GPU-a", mig, hour, "onprem", "dgx", "550.54.15", "12.4"] for mig in ("", "1", "2", "3")]
    rows.append(["h1", "GPU-b", "", hour, "onprem", "dgx", "550.54.15", "12.4"])
    store.insert("gpu_hour", rows, ["host", "gpu_uuid", "mig_instance", "hour", "environment", "pool",
                                    "driver_version", "cuda_version"])
    assert store.rows("SELECT hosts, gpus FROM v_runtime_matrix WHERE pool = 'dgx'") == [(1, 2)]
