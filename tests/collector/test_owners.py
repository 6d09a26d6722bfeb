"""Owner discovery against captured-style /proc trees, kubelet /pods and Slurm output.

Formats of the files under data/ (see the module docstring of collector.owners for sources):
/proc/PID/status as printed by Linux 5.15 (fs/proc/array.c), /proc/PID/cgroup in cgroup v2
(single ``0::`` line) and v1/hybrid form (one line per hierarchy, Ubuntu 20.04), kubelet
``/pods`` PodList JSON (k8s.io/api core/v1 Pod), ``scontrol show job`` one-line and
multi-line output and ``squeue --format='%i|%a|%u|%P|%j'``.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from collector.owners import CgroupIds, Owner, OwnerLookupError, PodInfo, SlurmJob, ids_from_cgroup, owner_of
from collector.owners_kubernetes import KubeletPods, parse_pod_list
from collector.owners_slurm import SlurmJobs, job_from_scontrol, parse_scontrol_job, parse_squeue

DATA = Path(__file__).parent / "data"
PROC = str(DATA / "proc")
USERS = {0: "root", 1000: "alice", 1001: "alice", 1002: "bob"}.get
POD_A = "6f1a3c2e-8b4d-4f5e-9a7b-2c3d4e5f6a7b"
CTR_A = "3f9e2c1b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f"


def users(uid):
    return USERS(uid) or str(uid)


@pytest.mark.parametrize("pid, expected", [
    (4101, CgroupIds(container_id=CTR_A, container_runtime="containerd", pod_uid=POD_A)),
    (4102, CgroupIds(container_id="8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c",
                     pod_uid="b2c4e6f8-1a3b-4c5d-8e7f-9a0b1c2d3e4f")),
    (4103, CgroupIds(job_id="4242", slurm_uid=1001)),
    (4104, CgroupIds(job_id="4243")),
    (4105, CgroupIds(container_id="1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c",
                     container_runtime="docker")),
    (4106, CgroupIds(container_id="9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b",
                     container_runtime="cri-o", pod_uid="0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d")),
    (4107, CgroupIds()),
    (4108, CgroupIds(container_id=CTR_A, container_runtime="containerd", pod_uid=POD_A)),
])
def test_ids_from_captured_cgroup_files(pid, expected):
    assert ids_from_cgroup((DATA / "proc" / str(pid) / "cgroup").read_text()) == expected


def test_other_container_layouts():
    cid = "a" * 64
    assert ids_from_cgroup(f"12:memory:/docker/{cid}\n") == CgroupIds(cid, "docker")
    assert ids_from_cgroup(
        f"0::/system.slice/containerd.service/kubepods-besteffort-pod0a1b2c3d_4e5f_6a7b_8c9d_"
        f"0e1f2a3b4c5d.slice:cri-containerd:{cid}\n") == CgroupIds(
        cid, "containerd", "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d")
    assert ids_from_cgroup(f"0::/machine.slice/libpod-{cid}.scope/container\n") == \
        CgroupIds(cid, "podman")
    # conmon, the CRI-O monitor, is not the container
    assert ids_from_cgroup(f"0::/system.slice/crio-conmon-{cid}.scope\n") == CgroupIds()
    # several slurmd on one host name their scope after the node
    assert ids_from_cgroup("0::/system.slice/node7_slurmstepd.scope/job_77/step_0/user/task_0"
                           ).job_id == "77"


def test_owner_of_a_kubernetes_process_with_the_kubelet_resolver():
    document = (DATA / "kubelet" / "pods.json").read_bytes()
    asked = []
    pods = KubeletPods("https://10.20.3.17:10250/", fetch=lambda url: asked.append(url) or document)
    assert owner_of(4101, proc=PROC, users=users, pods=pods) == Owner(
        pid=4101, uid=1000, user="alice", container_id=CTR_A, container_runtime="containerd",
        pod_uid=POD_A, k8s_namespace="ml-research", k8s_pod="llm-finetune-7d9c8b6f5-x2k4p",
        k8s_container="trainer", image="nvcr.io/nvidia/pytorch:24.05-py3", team="nlp")
    assert asked == ["https://10.20.3.17:10250/pods"]


def test_owner_of_slurm_processes_with_the_scontrol_resolver():
    outputs = {"4242": DATA / "slurm" / "scontrol_show_job_4242.txt",
               "4243": DATA / "slurm" / "scontrol_show_job_4243_multiline.txt"}
    runs = []

    def run(argv):
        runs.append(argv)
        return outputs[argv[-1]].read_text()

    jobs = SlurmJobs(run=run)
    assert owner_of(4103, proc=PROC, users=users, jobs=jobs) == Owner(
        pid=4103, uid=1001, user="alice", job_id="4242", slurm_account="ml-research")
    assert owner_of(4104, proc=PROC, users=users, jobs=jobs) == Owner(
        pid=4104, uid=1002, user="bob", job_id="4243", slurm_account="cv-platform")
    owner_of(4103, proc=PROC, users=users, jobs=jobs)     # cached
    assert runs == [["scontrol", "show", "job", "--oneliner", "4242"],
                    ["scontrol", "show", "job", "--oneliner", "4243"]]


def test_plain_user_process_and_a_vanished_one():
    assert owner_of(4107, proc=PROC, users=users) == Owner(pid=4107, uid=1000, user="alice")
    assert owner_of(999999, proc=PROC, users=users) is None


def test_default_user_lookup_uses_the_password_database():
    assert owner_of(4105, proc=PROC).user == "root"


def test_a_failing_resolver_leaves_the_owner_unresolved():
    def down(url):
        raise ConnectionRefusedError(111, "Connection refused")

    owner = owner_of(4101, proc=PROC, users=users, pods=KubeletPods("http://node:10255", down))
    assert (owner.resolved, owner.pod_uid, owner.k8s_pod) == (False, POD_A, "")
    with pytest.raises(OwnerLookupError, match="service-account token"):
        KubeletPods("http://node:10255", down).refresh()


def test_kubelet_refetches_unknown_pods_at_most_every_few_seconds():
    now = [100.0]
    fetched = []
    doc = (DATA / "kubelet" / "pods.json").read_bytes()
    pods = KubeletPods("http://n:10255", fetch=lambda u: fetched.append(u) or doc,
                       min_refresh_s=5, clock=lambda: now[0])
    assert pods("00000000-0000-0000-0000-000000000000") is None
    assert pods("11111111-0000-0000-0000-000000000000") is None
    assert len(fetched) == 1
    assert pods(POD_A).name == "llm-finetune-7d9c8b6f5-x2k4p"     # known: no fetch
    now[0] += 5
    assert pods("22222222-0000-0000-0000-000000000000") is None
    assert len(fetched) == 2


def test_parse_pod_list():
    pods = parse_pod_list((DATA / "kubelet" / "pods.json").read_text())
    assert pods["2e4f6a8c-0b1d-4e3f-a5b7-c9d1e3f5a7b9"] == PodInfo(
        namespace="gpu-operator", name="nvidia-dcgm-exporter-tl46n",
        uid="2e4f6a8c-0b1d-4e3f-a5b7-c9d1e3f5a7b9",
        labels={"app": "nvidia-dcgm-exporter", "controller-revision-hash": "6b8b7f9d4c"},
        containers={"5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f":
                    ("nvidia-dcgm-exporter",
                     "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04")})


def test_scontrol_and_squeue_parsers():
    fields = parse_scontrol_job((DATA / "slurm" / "scontrol_show_job_4243_multiline.txt").read_text())
    assert (fields["JobName"], fields["Command"], fields["AllocNode:Sid"], fields["TRES"]) == (
        "eval sweep", "/home/bob/eval.sh --sweep 3", "login02:1177",
        "cpu=8,mem=64G,node=1,billing=8,gres/gpu=1")
    assert job_from_scontrol((DATA / "slurm" / "scontrol_show_job_4242.txt").read_text()) == \
        SlurmJob("4242", "ml-research", "alice", "gpu-h100", "llama-sft")
    assert job_from_scontrol("slurm_load_jobs error: Invalid job id specified") is None
    assert parse_squeue((DATA / "slurm" / "squeue.txt").read_text()) == {
        "4242": SlurmJob("4242", "ml-research", "alice", "gpu-h100", "llama-sft"),
        "4243": SlurmJob("4243", "cv-platform", "bob", "gpu-l40s", "eval sweep"),
        "4250_3": SlurmJob("4250_3", "ml-research", "carol", "gpu-h100", "array|job"),
    }


def test_slurm_resolver_errors():
    def purged(argv):
        raise subprocess.CalledProcessError(1, argv, "", "slurm_load_jobs error: Invalid job id specified\n")

    def no_slurm(argv):
        raise FileNotFoundError(2, "No such file or directory", "scontrol")

    assert SlurmJobs(run=purged)("4242") is None
    with pytest.raises(OwnerLookupError, match="install the Slurm client"):
        SlurmJobs(run=no_slurm)("4242")
    owner = owner_of(4103, proc=PROC, users=users, jobs=SlurmJobs(run=no_slurm))
    assert (owner.resolved, owner.job_id, owner.slurm_account) == (False, "4242", "")
