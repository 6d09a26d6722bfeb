"""GPU demand that waits: ``gpuledger up`` reads the Slurm and Kubernetes queues every ``[queues]
interval_s`` into ``queue_pending`` (sql/migrations/014_queue_pending.sql; its materialized view
keeps ``queue_pending_hour``).

* Slurm (``slurm``: ``auto`` when ``squeue`` is on PATH, ``on``, ``off``): ``squeue --json
  --states=PENDING``; a Slurm too old for ``--json`` (squeue says "unrecognized option") is read
  with ``--array --format`` instead (``collector.queues.SQUEUE_FORMAT``, run with ``TZ=UTC``).
* Kubernetes (``kubernetes_url``): ``GET /api/v1/pods?fieldSelector=status.phase=Pending`` with
  the service account's token (RBAC: ``list pods`` cluster-wide).

Each source is a job of its own (``queues-slurm``, ``queues-kubernetes``): one failing is logged
once per outage and shown in /healthz, and the other goes on. A read stores one row per pending
job, all in one insert whose token is the read's time, so a retried insert is not doubled.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from datetime import datetime, timezone

from base.errors import TelemetryError
from collector.owner_lookup import kubernetes_fetch
from collector.queues import SQUEUE_FORMAT, PendingJob, pending_from_pod_list, pending_from_squeue_json, pending_from_squeue_text
from ingest.scrape import add_quiet_job

log = logging.getLogger(__name__)

TABLE = "queue_pending"
COLUMNS = ("ts", "interval_s", "scheduler", "cluster", "queue", "pool", "team", "user", "job_id", "gpus",
           "gpu_model", "reason", "submitted")
PENDING_PODS = "/api/v1/pods?fieldSelector=status.phase%3DPending"


def run_squeue(args: list[str]) -> str:
    """``squeue ARGS`` with times in UTC; raises TelemetryError naming what failed."""
    try:
        out = subprocess.run(["squeue", *args], capture_output=True, text=True, timeout=60, check=True,
                             env={**os.environ, "TZ": "UTC"})
    except subprocess.CalledProcessError as e:
        raise TelemetryError(f"`squeue {' '.join(args)}` exited {e.returncode}: "
                             f"{(e.stderr or e.stdout or '').strip()[:300]}") from None
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TelemetryError(f"cannot run squeue ({e}); install the Slurm client on the platform's machine "
                             "or set [queues] slurm = \"off\"") from None
    return out.stdout


OLD_SLURM = ("unrecognized option", "invalid option", "unknown option")   # squeue's words for a flag it lacks


def read_slurm(run=run_squeue) -> list[PendingJob]:
    """The pending GPU jobs, from ``squeue --json`` or, on a Slurm without ``--json``, ``--format``."""
    try:
        return pending_from_squeue_json(run(["--json", "--states=PENDING"]))
    except TelemetryError as e:
        if not any(words in str(e) for words in OLD_SLURM):
            raise
    return pending_from_squeue_text(run(["--noheader", "--array", "--states=PENDING", f"--format={SQUEUE_FORMAT}"]))


def read_kubernetes(config, fetch) -> list[PendingJob]:
    url = config.kubernetes_url.rstrip("/") + PENDING_PODS
    try:
        document = fetch(url)
    except (OSError, ValueError) as e:
        raise TelemetryError(f"cannot list pending pods at {url} ({e}); check the token and that its "
                             "service account may `list pods` in all namespaces") from None
    return pending_from_pod_list(document, tuple(config.pool_selectors), tuple(config.team_labels))


def read_rows(jobs: list[PendingJob], scheduler: str, cluster: str, config, now: float) -> list[tuple]:
    """The ``queue_pending`` rows (``COLUMNS``) of one read: its jobs, and a marker row (``job_id``
    '', 0 GPUs), so an hour whose reads found nothing waiting counts as an hour of no demand, not
    as an hour the reader was down."""
    ts = datetime.fromtimestamp(int(now), timezone.utc)
    marker = (ts, int(config.interval_s), scheduler, cluster, "", "", "", "", "", 0.0, "", "", ts)
    return [marker] + [(ts, int(config.interval_s), j.scheduler, cluster, j.pool, config.pool_map.get(j.pool, j.pool),
                        j.team, j.user, j.job_id, j.gpus, j.gpu_model, j.reason, j.submitted) for j in jobs]


def store_rows(store, rows: list[tuple], token: str) -> None:
    """Insert ``queue_pending`` rows once per ``token`` (in the hourly rollup too)."""
    store.insert(TABLE, rows, COLUMNS, token=token, settings={"deduplicate_blocks_in_dependent_materialized_views": 1})


def store_read(store, jobs: list[PendingJob], scheduler: str, cluster: str, config, now: float) -> int:
    """Store one read's jobs (once, however often this read is retried); return how many."""
    store_rows(store, read_rows(jobs, scheduler, cluster, config, now), f"queues:{scheduler}:{cluster}:{int(now)}")
    return len(jobs)


def register_queues(platform, store, config, which=shutil.which, run=run_squeue, fetch=None, clock=time.time) -> list[str]:
    """Add a job per configured source (see the module docstring); return their names."""
    jobs = []
    if config.slurm == "on" or (config.slurm == "auto" and which("squeue")):
        add_quiet_job(platform, "queues-slurm",
                      lambda: store_read(store, read_slurm(run), "slurm", config.slurm_cluster, config, clock()),
                      config.interval_s)
        jobs.append("queues-slurm")
    elif config.slurm == "auto":
        log.info("queues: squeue is not on PATH: no Slurm queue (install the Slurm client here, "
                 "or set [queues] slurm = \"off\")")
    if config.kubernetes_url:
        fetch = fetch or kubernetes_fetch(config.kubernetes_token_file, config.kubernetes_ca_file,
                                          config.kubernetes_insecure_tls)
        add_quiet_job(platform, "queues-kubernetes",
                      lambda: store_read(store, read_kubernetes(config, fetch), "kubernetes",
                                         config.kubernetes_cluster, config, clock()),
                      config.interval_s)
        jobs.append("queues-kubernetes")
    if jobs:
        log.info("queues: reading %s every %gs", " and ".join(j.split("-")[1] for j in jobs), config.interval_s)
    return jobs
