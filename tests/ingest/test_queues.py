"""Queue pressure: the Slurm and Kubernetes queues read into queue_pending (ingest/queues.py) and
shown on Placement (sql/queries/queue_pressure.sql, the "burst queued demand" advice).

The captured-style inputs under data/queues follow the formats documented by their tools:
``squeue_23.11.json`` is ``squeue --json`` of Slurm 23.11 (data_parser v0.0.40: ``job_state`` a
list, times as ``{"set", "infinite", "number"}``), ``squeue_pending.txt`` the same queue as
``squeue --noheader --states=PENDING --format='%i|%P|%a|%u|%b|%D|%r|%V'`` with TZ=UTC, and
``pending_pods.json`` a Kubernetes v1 PodList of ``GET /api/v1/pods?fieldSelector=status.phase=Pending``
(plus one running pod, which the reader must skip).
"""
from __future__ import annotations

import json
import logging
import os
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from base.errors import TelemetryError
from collector.queues import pending_from_pod_list, pending_from_squeue_json, pending_from_squeue_text
from dashboard import queries
from dashboard.filters import Filters
from gpuledger.platform import Platform
from ingest.queues import register_queues
from ingest.telemetry_config import QueuesConfig
from tests.dashboard.test_queries import small_fleet  # noqa: F401  (a fixture)
from tests.helpers import BearerJsonServer, platform_config

DATA = Path(__file__).parent / "data" / "queues"
UTC = timezone.utc
TOKEN = "api-token-3"


def test_squeue_json_and_text_give_the_same_pending_gpu_jobs():
    doc = json.loads((DATA / "squeue_23.11.json").read_text())
    from_json = pending_from_squeue_json((DATA / "squeue_23.11.json").read_text())
    # cell by cell against the raw document: the PENDING jobs that ask for a GPU, in order
    raw = [j for j in doc["jobs"] if j["job_state"] == ["PENDING"] and "gpu" in j["tres_req_str"] + j["tres_per_node"]]
    assert [j.job_id for j in from_json] == [str(j["job_id"]) for j in raw] == ["91001", "91002", "91005"]
    for got, job in zip(from_json, raw):
        assert (got.pool, got.team, got.user, got.reason) == (job["partition"], job["account"], job["user_name"],
                                                              job["state_reason"])
        assert got.submitted == datetime.fromtimestamp(job["submit_time"]["number"], UTC)
    # GPUs: the job's total from tres_req_str (8 typed h100 = 8 untyped; 4 over 2 nodes), else per node x nodes
    assert [(j.gpus, j.gpu_model) for j in from_json] == [(8, "h100"), (4, ""), (4, "a100")]
    from_text = pending_from_squeue_text((DATA / "squeue_pending.txt").read_text())
    assert from_text == from_json                     # the CPU-only job (N/A GRES) is left out of both


def test_pending_pods_that_ask_for_gpus():
    pods = pending_from_pod_list((DATA / "pending_pods.json").read_text(),
                                 pool_keys=("gpuledger.io/pool", "nvidia.com/gpu.product"))
    assert [(p.job_id, p.pool, p.team, p.gpus, p.gpu_model, p.reason, p.submitted) for p in pods] == [
        ("ml-research/train-llama-0", "NVIDIA-H100-80GB-HBM3", "nlp", 4, "", "Unschedulable",
         datetime(2026, 7, 14, 3, 0, tzinfo=UTC)),
        ("vision/notebook-7", "a100-mig", "vision", 1, "1g.10gb", "Unschedulable", datetime(2026, 7, 14, 4, 0, tzinfo=UTC)),
        # an init container asking for 2 GPUs outweighs the 1 of the main container, as the scheduler counts
        ("ml-research/warmup-2", "NVIDIA-H100-80GB-HBM3", "nlp", 2, "", "Unschedulable",
         datetime(2026, 7, 14, 4, 20, tzinfo=UTC))]


def test_unreadable_queue_output_is_named():
    with pytest.raises(TelemetryError, match="squeue line 2: expected 8 '|'-separated fields"):
        pending_from_squeue_text("91001|gpu|acct|u|gpu:1|1|Resources|2026-07-14T03:33:20\n91002|gpu|acct\n")
    with pytest.raises(TelemetryError, match="squeue line 1: nodes 'x'"):
        pending_from_squeue_text("91001|gpu|acct|u|gpu:1|x|Resources|2026-07-14T03:33:20\n")
    with pytest.raises(TelemetryError, match="not a JSON object with `jobs`"):
        pending_from_squeue_json("squeue: error: Invalid user")
    with pytest.raises(TelemetryError, match="not a Kubernetes PodList"):
        pending_from_pod_list(b"<html>Forbidden</html>")


