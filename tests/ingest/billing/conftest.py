"""Billing load test fixtures: moto's real server on loopback, the FOCUS sample files."""
from __future__ import annotations

import pytest

from tests.helpers import free_port


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
