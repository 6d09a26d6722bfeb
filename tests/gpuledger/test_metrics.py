"""The platform's own metrics (GET /metrics of ``gpuledger up``) and the agent's health series,
scraped by a real Prometheus (Debian's /usr/bin/prometheus) and checked by promtool."""
from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import pytest

from base.settings import Secret
from collector.agent import Agent, open_sampler, serve_metrics
from collector.batches import batches_from_round
from collector.config import CollectorConfig
from collector.spool import Spool
from gpuledger.platform import Platform, build_platform
from gpuledger.selfmetrics import install
from ingest.telemetry_config import ReceiverConfig
from tests.helpers import ServedPlatform, batch, fake_node, free_port, platform_config, wait_until
from tests.ingest.test_prometheus import prometheus_binary

TOKEN = "metrics-token"
PROMTOOL = "/usr/bin/promtool"


def fetch(url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def post(url: str, body: bytes, token: str) -> int:
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code




def promtool_problems(text: str) -> list[str]:
    out = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    problems = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    assert out.returncode == (3 if problems else 0), out.stdout + out.stderr
    return problems


def promtool_check(text: str) -> None:
    problems = promtool_problems(text)
    assert not problems, "\n".join(problems)


def promql(port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        doc = json.load(r)
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def value(port: int, expr: str) -> float | None:
    result = promql(port, expr)
    return float(result[0]["value"][1]) if result else None


def test_prometheus_scrapes_the_platform_and_the_agent(tmp_path, store):
    binary = prometheus_binary()
    cfg = platform_config(receiver=ReceiverConfig(token=Secret(TOKEN, "test")),
                          collector=CollectorConfig(local_sampling=False))
    platform = build_platform(cfg, store)
    # an agent with a spool (nothing ships from it: its batches stay unsent)
    fake = fake_node(gpus=2)
    sampler, _ = open_sampler(lambda: fake, host="node-m", labels={"pool": "l40s"})
    spool = Spool(tmp_path / "spool", max_bytes=1 << 20)
    agent = Agent(sampler, interval_s=0.5,
                  sink=lambda round_: [spool.append(b) for b in batches_from_round(round_, sampler.host)])
    agent.add_source(spool.collect)
    agent.round()
    exposition = serve_metrics(agent.registry, "127.0.0.1", 0)
    prom_port = free_port()
    with ServedPlatform(platform) as served:
        # auth: the token configured, so no token is 401
        assert fetch(served.url + "/metrics")[0] == 401
        assert fetch(served.url + "/metrics", "wrong")[0] == 401
        good = batch(1, rows=3, host="node-m")
        good.rows[1][good.columns.index("mem_used_bytes")] = -1          # one bad row: a negative byte count
        assert post(served.url + "/api/v1/ingest/batch", good.to_json(), TOKEN) == 400   # partly refused
        wait_until(lambda: platform.parts["rollup"]["last_ok"] or platform.parts["rollup"]["last_error"], 120,
                   what="the first rollup")
        platform.scheduler.get_job("rollup").func()           # a rollup run of our own
        platform.scheduler.get_job("alerts").func()           # and an alert round
        status, text = fetch(served.url + "/metrics", TOKEN)
        assert status == 200
        promtool_check(text)
        agent_text = fetch(f"http://127.0.0.1:{exposition.server_port}/metrics")[1]
        assert "gpuledger_spool_oldest_unsent_age_seconds" in agent_text
        promtool_check(agent_text)
        (tmp_path / "prometheus.yml").write_text(f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpuledger
    authorization:
      credentials: {TOKEN}
    static_configs:
      - targets: ["127.0.0.1:{served.port}"]
  - job_name: gpuledger-agent
    static_configs:
      - targets: ["127.0.0.1:{exposition.server_port}"]
""")
        prom = subprocess.Popen([binary, f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_until(lambda: _answers(prom_port) and len(promql(prom_port, "up == 1")) == 2, 90, every_s=0.5,
                       what="Prometheus scraping both targets")
            p = prom_port
            assert value(p, 'gpuledger_ingest_rows_received_total{job="gpuledger",path="batch"}') == 3
            assert value(p, 'gpuledger_ingest_rows_stored_total{path="batch"}') == 2
            assert value(p, 'gpuledger_ingest_rows_refused_total{path="batch",reason="range"}') == 1
            assert value(p, 'gpuledger_ingest_rows_stored_total{path="scrape"}') == 0
            assert value(p, "gpuledger_rollup_runs_total") >= 2
            assert value(p, "gpuledger_rollup_failures_total") == 0
            assert value(p, "gpuledger_rollup_duration_seconds_count") >= 2
            assert value(p, "time() - gpuledger_rollup_last_success_timestamp_seconds") < 300
            assert value(p, "gpuledger_rollup_pending_dates") is not None
            assert value(p, "gpuledger_alert_rounds_total") >= 2
            assert value(p, "gpuledger_alerts_firing") == 0
            assert value(p, "gpuledger_notification_oldest_undelivered_age_seconds") == 0
            assert value(p, 'gpuledger_store_table_bytes{table="gpu_samples"}') > 0
            assert value(p, "gpuledger_store_disk_free_bytes") > 0
            assert value(p, "gpuledger_store_disk_total_bytes") >= value(p, "gpuledger_store_disk_free_bytes")
            assert value(p, 'gpuledger_ingest_last_sample_timestamp_seconds{source="agent",name="node-m"}') > 0
            assert value(p, 'gpuledger_ingest_sources_quiet{source="agent"}') == 0
            assert value(p, "gpuledger_build_info") == 1
            assert value(p, 'process_resident_memory_bytes{job="gpuledger"}') > 0
            # the agent's health series
            assert value(p, "gpuledger_spool_pending_batches") >= 1
            assert value(p, "gpuledger_spool_oldest_unsent_age_seconds") > 0
            assert value(p, "gpuledger_spool_max_bytes") == 1 << 20
        finally:
            prom.terminate()
            try:
                prom.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.communicate()
            exposition.shutdown()
            exposition.server_close()
            spool.close()


def _answers(port: int) -> bool:
    try:
        return fetch(f"http://127.0.0.1:{port}/-/ready")[0] == 200
    except OSError:
        return False


@pytest.mark.parametrize("token, auth, host, open_", [
    ("t", True, "127.0.0.1", False),      # a token configured: needed even on loopback
    ("", True, "127.0.0.1", True),        # no token: open on loopback
    ("", True, "0.0.0.0", False),         # ... and closed elsewhere
    ("t", False, "0.0.0.0", True),        # --no-auth
])
def test_metrics_auth(token, auth, host, open_):
    cfg = platform_config(receiver=ReceiverConfig(token=Secret(token, "test") if token else None))
    platform = Platform(cfg, store=None)
    platform.host = host
    install(platform, auth=auth)
    client = platform.web.test_client()
    answer = client.get("/metrics")
    assert answer.status_code == (200 if open_ else 401)
    if token:
        assert client.get("/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_refusal_reasons_are_bounded():
    from gpuledger.selfmetrics import REASONS, refusal_reason
    from ingest.writer import RowProblem, split_valid

    types = {"a": "UInt8", "b": "String", "c": "DateTime64(3, 'UTC')", "d": "Float64"}
    from datetime import datetime, timezone

    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rows = [[300, "x", now, 1.0], ["no", "x", now, 1.0], [1, "y" * 100_000, now, 1.0],
            [1, "x", datetime(1990, 1, 1, tzinfo=timezone.utc), 1.0], [1, "x", now, float("nan")]]
    _, problems = split_valid(types, ["a", "b", "c", "d"], rows, now)
    assert [refusal_reason(p) for p in problems] == ["range", "type", "length", "ts_range", "range"]
    assert refusal_reason(RowProblem(0, "", "the store refused it: CHECK", "constraint")) == "constraint"
    assert {refusal_reason(p) for p in problems} <= set(REASONS)
