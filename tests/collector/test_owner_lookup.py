"""The agent's owner lookups built from [collector] (collector.owner_lookup), end to end.

A kubelet stand-in on loopback serves the captured ``/pods`` document (data/kubelet/pods.json)
and insists on the service-account token; Slurm is an ``scontrol`` on PATH that prints the
captured ``scontrol show job --oneliner`` output (data/slurm). /proc is the captured tree
under data/proc: pid 4101 runs in pod ml-research/llm-finetune-…, pid 4103 in Slurm job 4242.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from base.errors import ConfigError
from base.settings import Secret
from collector.config import CollectorConfig
from collector.fake_nvml import MIB, FakeNvml, FakeProcess
from collector.owner_lookup import build_owner_lookup
from collector.owners import pwd_user
from gpuledger.cli.collect import destination_for
from gpuledger.config import load as load_config
from gpuledger.platform import Platform
from ingest.receiver import register_receiver
from ingest.telemetry_config import ReceiverConfig
from tests.collector.test_agent import run_in_thread
from tests.helpers import BearerJsonServer, ServedPlatform, platform_config

DATA = Path(__file__).parent / "data"
PROC = str(DATA / "proc")
PODS = (DATA / "kubelet" / "pods.json").read_bytes()
TOKEN = "kubelet-token-7"


def Kubelet(where: Path, document: bytes = PODS) -> BearerJsonServer:
    """The kubelet's ``GET /pods`` on a loopback HTTPS port, answering only the right bearer token."""
    return BearerJsonServer("/pods", TOKEN, lambda: document, where)


@pytest.fixture
def kubelet(tmp_path):
    k = Kubelet(tmp_path)
    yield k
    k.close()


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return str(path)


