import json
import signal
import subprocess
import sys
import time
import urllib.request

from tests.helpers import free_port


def test_up_serves_health_and_stops_cleanly_on_sigterm(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuledger", "--store", f"chdb://{tmp_path}/store", "up", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        body = None
        deadline = time.time() + 60
        while time.time() < deadline and body is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                    body = json.loads(response.read())
            except OSError:
                time.sleep(0.3)
        assert body is not None, "the platform never answered /healthz"
        assert body["store"]["ok"] is True and body["store"]["schema_version"] >= 1
        assert body["status"] == "ok"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
        assert "received SIGTERM, shutting down" in out and "gpuledger stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()
