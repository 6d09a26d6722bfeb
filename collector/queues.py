"""GPU demand that waits: pending jobs from Slurm and pending pods from Kubernetes.

One ``PendingJob`` per job (or pod) that waits for GPUs, read from:

* ``squeue --json`` (Slurm 21.08+; the 23.02+ shape with ``job_state: ["PENDING"]`` and
  ``{"set", "infinite", "number"}`` times, and the older plain values). The GPUs are the job's
  total from ``tres_req_str`` (``gres/gpu=4``, ``gres/gpu:h100=4``), else ``tres_per_job``
  (``gres/gpu:4``), else ``tres_per_node`` × nodes, else ``tres_per_task`` × tasks; a pending
  job array (``array_task_string`` ``1-100%10``) counts each of its tasks. The wait starts at
  ``eligible_time`` (when dependencies and begin times allowed it to run), else ``submit_time``;
* ``squeue --noheader --array --states=PENDING --format='%i|%P|%a|%u|%b|%D|%r|%V'``
  (``SQUEUE_FORMAT``; one line per array task): id, partition, account, user, GRES per node,
  nodes, reason, submit time (read with ``TZ=UTC``; this form has no eligible time);
* a Kubernetes ``PodList`` (``GET /api/v1/pods?fieldSelector=status.phase=Pending``): pods not
  yet bound to a node that ask for ``nvidia.com/gpu`` or a MIG resource
  (``nvidia.com/mig-1g.10gb``), the larger of the containers' sum and the largest init
  container, as the scheduler counts them. A Pending pod already on a node (pulling its image)
  holds its GPUs and is not waiting.

``gpus`` are GPU-equivalents: a whole GPU is 1, a MIG slice its share of the GPU's 7 compute
slices (``1g.10gb`` = 1/7, ``3g.40gb`` = 3/7). Jobs that ask for no GPU are left out, and so are
Slurm jobs that wait for something other than capacity (``NOT_WAITING_FOR_CAPACITY``: a
dependency, a begin time, a hold). ``pool`` is the Slurm partition or the value of the first of
``pool_keys`` in the pod's nodeSelector (the caller maps it onto gpuledger's pools); ``team``
the Slurm account or the first of the pod's ``team_labels``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone

from base.errors import TelemetryError

SQUEUE_FORMAT = "%i|%P|%a|%u|%b|%D|%r|%V"
GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE = re.compile(r"nvidia\.com/mig-(\S+)")
MIG_COMPUTE_SLICES = 7                    # an A100's / H100's GPCs: a 1g profile is one of them
NOT_WAITING_FOR_CAPACITY = frozenset({"Dependency", "DependencyNeverSatisfied", "BeginTime", "JobHeldUser",
                                      "JobHeldAdmin"})
# gres/gpu=4, gres/gpu:h100=4 (tres strings); gres/gpu:4, gres:gpu:h100:4, gpu:2, gpu:1g.10gb:1 (GRES)
_TRES_GPU = re.compile(r"(?:^|,)gres/gpu(?::([^=,]+))?=(\d+)")
_GRES_GPU = re.compile(r"(?:^|,)(?:gres[:/])?gpu(?::([^:,(=]+))?(?::(\d+))?(?=\(|,|$)")
_MIG_PROFILE = re.compile(r"(\d+)g\.\d+gb")


@dataclass(slots=True)
class PendingJob:
    scheduler: str             # slurm | kubernetes
    job_id: str                # Slurm job id; namespace/pod
    pool: str                  # Slurm partition; the pod's pool node selector
    team: str
    user: str
    gpus: float                # GPU-equivalents (a MIG slice: its share of the GPU)
    gpu_model: str             # the GRES type or MIG profile asked for ('' = any)
    reason: str                # why it waits (Slurm's Reason; the pod's PodScheduled reason)
    submitted: datetime


def pending_from_squeue_json(document: bytes | str) -> list[PendingJob]:
    """The pending GPU jobs of ``squeue --json`` output."""
    try:
        data = json.loads(document)
        jobs = data["jobs"]
    except (ValueError, KeyError, TypeError) as e:
        raise TelemetryError(f"squeue --json output is not a JSON object with `jobs` ({e})") from None
    out = []
    for job in jobs:
        state = job.get("job_state")
        reason = job.get("state_reason", "")
        if "PENDING" not in (state if isinstance(state, list) else [state]) or reason in NOT_WAITING_FOR_CAPACITY:
            continue
        gpus, model = _gpus_of_tres(job.get("tres_req_str") or "")
        for field, times in (("tres_per_job", 1), ("tres_per_node", _number(job.get("node_count")) or 1),
                             ("tres_per_task", _number(job.get("tasks")) or 1)):
            if not gpus:
                each, model = _gpus_of_gres(job.get(field) or "")
                gpus = each * times
        if gpus:
            eligible = _number(job.get("eligible_time"))
            out.append(PendingJob("slurm", str(job.get("job_id", "")), job.get("partition", ""),
                                  job.get("account", ""), job.get("user_name", ""),
                                  gpus * array_tasks(job.get("array_task_string") or ""), model, reason,
                                  _epoch(eligible or _number(job.get("submit_time")))))
    return out


def array_tasks(spec: str) -> int:
    """Tasks in a job array's task string (``1-100%10``, ``1,3,5-9:2``); 1 for a plain job."""
    spec = spec.split("%", 1)[0].strip()
    if not spec:
        return 1
    count = 0
    for part in spec.split(","):
        first, _, rest = part.partition("-")
        last, _, step = rest.partition(":")
        try:
            count += (int(last) - int(first)) // int(step or 1) + 1 if last else 1
        except ValueError:
            raise TelemetryError(f"squeue: job array task string {spec!r} is not N, N-M or N-M:S") from None
    return count


