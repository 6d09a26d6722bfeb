"""The agent's owner lookup, built from ``[collector]``: ``/proc``, the kubelet and Slurm.

``build_owner_lookup(config)`` returns ``pid -> Owner | None`` (``collector.owners.owner_of``
with its resolvers):

* the kubelet's ``/pods`` (``kubelet_url``; off when empty) names a process's pod, namespace,
  container and image, and its team from the pod's ``team_labels`` or ``team_annotations``;
* Slurm's ``scontrol`` (``slurm``: ``auto`` uses it when it is on ``PATH``, ``on`` always,
  ``off`` never) names a job's account and user.

Each source is probed once at start. Its state is logged once: on, off (and why), or failing
(with what to check); a failing source is logged again only when it answers again. While it
fails, owners keep what ``/proc`` says (pod uid, job id, unix user) and are asked again.
"""
from __future__ import annotations

import functools
import logging
import shutil
import ssl
import urllib.request
from pathlib import Path

from collector.owners import OwnerLookupError, owner_of

log = logging.getLogger(__name__)

MAX_ANSWER = 256 << 20          # a pod list of a very large cluster is tens of MiB


class Reported:
    """A resolver (``key -> value``) whose failures are logged once, and its recovery once."""

    def __init__(self, name: str, resolve):
        self.name, self.resolve, self.failing = name, resolve, False

    def __call__(self, key):
        try:
            value = self.resolve(key)
        except OwnerLookupError as e:
            if not self.failing:
                self.failing = True
                log.warning("owners: %s failed: %s. Owners keep what /proc says until it answers.", self.name, e)
            raise
        if self.failing:
            self.failing = False
            log.info("owners: %s answers again", self.name)
        return value


def kubernetes_fetch(token_file: str, ca_file: str = "", insecure_tls: bool = False, timeout_s: float = 10.0):
    """``fetch(url) -> bytes`` for the kubelet or the API server: the service-account token (read
    at each call: it rotates) as bearer when the file exists and the URL is https (never in clear
    to a read-only port); TLS checked against ``ca_file`` (or the system's CAs) unless
    ``insecure_tls``; an answer over ``MAX_ANSWER`` bytes is refused. The TLS context is made at
    the first call, so a missing CA file fails that call (logged by the caller), not the start."""
    @functools.cache
    def tls() -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=ca_file or None)
        if insecure_tls:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def fetch(url: str) -> bytes:
        headers = {"Accept": "application/json"}
        secure = url.startswith("https:")
        token = Path(token_file).read_text().strip() if secure and token_file and Path(token_file).is_file() else ""
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout_s, context=tls() if secure else None) as answer:
            body = answer.read(MAX_ANSWER + 1)
        if len(body) > MAX_ANSWER:
            raise ValueError(f"the answer is over {MAX_ANSWER >> 20} MiB")
        return body

    return fetch


def build_owner_lookup(c, which=shutil.which, fetch=None, run=None):
    """``pid -> Owner | None`` for ``CollectorConfig`` ``c`` (see the module docstring).
    ``fetch`` (the kubelet) and ``run`` (Slurm commands) replace the real ones in tests."""
    from collector.owners_kubernetes import KubeletPods
    from collector.owners_slurm import SlurmJobs, run_command

    pods = jobs = None
    if c.kubelet_url:
        fetch = fetch or kubernetes_fetch(c.kubelet_token_file, c.kubelet_ca_file, c.kubelet_insecure_tls)
        kubelet = KubeletPods(c.kubelet_url, fetch)
        pods = Reported(f"the kubelet at {kubelet.url}", kubelet)
        try:
            kubelet.refresh()
            log.info("owners: pods from the kubelet at %s (%d pods now); team from labels %s, annotations %s",
                     kubelet.url, len(kubelet), list(c.team_labels) or "none",
                     list(c.team_annotations) or "none")
        except OwnerLookupError as e:
            pods.failing = True
            log.warning("owners: the kubelet at %s does not answer: %s. Pods are known by uid only "
                        "until it does.", kubelet.url, e)
    else:
        log.info("owners: no kubelet_url: processes in pods are known by pod uid only "
                 "(set [collector] kubelet_url on Kubernetes nodes)")
    if c.slurm == "on" or (c.slurm == "auto" and which("scontrol")):
        jobs = Reported("Slurm (scontrol)", SlurmJobs(run=run or run_command))
        log.info("owners: Slurm jobs' user and account from scontrol")
    elif c.slurm == "auto":
        log.info("owners: scontrol is not on PATH: Slurm jobs keep their id and unix user, no account "
                 "(install the Slurm client, or set [collector] slurm = \"off\" where there is no Slurm)")
    return functools.partial(owner_of, proc=c.proc_dir, pods=pods, jobs=jobs,
                             team_labels=tuple(c.team_labels), team_annotations=tuple(c.team_annotations))
