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
    by_id = {str(j["job_id"]): j for j in doc["jobs"]}
    # the PENDING jobs that ask for a GPU and wait for capacity: not the CPU job 91003, the running
    # 91004, or 91006, which waits on a Dependency
    assert [j.job_id for j in from_json] == ["91001", "91002", "91005", "91007", "91008", "91009"]
    for got in from_json:
        job = by_id[got.job_id]
        assert (got.pool, got.team, got.user, got.reason) == (job["partition"], job["account"], job["user_name"],
                                                              job["state_reason"])
        # the wait starts when the job could run: its eligible time (91007's is after its submission)
        assert got.submitted == datetime.fromtimestamp(job["eligible_time"]["number"], UTC)
    # GPUs: tres_req_str's total (8 typed h100 = 8 untyped; 4 over 2 nodes), else tres_per_job
    # (--gpus=2), else per node x nodes (2 x 2), else per task x tasks (1 x 3); an array of 10 tasks x 1
    assert [(j.gpus, j.gpu_model) for j in from_json] == [
        (8, "h100"), (4, ""), (4, "a100"), (2, ""), (3, ""), (10, "")]
    # the --format form of the same queue, one line per array task (--array); it has no
    # tres_per_task, so --gpus-per-task job 91008 is left out of the capture
    from_text = pending_from_squeue_text((DATA / "squeue_pending.txt").read_text())
    per_job: dict[str, float] = {}
    for j in from_text:
        per_job[j.job_id.split("_")[0]] = per_job.get(j.job_id.split("_")[0], 0) + j.gpus
    assert per_job == {j.job_id: j.gpus for j in from_json if j.job_id != "91008"}
    assert [j for j in from_text if j.job_id == "91001"] == [j for j in from_json if j.job_id == "91001"]


def test_gpu_counting_edge_cases():
    from collector.queues import _gpus_of_gres, array_tasks

    assert _gpus_of_gres("gres/gpu:2(IDX:0-1)") == (2, "")
    assert _gpus_of_gres("gpu") == (1, "") and _gpus_of_gres("N/A") == (0, "")
    assert _gpus_of_gres("gres:gpu:1g.10gb:7") == (pytest.approx(1.0), "1g.10gb")      # 7 slices of 1/7
    assert [array_tasks(s) for s in ("", "7", "1-100%10", "1,3,5-9:2")] == [1, 1, 100, 5]
    with pytest.raises(TelemetryError, match="job array task string"):
        array_tasks("1-x")