def pending_from_squeue_text(text: str) -> list[PendingJob]:
    """The pending GPU jobs of ``squeue --format=SQUEUE_FORMAT`` output (times in UTC)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.strip().split("|")
        if len(parts) != 8:
            raise TelemetryError(f"squeue line {n}: expected 8 '|'-separated fields ({SQUEUE_FORMAT}), "
                                 f"got {len(parts)}: {line[:120]!r}")
        job_id, partition, account, user, gres, nodes, reason, submitted = parts
        per_node, model = _gpus_of_gres(gres)
        if not per_node or reason in NOT_WAITING_FOR_CAPACITY:
            continue
        try:
            when = datetime.fromisoformat(submitted).replace(tzinfo=timezone.utc)
            count = int(nodes or 1)
        except ValueError:
            raise TelemetryError(f"squeue line {n}: nodes {nodes!r} or submit time {submitted!r} "
                                 "is not a number / an ISO time") from None
        out.append(PendingJob("slurm", job_id, partition, account, user, per_node * count, model, reason, when))
    return out


def pending_from_pod_list(document: bytes | str, pool_keys=(), team_labels=("team",)) -> list[PendingJob]:
    """The pending pods of a Kubernetes ``PodList`` that ask for GPUs."""
    try:
        items = json.loads(document)["items"]
    except (ValueError, KeyError, TypeError) as e:
        raise TelemetryError(f"the pod list is not a Kubernetes PodList ({e})") from None
    out = []
    for pod in items or []:
        status, spec, meta = pod.get("status") or {}, pod.get("spec") or {}, pod.get("metadata") or {}
        scheduled = {c.get("type"): c for c in status.get("conditions") or []}.get("PodScheduled") or {}
        if status.get("phase") != "Pending" or spec.get("nodeName") or scheduled.get("status") == "True":
            continue                              # running, or bound to a node: it holds its GPUs
        gpus, model = _pod_gpus(spec)
        if not gpus:
            continue
        labels, selector = meta.get("labels") or {}, spec.get("nodeSelector") or {}
        reason = scheduled.get("reason") or "Pending"
        created = datetime.fromisoformat(meta.get("creationTimestamp", "1970-01-01T00:00:00Z").replace("Z", "+00:00"))
        uid = (meta.get("uid") or "")[:8]           # a pod recreated under its name is another job
        out.append(PendingJob("kubernetes", f"{meta.get('namespace', '')}/{meta.get('name', '')}"
                                            + (f"#{uid}" if uid else ""),
                              next((selector[k] for k in pool_keys if selector.get(k)), ""),
                              next((labels[k] for k in team_labels if labels.get(k)), ""),
                              "", gpus, model, reason, created.astimezone(timezone.utc)))
    return out


def _pod_gpus(spec: dict) -> tuple[int, str]:
    def asked(container) -> tuple[int, str]:
        resources = container.get("resources") or {}
        wanted = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        total, model = 0.0, ""
        for name, value in wanted.items():
            mig = MIG_RESOURCE.fullmatch(name)
            if name == GPU_RESOURCE or mig:
                total += int(str(value)) * (_gpu_share(mig.group(1)) if mig else 1)
                model = mig.group(1) if mig else model
        return total, model

    regular = [asked(c) for c in spec.get("containers") or []]
    init = [asked(c) for c in spec.get("initContainers") or []]
    total = sum(g for g, _ in regular)
    model = next((m for _, m in regular + init if m), "")
    return max([total] + [g for g, _ in init]), model


def _gpus_of_tres(tres: str) -> tuple[int, str]:
    """GPUs in a TRES string: the untyped total, else the sum of the typed ones."""
    found = _TRES_GPU.findall(tres)
    untyped = [int(n) for kind, n in found if not kind]
    typed = [(kind, int(n) * _gpu_share(kind)) for kind, n in found if kind]
    model = typed[0][0] if len(typed) == 1 else ""
    return (untyped[0] if untyped else sum(n for _, n in typed)), model


def _gpus_of_gres(gres: str) -> tuple[int, str]:
    """GPUs per node in a GRES string (``gres/gpu:4``, ``gpu:a100:2``, ``gres:gpu:1``); 0 for none."""
    total, model = 0.0, ""
    for kind, count in _GRES_GPU.findall(gres.strip()):
        if kind.isdigit() and not count:              # gpu:2: a count, not a type
            kind, count = "", kind
        total += int(count or 1) * _gpu_share(kind)
        model = model or kind
    return total, model


def _gpu_share(kind: str) -> float:
    """The GPU-equivalents of one unit of GRES type / MIG profile ``kind``: 1, or a MIG slice's share."""
    mig = _MIG_PROFILE.fullmatch(kind or "")
    return int(mig.group(1)) / MIG_COMPUTE_SLICES if mig else 1.0


def _number(value) -> int:
    if isinstance(value, dict):
        return int(value.get("number") or 0) if value.get("set", True) and not value.get("infinite") else 0
    return int(value or 0)


def _epoch(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)
