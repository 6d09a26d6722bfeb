"""Who owns a process: container, Kubernetes pod, Slurm job and unix user, from ``/proc``.

``owner_of(pid, proc="/proc", ...)`` reads ``/proc/PID/cgroup`` and ``/proc/PID/status``.
The ``proc`` directory is passed in (tests point it at captured files; an agent running in a
container points it at the host's ``/proc`` mounted with ``hostPID``). Optional resolvers
turn ids into names:

* ``pods(pod_uid) -> PodInfo | None`` — e.g. ``collector.owners_kubernetes.KubeletPods``;
* ``jobs(job_id) -> SlurmJob | None`` — e.g. ``collector.owners_slurm.SlurmJobs``;
* ``users(uid) -> str`` — unix user name; default ``pwd`` (the agent's ``/etc/passwd``).

cgroup path formats recognised (kernel: Documentation/admin-guide/cgroup-v2.rst, "Processes"
and cgroup-v1 "/proc/<pid>/cgroup"; kubelet: pkg/kubelet/cm/cgroup_manager_linux.go and
pod_container_manager_linux.go; Slurm: https://slurm.schedmd.com/cgroup_v2.html and
src/plugins/cgroup/v1/cgroup_v1.c):

* cgroup v2 ``0::/path``; cgroup v1 ``N:controllers:/path`` (one line per hierarchy);
* containers: ``docker-<id>.scope``, ``/docker/<id>``, ``cri-containerd-<id>.scope``,
  ``...slice:cri-containerd:<id>``, ``crio-<id>.scope``, ``libpod-<id>.scope`` (podman), and
  the bare ``<id>`` under a ``kubepods`` pod directory (cgroupfs driver);
* pods: ``kubepods-burstable-pod<uid_with_underscores>.slice`` (systemd driver, also
  ``besteffort`` and guaranteed ``kubepods-pod…``), ``/kubepods/burstable/pod<uid>/``
  (cgroupfs driver);
* Slurm: ``/slurm/uid_<uid>/job_<id>/step_<n>`` (v1), ``…slurmstepd.scope/job_<id>/…`` (v2,
  also ``<nodename>_slurmstepd.scope`` with several slurmd per host).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from base.errors import OwnerLookupError


@dataclass(slots=True)
class PodInfo:
    namespace: str
    name: str
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    containers: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (name, image)


@dataclass(slots=True)
class SlurmJob:
    job_id: str
    account: str = ""
    user: str = ""
    partition: str = ""
    name: str = ""


@dataclass(slots=True)
class Owner:
    """What is known about the owner of one process; '' where unknown."""
    pid: int
    uid: int | None = None
    user: str = ""
    container_id: str = ""
    container_runtime: str = ""
    pod_uid: str = ""
    k8s_namespace: str = ""
    k8s_pod: str = ""
    k8s_container: str = ""
    image: str = ""
    job_id: str = ""
    slurm_account: str = ""
    team: str = ""
    resolved: bool = True   # False: a resolver failed; ask again later


@dataclass(slots=True)
class CgroupIds:
    """Ids found in a cgroup path."""
    container_id: str = ""
    container_runtime: str = ""
    pod_uid: str = ""
    job_id: str = ""
    slurm_uid: int | None = None


_HEX64 = r"[0-9a-f]{64}"
_CONTAINER = [
    (re.compile(rf"(?:^|/)docker-({_HEX64})\.scope"), "docker"),
    (re.compile(rf"/docker/({_HEX64})(?:/|$)"), "docker"),
    (re.compile(rf"cri-containerd-({_HEX64})\.scope"), "containerd"),
    (re.compile(rf":cri-containerd:({_HEX64})"), "containerd"),
    (re.compile(rf"(?:^|/)crio-({_HEX64})\.scope"), "cri-o"),
    (re.compile(rf"libpod-({_HEX64})\.scope"), "podman"),
    (re.compile(rf"/pod[0-9a-f_-]+/({_HEX64})(?:/|$)"), ""),   # cgroupfs kubelet layout
]
_POD = re.compile(r"kubepods.*?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}"
                  r"[-_][0-9a-f]{12}|[0-9a-f]{32})(?:\.slice|/|$)")
_SLURM_V1 = re.compile(r"/slurm[^/]*/uid_(\d+)/job_(\d+)(?:/|$)")
_SLURM_V2 = re.compile(r"slurmstepd\.scope/job_(\d+)(?:/|$)")
# v1 hierarchies in the order we trust them; the unified (v2) line first
_PREFERRED = ("", "memory", "cpu,cpuacct", "pids", "devices", "cpuset")


def cgroup_paths(text: str) -> list[str]:
    """The cgroup paths of a ``/proc/PID/cgroup`` file, most telling first."""
    ranked = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        rank = _PREFERRED.index(controllers) if controllers in _PREFERRED else len(_PREFERRED)
        ranked.append((rank, path.strip()))
    return [p for _, p in sorted(ranked, key=lambda rp: rp[0])]


def ids_from_cgroup(text: str) -> CgroupIds:
    """Container id, pod uid and Slurm job id found in a ``/proc/PID/cgroup`` text."""
    ids = CgroupIds()
    for path in cgroup_paths(text):
        _container(path, ids)
        if not ids.pod_uid and (m := _POD.search(path)):
            ids.pod_uid = m.group(1).replace("_", "-")
        if not ids.job_id:
            if m := _SLURM_V1.search(path):
                ids.slurm_uid, ids.job_id = int(m.group(1)), m.group(2)
            elif m := _SLURM_V2.search(path):
                ids.job_id = m.group(1)
    return ids


def _container(path: str, ids: CgroupIds) -> None:
    if ids.container_id:
        return
    for pattern, runtime in _CONTAINER:
        if m := pattern.search(path):
            ids.container_id, ids.container_runtime = m.group(1), runtime
            return


def uid_from_status(text: str) -> int | None:
    """The real uid from ``/proc/PID/status`` (``Uid:\treal\teffective\tsaved\tfs``)."""
    for line in text.splitlines():
        if line.startswith("Uid:"):
            fields = line.split()
            return int(fields[1]) if len(fields) > 1 else None
    return None


def pwd_user(uid: int) -> str:
    """The user name for a uid from the agent's password database, else the number."""
    import pwd
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def owner_of(pid: int, proc: str = "/proc", users=pwd_user, pods=None, jobs=None,
             team_labels: tuple[str, ...] = ("team",), team_annotations: tuple[str, ...] = ()) -> Owner | None:
    """The owner of ``pid``, or None when the process is gone. Its team is the first of the
    pod's ``team_labels``, then ``team_annotations``, that is set."""
    try:
        cgroup = _read(proc, pid, "cgroup")
        status = _read(proc, pid, "status")
    except (FileNotFoundError, ProcessLookupError):
        return None
    ids = ids_from_cgroup(cgroup)
    owner = Owner(pid=pid, uid=uid_from_status(status), container_id=ids.container_id,
                  container_runtime=ids.container_runtime, pod_uid=ids.pod_uid,
                  job_id=ids.job_id)
    if owner.uid is not None and users is not None:
        owner.user = users(owner.uid)
    if ids.pod_uid and pods is not None:
        _add_pod(owner, pods, team_labels, team_annotations)
    if ids.job_id and jobs is not None:
        _add_job(owner, jobs)
    return owner


def _add_pod(owner: Owner, pods, team_labels, team_annotations) -> None:
    try:
        pod = pods(owner.pod_uid)
    except OwnerLookupError:
        owner.resolved = False
        return
    if pod is None:              # not in the list yet (a pod started after the last fetch): ask again
        owner.resolved = False
        return
    owner.k8s_namespace, owner.k8s_pod = pod.namespace, pod.name
    owner.k8s_container, owner.image = pod.containers.get(owner.container_id, ("", ""))
    owner.team = next((pod.labels[k] for k in team_labels if pod.labels.get(k)), "") or \
        next((pod.annotations[k] for k in team_annotations if pod.annotations.get(k)), "")


def _add_job(owner: Owner, jobs) -> None:
    try:
        job = jobs(owner.job_id)
    except OwnerLookupError:
        owner.resolved = False
        return
    if job is not None:
        owner.slurm_account = job.account
        owner.user = job.user or owner.user


def _read(proc: str, pid: int, name: str) -> str:
    with open(os.path.join(proc, str(pid), name), encoding="utf-8", errors="replace") as f:
        return f.read()
