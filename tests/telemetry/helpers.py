"""Shared by the telemetry tests: free ports, bounded waits, an in-process platform server."""
from __future__ import annotations

import socket
import threading
import time
import urllib.request
from types import SimpleNamespace

from collector import fake_gpu_models as models
from collector.fake_nvml import MIB, FakeNvml, FakeProcess


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout_s: float = 30.0, every_s: float = 0.1, what: str = "condition"):
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def get(url: str, timeout_s: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return response.read().decode()


def fake_node(gpus: int = 2, seed: str = "telemetry") -> FakeNvml:
    """A node of L40S GPUs with one busy process each, on a fake clock."""
    fleet = [models.l40s(i, seed=seed, util_gpu=40 + 10 * i, util_mem=20 + i, power_w=200.5 + i,
                         processes=[FakeProcess(4000 + i, (1000 + i) * MIB, "python3", 30, 10)])
             for i in range(gpus)]
    return FakeNvml(fleet, start_s=1_784_000_000.0)


class ServedPlatform:
    """A Platform served on a loopback port in a thread (stop() ends it)."""

    def __init__(self, platform):
        self.platform = platform
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=platform.serve, args=("127.0.0.1", self.port), daemon=True)

    def __enter__(self):
        self._thread.start()
        wait_until(lambda: _answers(self.url + "/healthz"), 30, what="the platform to answer")
        return self

    def __exit__(self, *exc):
        self.platform.stop()
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), "the platform did not stop"


def _answers(url: str) -> bool:
    try:
        get(url, 2)
        return True
    except OSError as e:
        return getattr(e, "code", None) is not None


def platform_config(**sections):
    """A stand-in for gpuledger.config.Config with the sections the telemetry parts read."""
    from gpuledger.config import Config

    cfg = Config()
    return SimpleNamespace(**{**vars(cfg), **sections}) if sections else cfg
