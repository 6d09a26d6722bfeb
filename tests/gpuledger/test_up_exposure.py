"""`gpuledger up` refuses to listen on an address other machines reach while no credential is
configured (issue #15 item 4); a token, or --no-auth on purpose (logged), lets it start."""
import requests

from tests.helpers import free_port, gpuledger, up_config, wait_until


def _answers(url: str) -> bool:
    try:
        return requests.get(url + "/healthz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def test_up_on_all_addresses_without_credentials_exits_with_the_fix(tmp_path):
    config = tmp_path / "gpuledger.toml"
    config.write_text("[collector]\nlocal_sampling = false\n")
    proc = gpuledger(tmp_path / "store", "up", "--host", "0.0.0.0", "--port", str(free_port()), config=config)
    assert proc.finish(120) == 2, proc.tail()
    out = proc.tail()
    assert "refusing to serve on 0.0.0.0" in out and "receiver.token" in out and "--no-auth" in out, out
    assert "Traceback" not in out
    assert not (tmp_path / "store").exists()          # refused before the store was opened


def test_up_on_all_addresses_with_a_token_serves_and_ingest_needs_it(tmp_path):
    port = free_port()
    proc = gpuledger(tmp_path / "store", "up", "--host", "0.0.0.0", "--port", str(port),
                     config=up_config(tmp_path / "gpuledger.toml"))
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(url) or proc.p.poll() is not None, 120, what="gpuledger up")
        assert proc.p.poll() is None, proc.tail()
        r = requests.post(url + "/api/v1/ingest/batch", data=b"{}", timeout=30)
        assert r.status_code == 401 and "bearer token" in r.json()["error"]
    finally:
        assert proc.stop() == 0, proc.tail()


def test_no_auth_is_the_explicit_logged_opt_out(tmp_path):
    config = tmp_path / "gpuledger.toml"
    config.write_text("[collector]\nlocal_sampling = false\n")
    port = free_port()
    proc = gpuledger(tmp_path / "store", "up", "--host", "0.0.0.0", "--port", str(port), "--no-auth", config=config)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(url) or proc.p.poll() is not None, 120, what="gpuledger up --no-auth")
        assert proc.p.poll() is None, proc.tail()
        assert proc.count("authentication is OFF") >= 1, proc.tail()
        assert proc.count("WARNING") >= 1
        anonymous = requests.post(url + "/api/v1/ingest/batch", data=b"not json", timeout=30)
        assert anonymous.status_code == 400            # read (and refused as data), not 401
    finally:
        assert proc.stop() == 0, proc.tail()
