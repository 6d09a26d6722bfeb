"""Billing test fixtures: moto's real server on loopback, sample files, a helper to load."""
from __future__ import annotations

import socket

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def moto_url():
    """moto's ThreadedMotoServer on 127.0.0.1 (S3, Cost Explorer, STS)."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def aws_env(monkeypatch, moto_url):
    """Fake AWS credentials and the moto endpoint through the standard AWS variables."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    return moto_url


@pytest.fixture
def focus_dir(shared_data):
    return shared_data / "focus"


@pytest.fixture
def focus_sample(focus_dir):
    return focus_dir / "focus_1.0_sample_first600rows.csv"


@pytest.fixture
def quiet():
    lines: list[str] = []
    return lines.append
