"""Slurm job id -> account and user, by asking Slurm.

``SlurmJobs(run=...)`` runs ``scontrol show job --oneliner <id>`` through the ``run(argv) ->
str`` function it is given (default: ``subprocess``), so tests pass captured output. A job
Slurm no longer knows (finished and purged) resolves to None; Slurm missing or failing raises
``OwnerLookupError`` and the job is asked again next round.
"""
from __future__ import annotations

import re
import subprocess
import time

from collector.owners import OwnerLookupError, SlurmJob

# Key=Value pairs; a value runs until the next " Key=" (values may hold spaces or '=').
_PAIR = re.compile(r"([A-Za-z][\w:/]*)=(.*?)(?=\s+[A-Za-z][\w:/]*=|\s*$)", re.S)


def parse_scontrol_job(text: str) -> dict[str, str]:
    """``scontrol show job`` output (one-line or multi-line) as a dict of its fields."""
    return {k: v.strip() for k, v in _PAIR.findall(text.strip())}


def job_from_scontrol(text: str) -> SlurmJob | None:
    """The SlurmJob described by ``scontrol show job`` output, None if it names no job."""
    fields = parse_scontrol_job(text)
    if "JobId" not in fields:
        return None
    user = fields.get("UserId", "").split("(", 1)[0]
    return SlurmJob(job_id=fields["JobId"], account=fields.get("Account", ""), user=user,
                    partition=fields.get("Partition", ""), name=fields.get("JobName", ""))


SQUEUE_FORMAT = "%i|%a|%u|%P|%j"


def parse_squeue(text: str) -> dict[str, SlurmJob]:
    """job id -> SlurmJob from ``squeue --noheader --format='%i|%a|%u|%P|%j'`` output."""
    jobs = {}
    for line in text.splitlines():
        parts = line.strip().split("|", 4)
        if len(parts) == 5 and parts[0]:
            jobs[parts[0]] = SlurmJob(job_id=parts[0], account=parts[1], user=parts[2],
                                      partition=parts[3], name=parts[4])
    return jobs


def run_command(argv: list[str]) -> str:
    """Run a Slurm command; raises subprocess.CalledProcessError on a non-zero exit."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=10,
                          check=True).stdout


class SlurmJobs:
    """``jobs(job_id) -> SlurmJob | None``, cached for ``ttl_s`` seconds."""

    def __init__(self, run=run_command, ttl_s: float = 600.0, clock=time.monotonic):
        self._run, self._ttl, self._clock = run, ttl_s, clock
        self._cache: dict[str, tuple[float, SlurmJob | None]] = {}

    def __call__(self, job_id: str) -> SlurmJob | None:
        hit = self._cache.get(job_id)
        if hit is not None and self._clock() - hit[0] < self._ttl:
            return hit[1]
        job = self._ask(job_id)
        self._cache[job_id] = (self._clock(), job)
        return job

    def _ask(self, job_id: str) -> SlurmJob | None:
        try:
            out = self._run(["scontrol", "show", "job", "--oneliner", job_id])
        except subprocess.CalledProcessError as e:
            if "Invalid job id" in (e.stderr or "") + (e.stdout or ""):
                return None
            raise OwnerLookupError(f"`scontrol show job {job_id}` failed: "
                                   f"{(e.stderr or '').strip()}; check slurmctld is reachable "
                                   "from this node") from e
        except (OSError, subprocess.TimeoutExpired) as e:
            raise OwnerLookupError(f"cannot run scontrol ({e}); install the Slurm client "
                                   "commands on the node or do not pass a Slurm resolver") from e
        return job_from_scontrol(out)