def test_pending_pods_that_ask_for_gpus():
    pods = pending_from_pod_list((DATA / "pending_pods.json").read_text(),
                                 pool_keys=("gpuledger.io/pool", "nvidia.com/gpu.product"))
    # a recreated pod is another job: the id carries the start of its uid; a MIG slice is its share
    # of a GPU (1g of 7); train-llama-1 is Pending but bound to a node (pulling its image): not waiting
    assert [(p.job_id, p.pool, p.team, p.gpus, p.gpu_model, p.reason, p.submitted) for p in pods] == [
        ("ml-research/train-llama-0#uid-trai", "NVIDIA-H100-80GB-HBM3", "nlp", 4, "", "Unschedulable",
         datetime(2026, 7, 14, 3, 0, tzinfo=UTC)),
        ("vision/notebook-7#uid-note", "a100-mig", "vision", pytest.approx(1 / 7), "1g.10gb", "Unschedulable",
         datetime(2026, 7, 14, 4, 0, tzinfo=UTC)),
        # an init container asking for 2 GPUs outweighs the 1 of the main container, as the scheduler counts
        ("ml-research/warmup-2#uid-warm", "NVIDIA-H100-80GB-HBM3", "nlp", 2, "", "Unschedulable",
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


def KubernetesApi(where: Path) -> BearerJsonServer:
    """The API server's pending-pod list on loopback HTTPS, answering only the right token."""
    return BearerJsonServer("/api/v1/pods?fieldSelector=status.phase%3DPending", TOKEN,
                            lambda: (DATA / "pending_pods.json").read_bytes(), where)


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
    api = KubernetesApi(tmp_path)
    token = tmp_path / "token"
    token.write_text(TOKEN)
    config = QueuesConfig(interval_s=60, slurm="auto", slurm_cluster="hpc-ams1", kubernetes_url=api.url,
                          kubernetes_token_file=str(token), kubernetes_ca_file=str(api.ca), kubernetes_cluster="ams1-k8s",
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
    rows = store.rows("SELECT scheduler, cluster, queue, pool, team, job_id, round(gpus, 4), reason, toString(ts), "
                      "interval_s FROM queue_pending WHERE scheduler = 'kubernetes' AND job_id != '' ORDER BY job_id")
    k8s_read = "2026-07-14 05:01:00"
    assert rows == [
        ("kubernetes", "ams1-k8s", "NVIDIA-H100-80GB-HBM3", "dgx-h100", "nlp", "ml-research/train-llama-0#uid-trai", 4,
         "Unschedulable", k8s_read, 60),
        ("kubernetes", "ams1-k8s", "NVIDIA-H100-80GB-HBM3", "dgx-h100", "nlp", "ml-research/warmup-2#uid-warm", 2,
         "Unschedulable", k8s_read, 60),
        ("kubernetes", "ams1-k8s", "a100-mig", "a100-mig", "vision", "vision/notebook-7#uid-note", round(1 / 7, 4),
         "Unschedulable", k8s_read, 60)]
    # Slurm: the GPUs of each job as read (JSON: an array's 10 tasks in one record; --format: a line
    # each, and no --gpus-per-task job), the partition mapped onto the pool
    slurm_rows = dict(store.rows("SELECT splitByChar('_', job_id)[1], sum(gpus) FROM queue_pending "
                                 "WHERE scheduler = 'slurm' AND job_id != '' GROUP BY 1"))
    assert slurm_rows == ({"91001": 8, "91002": 4, "91005": 4, "91007": 2, "91009": 10} | ({"91008": 3} if json_ok else {}))
    assert store.rows("SELECT DISTINCT queue, pool FROM queue_pending WHERE scheduler = 'slurm' AND job_id != '' "
                      "ORDER BY queue") == [("gpu-a100", "gpu-a100"), ("gpu-h100", "dgx-h100")]
    # each read stored once, with its marker (the retried Slurm read added nothing)
    assert store.rows("SELECT scheduler, toString(ts), count() FROM queue_pending WHERE job_id = '' "
                      "GROUP BY ALL ORDER BY 1") == [("kubernetes", k8s_read, 1), ("slurm", "2026-07-14 05:00:00", 1)]
    # the hourly rollup: one row per job and hour; a 60 s read of 8 GPUs is 8/60 GPU-hours
    hour = dict(((j, round(h, 6)), w) for j, h, w in store.rows(
        "SELECT job_id, sum(pending_gpu_hours), dateDiff('second', min(submitted), max(last_seen)) "
        "FROM queue_pending_hour GROUP BY job_id"))
    assert hour[("91001", round(8 / 60, 6))] == 1784005200 - 1784000000


def test_a_failing_source_is_logged_once_and_the_other_goes_on(store, tmp_path, monkeypatch, caplog):
    fake_squeue(tmp_path, monkeypatch)
    api = KubernetesApi(tmp_path)
    config = QueuesConfig(kubernetes_url=api.url, kubernetes_token_file=str(tmp_path / "missing-token"),
                          kubernetes_ca_file=str(api.ca))
    platform = Platform(platform_config(), store)
    register_queues(platform, store, config)
    slurm, kube = (platform.scheduler.get_job(n).func for n in ("queues-slurm", "queues-kubernetes"))
    with caplog.at_level(logging.WARNING):
        kube()
        kube()
        slurm()
    assert caplog.text.count("queues-kubernetes failing") == 1
    assert "list pods" in caplog.text and "HTTP Error 401" in caplog.text
    assert store.scalar("SELECT count() FROM queue_pending WHERE scheduler = 'slurm' AND job_id != ''") == 6


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
    # the reader's marker rows: the queues were read every 10 minutes of both days
    store.insert("queue_pending", [(d1 + timedelta(minutes=10 * k), 600, "slurm", "hpc", "", "", "", "", "", 0.0, "", "",
                                    d1) for k in range(6 * 48)], ("ts", "interval_s", "scheduler", "cluster", "queue",
                                                                   "pool", "team", "user", "job_id", "gpus", "gpu_model",
                                                                   "reason", "submitted"))
    # inference waits 20 minutes once: below the 1 h advice threshold
    reads(store, "D", "inference", "dgx", 1, d1 + timedelta(hours=12), d1 + timedelta(hours=12, minutes=10),
          d1 + timedelta(hours=12, minutes=20))
    queued = queries.queue_pressure(store, f).set_index("team")
    research = queued.loc["research"]
    # GPU-hours asked for while waiting: 4 x 12 reads + 2 x 3 + 1 x 24, each read 1/6 h
    assert research["jobs"] == 3 and research["pending_gpu_hours"] == pytest.approx((48 + 6 + 24) / 6)
    assert research["pending_gpus"] == pytest.approx(13 / 48)          # over the 48 hours the queues were read
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