def KubernetesApi() -> BearerJsonServer:
    """The API server's pending-pod list on loopback, answering only the right token."""
    return BearerJsonServer("/api/v1/pods?fieldSelector=status.phase%3DPending", TOKEN,
                            lambda: (DATA / "pending_pods.json").read_bytes())


def fake_squeue(tmp_path, monkeypatch, json_ok: bool = True) -> Path:
    """An squeue on PATH printing the captured queue: as JSON, or (an old Slurm) refusing --json."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "squeue"
    log = tmp_path / "squeue.args"
    json_branch = f'cat "{DATA / "squeue_23.11.json"}"' if json_ok else \
        'echo "squeue: unrecognized option \'--json\'" >&2; exit 1'
    script.write_text(f'#!/bin/sh\necho "TZ=$TZ $*" >> "{log}"\n'
                      f'case "$1" in --json) {json_branch} ;; *) cat "{DATA / "squeue_pending.txt"}" ;; esac\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


@pytest.mark.parametrize("json_ok", [True, False], ids=["squeue --json", "old Slurm: --format"])
def test_the_platform_reads_both_queues_into_the_store(store, tmp_path, monkeypatch, json_ok):
    calls = fake_squeue(tmp_path, monkeypatch, json_ok)
    api = KubernetesApi()
    token = tmp_path / "token"
    token.write_text(TOKEN)
    config = QueuesConfig(interval_s=60, slurm="auto", slurm_cluster="hpc-ams1", kubernetes_url=api.url,
                          kubernetes_token_file=str(token), kubernetes_cluster="ams1-k8s",
                          pool_map={"gpu-h100": "dgx-h100", "NVIDIA-H100-80GB-HBM3": "dgx-h100"})
    platform = Platform(platform_config(), store)
    clock = iter([1784005200.7, 1784005260.2, 1784005200.7]).__next__
    assert register_queues(platform, store, config, clock=clock) == ["queues-slurm", "queues-kubernetes"]
    slurm, kube = (platform.scheduler.get_job(n).func for n in ("queues-slurm", "queues-kubernetes"))
    slurm()
    kube()
    slurm()                                    # the same read time again (a retried read): not doubled
    assert platform.parts["queues-slurm"]["last_error"] is None and platform.parts["queues-kubernetes"]["last_ok"]
    assert calls.read_text().splitlines()[0].startswith("TZ=UTC --json --states=PENDING")
    if not json_ok:
        assert "--format=%i|%P|%a|%u|%b|%D|%r|%V" in calls.read_text().splitlines()[1]
    rows = store.rows("SELECT scheduler, cluster, queue, pool, team, job_id, gpus, reason, toString(ts), interval_s "
                      "FROM queue_pending ORDER BY scheduler, job_id")
    read = "2026-07-14 05:00:00"
    assert rows == [
        ("kubernetes", "ams1-k8s", "NVIDIA-H100-80GB-HBM3", "dgx-h100", "nlp", "ml-research/train-llama-0", 4,
         "Unschedulable", "2026-07-14 05:01:00", 60),
        ("kubernetes", "ams1-k8s", "NVIDIA-H100-80GB-HBM3", "dgx-h100", "nlp", "ml-research/warmup-2", 2,
         "Unschedulable", "2026-07-14 05:01:00", 60),
        ("kubernetes", "ams1-k8s", "a100-mig", "a100-mig", "vision", "vision/notebook-7", 1,
         "Unschedulable", "2026-07-14 05:01:00", 60),
        ("slurm", "hpc-ams1", "gpu-h100", "dgx-h100", "ml-research", "91001", 8, "Resources", read, 60),
        ("slurm", "hpc-ams1", "gpu-h100", "dgx-h100", "vision", "91002", 4, "Priority", read, 60),
        ("slurm", "hpc-ams1", "gpu-a100", "gpu-a100", "vision", "91005", 4, "QOSMaxGRESPerUser", read, 60)]
    # the hourly rollup: one row per job and hour; a 60 s read of 8 GPUs is 8/60 GPU-hours
    hour = dict(((j, round(h, 6)), w) for j, h, w in store.rows(
        "SELECT job_id, sum(pending_gpu_hours), dateDiff('second', min(submitted), max(last_seen)) "
        "FROM queue_pending_hour GROUP BY job_id"))
    assert hour[("91001", round(8 / 60, 6))] == 1784005200 - 1784000000


def test_a_failing_source_is_logged_once_and_the_other_goes_on(store, tmp_path, monkeypatch, caplog):
    fake_squeue(tmp_path, monkeypatch)
    api = KubernetesApi()
    config = QueuesConfig(kubernetes_url=api.url, kubernetes_token_file=str(tmp_path / "missing-token"))
    platform = Platform(platform_config(), store)
    register_queues(platform, store, config)
    slurm, kube = (platform.scheduler.get_job(n).func for n in ("queues-slurm", "queues-kubernetes"))
    with caplog.at_level(logging.WARNING):
        kube()
        kube()
        slurm()
    assert caplog.text.count("queues-kubernetes failing") == 1
    assert "list pods" in caplog.text and "HTTP Error 401" in caplog.text
    assert store.scalar("SELECT count() FROM queue_pending WHERE scheduler = 'slurm'") == 3


def test_no_squeue_says_so_once_and_adds_no_job(store, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("PATH", str(tmp_path))
    platform = Platform(platform_config(), store)
    with caplog.at_level(logging.INFO, logger="ingest.queues"):
        assert register_queues(platform, store, QueuesConfig()) == []
    assert "squeue is not on PATH" in caplog.text and platform.scheduler.get_jobs() == []
    assert register_queues(platform, store, QueuesConfig(slurm="off")) == []


def reads(store, job_id, team, pool, gpus, submitted: datetime, first: datetime, last: datetime, every_s=600):
    """Rows of a job seen pending at every read from ``first`` to ``last``."""
    rows, t = [], first
    while t <= last:
        rows.append((t, every_s, "slurm", "hpc", pool, pool, team, "u", job_id, gpus, "", "Resources", submitted))
        t += timedelta(seconds=every_s)
    store.insert("queue_pending", rows, ("ts", "interval_s", "scheduler", "cluster", "queue", "pool", "team", "user",
                                         "job_id", "gpus", "gpu_model", "reason", "submitted"))


def test_queue_pressure_and_the_burst_advice_on_placement(small_fleet):  # noqa: F811
    store, f = small_fleet
    d1, d2 = datetime(2026, 3, 1), datetime(2026, 3, 2)
    # research waits for the dgx pool: 2.0 h (4 GPUs), 0.5 h (2 GPUs), 4.0 h (1 GPU); reads every 10 min
    reads(store, "A", "research", "dgx", 4, d1, d1 + timedelta(minutes=10), d1 + timedelta(hours=2))
    reads(store, "B", "research", "dgx", 2, d1 + timedelta(hours=10), d1 + timedelta(hours=10, minutes=10),
          d1 + timedelta(hours=10, minutes=30))
    reads(store, "C", "research", "dgx", 1, d2 + timedelta(hours=5), d2 + timedelta(hours=5, minutes=10),
          d2 + timedelta(hours=9))
    # inference waits 20 minutes once: below the 1 h advice threshold
    reads(store, "D", "inference", "dgx", 1, d1 + timedelta(hours=12), d1 + timedelta(hours=12, minutes=10),
          d1 + timedelta(hours=12, minutes=20))
    queued = queries.queue_pressure(store, f).set_index("team")
    research = queued.loc["research"]
    # GPU-hours asked for while waiting: 4 x 12 reads + 2 x 3 + 1 x 24, each read 1/6 h
    assert research["jobs"] == 3 and research["pending_gpu_hours"] == pytest.approx((48 + 6 + 24) / 6)
    assert research["pending_gpus"] == pytest.approx(13 / 48)          # over the range's 48 hours with data
    assert research["peak_pending_gpus"] == pytest.approx(4.0)          # 01:00-02:00 on day 1: 6 reads x 4 GPUs
    assert (research["wait_p50_h"], research["wait_p95_h"]) == (pytest.approx(2.0), pytest.approx(4.0))
    aws_gpu_hour = (96 * 4 + 12 * 4) / (96 + 12)                        # the only cloud's cost of a GPU-hour
    assert research["burst_usd_per_h"] == pytest.approx(13 / 48 * aws_gpu_hour)
    assert queued.loc["inference", "wait_p95_h"] == pytest.approx(1 / 3)
    recs = queries.placement(store, f, 0.1, 85.0, queue_wait_h=1.0)
    burst = recs[recs["kind"] == "burst queued demand"]
    assert burst[["team", "pool", "to_environment"]].values.tolist() == [["research", "dgx", "aws"]]
    row = burst.iloc[0]
    assert row["gpu_hours"] == pytest.approx(13) and row["savings_usd"] == pytest.approx(-13 * aws_gpu_hour)
    assert row["why"] == "research waited p95 4 h for dgx while its 0.3 pending GPUs would cost $1.08/h on aws: burst"
    # inference waited too briefly: it keeps its move-baseline advice, and every row says why
    assert "move baseline on-prem" in recs.loc[recs["team"] == "inference", "kind"].tolist()
    assert recs["why"].str.len().min() > 20
    # a higher threshold: no burst advice
    assert "burst queued demand" not in queries.placement(store, f, 0.1, 85.0, queue_wait_h=5.0)["kind"].tolist()
    assert queries.queue_pressure(store, Filters(date(2026, 3, 1), date(2026, 3, 3), teams=("inference",)))[
        "team"].tolist() == ["inference"]
