"""Scrape jobs against real HTTP targets on loopback: our agent, dcgm-exporter text, a custom
exporter; and the quiet job wrapper's health reporting."""
from __future__ import annotations

import http.server
import logging
import threading

import pytest

from collector.agent import Agent, open_sampler, serve_metrics
from gpuledger.platform import Platform
from ingest.scrape import ScrapeError, ScrapeJob, add_quiet_job
from ingest.telemetry_config import MappedMetric, ScrapeTarget
from tests.helpers import fake_node, free_port, platform_config

DCGM_TEXT = """\
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",Hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15",container="trainer",namespace="nlp",pod="bert-0"} 93
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",Hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15",container="trainer",namespace="nlp",pod="bert-0"} 40000
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",Hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15",container="trainer",namespace="nlp",pod="bert-0"} 41000
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-aaaa",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",Hostname="dgx-1",DCGM_FI_DRIVER_VERSION="550.54.15"} 301.5
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-aaaa",Hostname="dgx-1"} 123456789
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-aaaa",Hostname="dgx-1"} 0
"""

CUSTOM_TEXT = """\
nvidia_smi_utilization_gpu_ratio{uuid="GPU-bbbb",name="NVIDIA L4"} 0.25
nvidia_smi_memory_used_bytes{uuid="GPU-bbbb",name="NVIDIA L4"} 1048576
nvidia_smi_power_draw_watts{uuid="GPU-bbbb",name="NVIDIA L4"} 30.5
"""


class TextServer:
    """Serves fixed text at /metrics on loopback (a stand-in exporter process)."""

    def __init__(self, text: str, status: int = 200):
        body, code = text.encode(), status

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/metrics"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_scraping_our_agent_stores_exactly_what_it_sampled_once(store):
    fake = fake_node(gpus=2)
    sampler, _ = open_sampler(lambda: fake, host="node-9", labels={"cluster": "berlin"})
    agent = Agent(sampler)
    server = serve_metrics(agent.registry, "127.0.0.1", 0)
    try:
        round_ = agent.round()
        job = ScrapeJob(store, ScrapeTarget("agent", f"http://127.0.0.1:{server.server_port}/metrics"))
        assert job() == 2
        assert job() == 2                       # same round scraped again: deduplicated
    finally:
        server.shutdown()
        server.server_close()
    got = store.rows("SELECT host, gpu_uuid, gpu_index, cluster, util_gpu, mem_used_bytes, mem_total_bytes, "
                     "power_w, energy_j, temperature_c, sm_clock_mhz, process_count, ts, source "
                     "FROM gpu_samples ORDER BY gpu_index")
    want = [(s.host, s.gpu_uuid, s.gpu_index, s.cluster, s.util_gpu, s.mem_used_bytes, s.mem_total_bytes,
             s.power_w, s.energy_j, s.temperature_c, s.sm_clock_mhz, s.process_count, s.ts, "nvml")
            for s in round_.samples]
    assert [(*g[:12], g[12].replace(tzinfo=None), g[13]) for g in got] == \
        [(*w[:12], w[12].replace(tzinfo=None), w[13]) for w in want]


def test_dcgm_exporter_labels_and_units_map_onto_columns(store):
    with TextServer(DCGM_TEXT) as target:
        job = ScrapeJob(store, ScrapeTarget("dcgm-1", target.url, format="dcgm",
                                            labels={"environment": "onprem", "cluster": "munich"}),
                        clock=lambda: 1_784_000_000.0)
        assert job() == 1
    assert store.rows("SELECT host, gpu_uuid, model, util_gpu, mem_used_bytes, mem_total_bytes, power_w, energy_j, "
                      "xid_last, k8s_namespace, k8s_pod, environment, cluster, source, toUnixTimestamp(ts) "
                      "FROM gpu_samples") == [
        ("dgx-1", "GPU-aaaa", "NVIDIA A100-SXM4-80GB", 93.0, 40000 * 2**20, 81000 * 2**20, 301.5, 123456.789,
         None, "nlp", "bert-0", "onprem", "munich", "dcgm", 1_784_000_000)]


def test_a_custom_exporter_with_a_mapping_and_the_target_host(store):
    target_cfg = dict(format="custom", labels={"environment": "gcp"},
                      metrics={"nvidia_smi_utilization_gpu_ratio": MappedMetric("util_gpu", 100.0),
                               "nvidia_smi_memory_used_bytes": MappedMetric("mem_used_bytes"),
                               "nvidia_smi_power_draw_watts": MappedMetric("power_w")},
                      label_map={"uuid": "gpu_uuid", "name": "model"})
    with TextServer(CUSTOM_TEXT) as target:
        assert ScrapeJob(store, ScrapeTarget("l4-box", target.url, **target_cfg))() == 1
    assert store.rows("SELECT host, model, util_gpu, mem_used_bytes, power_w, environment, source FROM gpu_samples") == \
        [("127.0.0.1", "NVIDIA L4", 25.0, 1048576, 30.5, "gcp", "l4-box")]


def test_failing_targets_are_named_logged_once_and_shown_in_health(store, caplog):
    with TextServer("oops", status=500) as target:
        with pytest.raises(ScrapeError, match="answered 500"):
            ScrapeJob(store, ScrapeTarget("bad", target.url))()
    with TextServer("this is { not prometheus") as target:
        with pytest.raises(ScrapeError, match="not Prometheus text"):
            ScrapeJob(store, ScrapeTarget("bad", target.url))()
    closed = f"http://127.0.0.1:{free_port()}/metrics"
    platform = Platform(platform_config(), store)
    job = ScrapeJob(store, ScrapeTarget("gone", closed, timeout_s=2))
    add_quiet_job(platform, "scrape:gone", job, 3600)
    run = platform.scheduler.get_jobs()[0].func
    with caplog.at_level(logging.INFO):
        run()
        run()
    assert caplog.text.count("scrape:gone failing") == 1 and "does not answer" in caplog.text
    assert "Traceback" not in caplog.text
    health = platform.web.test_client().get("/healthz").get_json()
    assert health["status"] == "degraded"
    assert "does not answer" in health["parts"]["scrape:gone"]["last_error"]
