"""Authentication: on by default; no credentials or wrong ones get 401, right ones the page;
/healthz and the ingest endpoints are not behind it; a proxy's trusted header works only from a
trusted address; --no-auth (auth=False) serves without credentials."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest
import requests
from flask import Flask

from base.errors import ConfigError
from dashboard.auth import Authenticator, challenge
from dashboard.config import DashboardConfig
from tests.dashboard.conftest import INGEST_TOKEN, PASSWORD, USER, basic
from tests.helpers import HttpClient, free_port

DASH_PATHS = ["/", "/spend", "/alerts?team=research", "/_dash-layout", "/_dash-dependencies", "/assets/style.css"]


@pytest.mark.parametrize("path", DASH_PATHS)
def test_no_credentials_get_401_with_a_challenge(site, path):
    response = requests.get(site.url + path, timeout=30)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith('Basic realm="gpuledger"')
    assert "gpuledger" not in response.text.split("\n", 1)[1]      # nothing of the dashboard leaks


@pytest.mark.parametrize("header", [basic(USER, "wrong password"), basic("mallory", PASSWORD), basic(USER, ""),
                                    "Basic !!!not-base64", "Bearer " + INGEST_TOKEN, "Basic " + "A" * 10000])
def test_wrong_credentials_get_401(site, header):
    assert requests.get(site.url + "/", headers={"Authorization": header}, timeout=30).status_code == 401


def test_callbacks_need_credentials_too(site):
    body = {"output": "overview-tiles.children", "outputs": {"id": "overview-tiles", "property": "children"},
            "inputs": [{"id": "overview-filters", "property": "data", "value": {}}], "changedPropIds": []}
    response = requests.post(site.url + "/_dash-update-component", json=body, timeout=30)
    assert response.status_code == 401


def test_right_credentials_get_the_page(site):
    response = requests.get(site.url + "/spend", headers={"Authorization": site.auth}, timeout=30)
    assert response.status_code == 200 and "<title>gpuledger</title>" in response.text
    layout = requests.get(site.url + "/_dash-layout", headers={"Authorization": site.auth}, timeout=30)
    assert layout.status_code == 200 and "gl-nav" in layout.text


def test_health_and_ingest_are_not_behind_dashboard_auth(site):
    health = requests.get(site.url + "/healthz", timeout=30)
    assert health.status_code == 200 and health.json()["store"]["ok"] is True
    # the receiver answers with its own bearer-token check, not the dashboard's challenge
    refused = requests.post(site.url + "/api/v1/ingest/batch", data=b"{}", timeout=30)
    assert refused.status_code == 401 and "bearer token" in refused.text
    assert not refused.headers["WWW-Authenticate"].startswith("Basic")
    accepted = requests.post(site.url + "/api/v1/ingest/batch", data=b"not json",
                             headers={"Authorization": f"Bearer {INGEST_TOKEN}"}, timeout=30)
    assert accepted.status_code == 400


def test_trusted_header_only_from_a_trusted_proxy():
    auth = Authenticator(DashboardConfig(trusted_header="X-Forwarded-User"))
    app = Flask("t")
    with app.test_request_context("/", headers={"X-Forwarded-User": "alice"}, environ_base={"REMOTE_ADDR": "127.0.0.1"}) as ctx:
        assert auth.user(ctx.request) == "alice"
    with app.test_request_context("/", headers={"X-Forwarded-User": "alice"}, environ_base={"REMOTE_ADDR": "10.1.2.3"}) as ctx:
        assert auth.user(ctx.request) is None
    with app.test_request_context("/", environ_base={"REMOTE_ADDR": "127.0.0.1"}) as ctx:
        assert auth.user(ctx.request) is None


def test_no_users_configured_explains_how_to_sign_in():
    response = challenge(DashboardConfig())
    assert response.status_code == 401
    assert "[[dashboard.users]]" in response.get_data(as_text=True) and "--no-auth" in response.get_data(as_text=True)


def test_config_refuses_a_plain_password_and_reads_a_hash_secret(tmp_path):
    from base.settings import build

    with pytest.raises(ConfigError, match="never the password itself"):
        build(DashboardConfig, {"users": [{"name": "lead", "password_hash": "hunter22"}]}, "dashboard", "g.toml", {})
    secret = tmp_path / "hash"
    hashed = subprocess.run([sys.executable, "-m", "dashboard.auth", "hash"], input="s3cret-passw0rd\n",
                            capture_output=True, text=True, check=True).stdout.strip()
    secret.write_text(hashed)
    cfg = build(DashboardConfig, {"users": [{"name": "lead", "password_hash_secret": {"file": str(secret)}}]},
                "dashboard", "g.toml", {})
    assert "s3cret" not in repr(cfg)
    auth = Authenticator(cfg)
    assert auth.basic(basic("lead", "s3cret-passw0rd")) == "lead" and auth.basic(basic("lead", "nope")) is None


NO_AUTH_SERVER = textwrap.dedent("""
    import sys
    from werkzeug.serving import make_server
    from gpuledger.config import Config
    from gpuledger.platform import Platform
    from ingest.schema import prepare
    from ingest.store import connect
    from dashboard.app import mount
    store = connect(sys.argv[1]); prepare(store)
    platform = Platform(Config(), store)
    mount(platform, Config(), store, auth=False)
    make_server("127.0.0.1", int(sys.argv[2]), platform.web, threaded=True).serve_forever()
""")


def test_no_auth_serves_without_credentials_and_says_no_data_yet(tmp_path):
    from datetime import date

    from dashboard.filters import parse
    from dashboard.probe import call_page

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", NO_AUTH_SERVER, f"chdb://{tmp_path}/store", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url, deadline, page = f"http://127.0.0.1:{port}", time.time() + 90, None
        while time.time() < deadline and page is None:
            try:
                page = requests.get(url + "/", timeout=5)
            except requests.ConnectionError:
                time.sleep(0.3)
        assert page is not None and page.status_code == 200, proc.stdout.read() if proc.poll() is not None else ""
        calls = call_page(HttpClient(url, timeout_s=60), "overview", parse({}, date.today()).to_data())
        assert calls and all(c.status == 200 and c.response is not None for c in calls)
        assert "No data yet" in json.dumps(calls[0].response)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
