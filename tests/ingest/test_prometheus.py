"""A real Prometheus (Debian's /usr/bin/prometheus) scrapes the agent's /metrics and
remote-writes to the platform's receiver; the samples land in ClickHouse with the values the
agent sampled."""
from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

from base.settings import Secret
from collector.agent import Agent, open_sampler, serve_metrics
from gpuledger.platform import Platform
from ingest.receiver import register_receiver
from ingest.telemetry_config import ReceiverConfig
from tests.helpers import ServedPlatform, fake_node, free_port, get, platform_config, wait_until

PROMETHEUS = "/usr/bin/prometheus"
COLUMNS = ("host", "gpu_uuid", "gpu_index", "model", "pool", "util_gpu", "util_mem", "mem_used_bytes",
           "mem_total_bytes", "power_w", "energy_j", "temperature_c", "sm_clock_mhz", "process_count")


def prometheus_binary() -> str:
    if not Path(PROMETHEUS).exists():   # install like CI does: the Debian package
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "prometheus"],
                       check=True, capture_output=True, timeout=600)
    assert shutil.which(PROMETHEUS), f"{PROMETHEUS} is needed: apt-get install prometheus"
    return PROMETHEUS


def test_prometheus_scrapes_the_agent_and_remote_writes_to_the_receiver(tmp_path, store):
    binary = prometheus_binary()
    fake = fake_node(gpus=2)
    sampler, _ = open_sampler(lambda: fake, host="node-p", labels={"pool": "l40s"})
    sampled = {}

    def remember(round_):
        fake.advance(1)                      # the GPUs move on between rounds
        for s in round_.samples:
            sampled[(s.gpu_uuid, s.ts.replace(tzinfo=None))] = s

    agent = Agent(sampler, interval_s=0.4, sink=remember)
    metrics = serve_metrics(agent.registry, "127.0.0.1", 0)
    stop = threading.Event()
    loop = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    loop.start()
    platform = Platform(platform_config(), store)
    register_receiver(platform, store, ReceiverConfig(token=Secret("rw-token", "test")))
    prom_port = free_port()
    with ServedPlatform(platform) as served:
        (tmp_path / "prometheus.yml").write_text(f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpuledger-agent
    static_configs:
      - targets: ["127.0.0.1:{metrics.server_port}"]
remote_write:
  - url: {served.url}/api/v1/write
    authorization:
      credentials: rw-token
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 1s
""")
        prom = subprocess.Popen([binary, f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_until(lambda: store.scalar("SELECT uniqExact(ts) FROM gpu_samples") >= 4, 90,
                       every_s=0.5, what="remote-written samples in the store")
            assert '"health":"up"' in get(f"http://127.0.0.1:{prom_port}/api/v1/targets")
        finally:
            prom.terminate()
            try:
                out, _ = prom.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                prom.kill()
                out, _ = prom.communicate()
            stop.set()
            loop.join(10)
            metrics.shutdown()
            metrics.server_close()
    rows = store.rows(f"SELECT {', '.join(COLUMNS)}, ts, source FROM gpu_samples ORDER BY ts, gpu_index")
    assert len(rows) >= 8, out[-2000:]
    assert store.scalar("SELECT count() - uniqExact(gpu_uuid, ts) FROM gpu_samples") == 0
    for row in rows:
        want = sampled[(row[1], row[-2].replace(tzinfo=None))]
        assert row[:-2] == tuple(getattr(want, c) for c in COLUMNS)
        assert row[-1] == "nvml"
    assert {r[0] for r in rows} == {"node-p"} and {r[2] for r in rows} == {0, 1}
    assert len({r[9] for r in rows}) >= 1 and len({r[10] for r in rows}) >= 4   # energy moves with time
