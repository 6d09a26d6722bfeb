"""Kubernetes pod uid -> namespace, name, labels, annotations and containers, from the kubelet.

The kubelet serves the pods of its node as a ``PodList`` JSON document at ``/pods``
(authenticated port 10250, or the read-only port 10255 where it is still enabled). The
composition root passes ``fetch(url) -> bytes``, which carries the service-account token
and TLS settings; tests pass a function that returns a captured document.
"""
from __future__ import annotations

import json
import time

from collector.owners import OwnerLookupError, PodInfo


def parse_pod_list(document: bytes | str) -> dict[str, PodInfo]:
    """pod uid -> PodInfo for every item of a kubelet ``/pods`` (or API ``PodList``) JSON."""
    data = json.loads(document)
    pods: dict[str, PodInfo] = {}
    for item in data.get("items") or []:
        meta = item.get("metadata") or {}
        uid = meta.get("uid", "")
        containers = {}
        status = item.get("status") or {}
        for cs in (status.get("containerStatuses") or []) + \
                (status.get("initContainerStatuses") or []):
            cid = (cs.get("containerID") or "").split("://", 1)[-1]
            if cid:
                containers[cid] = (cs.get("name", ""), cs.get("image", ""))
        pods[uid] = PodInfo(namespace=meta.get("namespace", ""), name=meta.get("name", ""),
                            uid=uid, labels=dict(meta.get("labels") or {}),
                            annotations=dict(meta.get("annotations") or {}), containers=containers)
    return pods


class KubeletPods:
    """``pods(pod_uid) -> PodInfo | None`` backed by the kubelet's ``/pods``.

    The pod list is fetched again when an unknown uid is asked for, at most once every
    ``min_refresh_s`` seconds, so a new pod is found within one round or two. Until a fetch
    succeeds again after a failed one, an unknown uid raises that failure (not "no such pod").
    """

    def __init__(self, base_url: str, fetch, min_refresh_s: float = 5.0,
                 clock=time.monotonic):
        self.url = base_url.rstrip("/") + "/pods"
        self._fetch, self._clock, self._min = fetch, clock, min_refresh_s
        self._pods: dict[str, PodInfo] = {}
        self._fetched_at: float | None = None
        self._failure: OwnerLookupError | None = None

    def __call__(self, pod_uid: str) -> PodInfo | None:
        if pod_uid not in self._pods:
            if self._may_refresh():
                self.refresh()
            elif self._failure is not None:
                raise self._failure
        return self._pods.get(pod_uid)

    def __len__(self) -> int:
        """Pods in the last list fetched."""
        return len(self._pods)

    def _may_refresh(self) -> bool:
        return self._fetched_at is None or self._clock() - self._fetched_at >= self._min

    def refresh(self) -> None:
        """Fetch the pod list now."""
        self._fetched_at = self._clock()
        try:
            self._pods = parse_pod_list(self._fetch(self.url))
        except (OSError, ValueError) as e:
            self._failure = OwnerLookupError(
                f"cannot read pods from the kubelet at {self.url} ({e}); check the agent's "
                "service-account token and that it may `get nodes/pods` (Kubernetes 1.33+; "
                "`nodes/proxy` before) or that the read-only port is enabled")
            raise self._failure from e
        self._failure = None