@pytest.fixture
def scontrol(tmp_path, monkeypatch):
    """An scontrol on PATH printing the captured job (``scontrol show job --oneliner ID``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "scontrol"
    script.write_text(f'#!/bin/sh\nf="{DATA / "slurm"}/scontrol_show_job_$4.txt"\n'
                      '[ -f "$f" ] || { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }\n'
                      'cat "$f"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return script


def test_kubelet_and_slurm_lookups_from_config(kubelet, token_file, scontrol, caplog):
    c = CollectorConfig(proc_dir=PROC, kubelet_url=kubelet.url, kubelet_token_file=token_file,
                        kubelet_ca_file=str(kubelet.ca))
    with caplog.at_level(logging.INFO, logger="collector.owner_lookup"):
        lookup = build_owner_lookup(c)
    pod = lookup(4101)
    assert (pod.k8s_namespace, pod.k8s_pod, pod.k8s_container, pod.image, pod.team) == (
        "ml-research", "llm-finetune-7d9c8b6f5-x2k4p", "trainer", "nvcr.io/nvidia/pytorch:24.05-py3", "nlp")
    job = lookup(4103)
    assert (job.job_id, job.slurm_account, job.user) == ("4242", "ml-research", "alice")
    assert kubelet.asked == [("/pods", f"Bearer {TOKEN}")]          # probed once at start, then cached
    said = caplog.text
    assert "pods from the kubelet at " + kubelet.url + "/pods (2 pods now)" in said
    assert "Slurm jobs' user and account from scontrol" in said


def test_team_from_a_configured_label_then_an_annotation(token_file, tmp_path):
    doc = json.loads(PODS)
    meta = doc["items"][0]["metadata"]
    del meta["labels"]["team"]
    meta["labels"]["app.kubernetes.io/part-of"] = "llm-platform"
    meta["annotations"] = {"gpuledger.io/team": "research"}
    k = Kubelet(tmp_path, json.dumps(doc).encode())
    try:
        def team(**keys):
            c = CollectorConfig(proc_dir=PROC, kubelet_url=k.url, kubelet_token_file=token_file, slurm="off",
                                kubelet_insecure_tls=True, **keys)             # a self-signed kubelet, unchecked
            return build_owner_lookup(c)(4101).team

        assert team() == ""                                          # default: the `team` label only
        assert team(team_labels=["team", "app.kubernetes.io/part-of"]) == "llm-platform"
        assert team(team_labels=["team"], team_annotations=["gpuledger.io/team"]) == "research"
        assert team(team_labels=["app.kubernetes.io/part-of"], team_annotations=["gpuledger.io/team"]) == \
            "llm-platform"                                           # labels before annotations
    finally:
        k.close()


def test_an_unreachable_kubelet_is_said_once_and_used_once_it_answers(tmp_path, token_file, caplog):
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token")
    k = Kubelet(tmp_path)
    try:
        c = CollectorConfig(proc_dir=PROC, kubelet_url=k.url, kubelet_token_file=str(wrong), slurm="off",
                            kubelet_ca_file=str(k.ca))
        with caplog.at_level(logging.INFO, logger="collector.owner_lookup"):
            lookup = build_owner_lookup(c)
            first = [lookup(4101) for _ in range(3)]
        # what /proc says is kept, the owner is asked again later (resolved False)
        assert {(o.pod_uid, o.k8s_namespace, o.resolved) for o in first} == {
            ("6f1a3c2e-8b4d-4f5e-9a7b-2c3d4e5f6a7b", "", False)}
        failures = [r for r in caplog.records if "does not answer" in r.getMessage() or "failed" in r.getMessage()]
        assert len(failures) == 1 and "HTTP Error 401" in failures[0].getMessage()
        assert "get nodes/pods" in failures[0].getMessage()
        # the token is read at each fetch (it rotates): the right one makes it answer again
        wrong.write_text(TOKEN)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="collector.owner_lookup"):
            lookup.keywords["pods"].resolve._fetched_at = None       # the kubelet's 5 s refetch pause, skipped
            owner = lookup(4101)
        assert (owner.k8s_namespace, owner.resolved) == ("ml-research", True)
        assert [r.getMessage() for r in caplog.records] == [f"owners: the kubelet at {k.url}/pods answers again"]
    finally:
        k.close()


def test_no_kubelet_and_no_scontrol_say_so_once(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("PATH", str(tmp_path))                        # no scontrol anywhere
    with caplog.at_level(logging.INFO, logger="collector.owner_lookup"):
        lookup = build_owner_lookup(CollectorConfig(proc_dir=PROC))
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2
    assert "no kubelet_url" in said[0] and "scontrol is not on PATH" in said[1]
    job = lookup(4103)
    assert (job.job_id, job.slurm_account, job.uid) == ("4242", "", 1001)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="collector.owner_lookup"):
        build_owner_lookup(CollectorConfig(proc_dir=PROC, slurm="off"))
    assert "scontrol" not in caplog.text


def test_slurm_on_without_scontrol_fails_once_per_outage(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("PATH", str(tmp_path))
    lookup = build_owner_lookup(CollectorConfig(proc_dir=PROC, slurm="on"))
    with caplog.at_level(logging.WARNING, logger="collector.owner_lookup"):
        owners = [lookup(4103) for _ in range(3)]
    assert all(o.job_id == "4242" and not o.resolved for o in owners)
    assert caplog.text.count("Slurm (scontrol) failed") == 1 and "install the Slurm client" in caplog.text


def test_owner_keys_in_the_config_file_are_checked(tmp_path):
    path = tmp_path / "gpuledger.toml"
    path.write_text('[collector]\nslurm = "sometimes"\n')
    with pytest.raises(ConfigError, match=r"collector\.slurm.*'auto', 'on', 'off'"):
        load_config(str(path), env={})
    path.write_text('[collector]\nkubelet_url = "node-1:10250"\n')
    with pytest.raises(ConfigError, match=r"collector\.kubelet_url.*https://NODE:10250"):
        load_config(str(path), env={})
    path.write_text('[collector]\nteam_labels = ["team", "app.kubernetes.io/part-of"]\n'
                    'team_annotations = ["gpuledger.io/team"]\nkubelet_insecure_tls = true\n')
    c = load_config(str(path), env={}).collector
    assert (c.team_labels, c.team_annotations, c.kubelet_insecure_tls) == (
        ["team", "app.kubernetes.io/part-of"], ["gpuledger.io/team"], True)


def test_the_agent_stores_pod_and_job_owners(tmp_path, store, kubelet, token_file, scontrol):
    """``gpuledger collect``'s loop: a GPU used by a pod and one by a Slurm job, pushed to the platform."""
    from collector import fake_gpu_models as models

    fake = FakeNvml([models.l40s(0, util_gpu=80, processes=[FakeProcess(4101, 2000 * MIB, "python3", 70, 20)]),
                     models.l40s(1, util_gpu=60, processes=[FakeProcess(4103, 3000 * MIB, "python3", 50, 10)])],
                    start_s=1_784_000_000.0)
    platform = Platform(platform_config(), store)
    register_receiver(platform, store, ReceiverConfig(token=Secret("tok", "test")))
    with ServedPlatform(platform) as served:
        c = CollectorConfig(interval_s=0.05, port=0, spool_dir=str(tmp_path / "spool"), push_url=served.url,
                            push_token=Secret("tok", "test"), host="gpu-node-07", proc_dir=PROC,
                            kubelet_url=kubelet.url, kubelet_token_file=token_file, kubelet_ca_file=str(kubelet.ca))
        _, thread, _ = run_in_thread(c, destination_for(c, None), lambda: fake, rounds=2)
        thread.join(60)
        assert not thread.is_alive()
    rows = store.rows("SELECT gpu_index, team, user, job_id, k8s_namespace, k8s_pod, k8s_container, slurm_account, "
                      "image, count() FROM gpu_samples GROUP BY ALL ORDER BY gpu_index")
    # the pod's user is its uid (1000) named by this machine's password database; the job's, Slurm's
    pod = ("ml-research", "llm-finetune-7d9c8b6f5-x2k4p", "trainer")
    assert rows == [(0, "nlp", pwd_user(1000), "", *pod, "", "nvcr.io/nvidia/pytorch:24.05-py3", 2),
                    (1, "", "alice", "4242", "", "", "", "ml-research", "", 2)]
    assert store.rows("SELECT DISTINCT pid, container_id != '', k8s_pod, k8s_container, job_id, slurm_account "
                      "FROM gpu_processes ORDER BY pid") == [(4101, True, pod[1], "trainer", "", ""),
                                                             (4103, False, "", "", "4242", "ml-research")]
