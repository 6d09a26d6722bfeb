"""The agent: samples, serves /metrics (also without NVML), and ships rounds through the spool
to a platform's batch endpoint."""
from __future__ import annotations

import argparse
import http.server
import logging
import threading

import pynvml
import pytest

from base.errors import ConfigError, Unavailable
from base.settings import Secret
from base.version import version
from collector.agent import run_agent
from collector.config import CollectorConfig
from collector.fake_nvml import FakeNvml
from collector.shipper import PushDestination, Shipper
from collector.spool import Spool
from gpuledger.cli.collect import add_commands, destination_for, settings
from gpuledger.config import Config
from gpuledger.platform import Platform
from ingest.receiver import register_receiver
from ingest.telemetry_config import ReceiverConfig
from tests.helpers import ServedPlatform, batch, fake_node, free_port, get, platform_config


def parse(*argv):
    top = argparse.ArgumentParser()
    add_commands(top.add_subparsers(dest="command"))
    return top.parse_args(["collect", *argv])


def run_in_thread(c, destination, load_nvml, rounds=None):
    stop = threading.Event()
    parts = {}
    ready = threading.Event()

    def on_ready(agent, server, spool, shipper):
        parts.update(agent=agent, server=server, spool=spool, shipper=shipper)
        ready.set()

    thread = threading.Thread(target=run_agent, args=(c, destination, load_nvml, stop),
                              kwargs={"rounds": rounds, "ready": on_ready}, daemon=True)
    thread.start()
    assert ready.wait(30), "the collector did not start"
    return stop, thread, parts


def test_without_nvml_the_agent_serves_metrics_after_one_clear_line(tmp_path, caplog):
    port = free_port()
    c = CollectorConfig(listen="127.0.0.1", port=port, spool_dir=str(tmp_path))
    no_driver = lambda: FakeNvml([], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)  # noqa: E731
    with caplog.at_level(logging.INFO):
        stop, thread, _ = run_in_thread(c, None, no_driver)
        try:
            text = get(f"http://127.0.0.1:{port}/metrics")
        finally:
            stop.set()
            thread.join(30)
    assert not thread.is_alive()
    assert "gpuledger_agent_nvml_available 0.0" in text
    assert "DCGM_FI_DEV_GPU_UTIL" not in text
    lines = [r for r in caplog.records if "no GPU samples from this node" in r.getMessage()]
    assert len(lines) == 1 and "Install the NVIDIA driver" in lines[0].getMessage()


def test_rounds_reach_the_platform_store_through_the_spool(tmp_path, store):
    platform = Platform(platform_config(), store)
    register_receiver(platform, store, ReceiverConfig(token=Secret("tok", "test")))
    fake = fake_node(gpus=2)
    port = free_port()
    with ServedPlatform(platform) as served:
        c = CollectorConfig(interval_s=0.05, listen="127.0.0.1", port=port, spool_dir=str(tmp_path),
                            push_url=served.url, push_token=Secret("tok", "test"), host="node-3",
                            labels={"environment": "onprem", "pool": "l40s"})
        stop, thread, parts = run_in_thread(c, destination_for(c, None), lambda: fake, rounds=4)
        thread.join(60)
        assert not thread.is_alive()
    rows = store.rows("SELECT count(), uniqExact(ts), any(host), any(pool), any(source) FROM gpu_samples")
    assert rows == [(8, 4, "node-3", "l40s", "nvml")]
    assert store.rows("SELECT pid, count(), any(process_name), any(used_memory_bytes) FROM gpu_processes "
                      "GROUP BY pid ORDER BY pid") == [(4000, 4, "python3", 1000 * 2**20),
                                                       (4001, 4, "python3", 1001 * 2**20)]
    assert parts["shipper"].sent_batches == 8 and len(parts["spool"]) == 0
    assert list(tmp_path.glob("seg-*")) == []
    # the agent announced its version on each of the 8 pushes; the platform recorded it once
    assert store.rows("SELECT host, version FROM agent_versions") == [("node-3", version())]
    assert parts["shipper"].destination.platform_version == version()


def test_wrong_push_token_keeps_batches_in_the_spool(tmp_path, store, caplog):
    platform = Platform(platform_config(), store)
    register_receiver(platform, store, ReceiverConfig(token=Secret("right", "test")))
    with ServedPlatform(platform) as served, caplog.at_level(logging.WARNING):
        c = CollectorConfig(interval_s=0.05, port=0, spool_dir=str(tmp_path), push_url=served.url,
                            push_token=Secret("wrong", "test"))
        stop, thread, parts = run_in_thread(c, destination_for(c, None), lambda: fake_node(1), rounds=2)
        thread.join(60)
    assert store.scalar("SELECT count() FROM gpu_samples") == 0
    assert "answered 401" in caplog.text and "collector.push_token" in caplog.text
    from collector.spool import Spool
    assert len(Spool(tmp_path)) == 4                  # 2 rounds x (samples, processes), kept for later


def test_flags_override_config_and_bad_labels_are_named():
    cfg = Config()
    c = settings(parse("--interval", "2.5", "--port", "0", "--label", "cluster=berlin",
                       "--push-url", "http://p:8050", "--host-name", "n1"), cfg)
    assert (c.interval_s, c.port, c.labels, c.push_url, c.host) == (2.5, 0, {"cluster": "berlin"}, "http://p:8050", "n1")
    assert isinstance(destination_for(c, None), PushDestination)
    assert destination_for(settings(parse(), cfg), "chdb:///tmp/x") is None
    with pytest.raises(ConfigError, match="--label 'team=x'"):
        settings(parse("--label", "team=x"), cfg)
    with pytest.raises(ConfigError, match="collector.interval_s"):
        settings(parse("--interval", "0"), cfg)


def test_up_samples_local_gpus_in_embedded_mode_only_when_nvml_works(store):
    from ingest.telemetry import register_telemetry

    platform = Platform(platform_config(), store)
    fake = fake_node(gpus=2)
    parts = register_telemetry(platform, store, platform_config(collector=CollectorConfig(interval_s=3600)),
                               load_nvml=lambda: fake)
    assert parts["receiver"] is not None and parts["local"] is not None
    job = next(j for j in platform.scheduler.get_jobs() if j.id == "local-gpus")
    job.func()
    assert store.rows("SELECT count(), any(source) FROM gpu_samples") == [(2, "nvml")]
    other = Platform(platform_config(), store)
    none = register_telemetry(other, store, platform_config(),
                              load_nvml=lambda: FakeNvml([], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    assert none["local"] is None and "local-gpus" not in other.parts


def test_an_answer_cut_off_mid_body_is_an_outage_and_the_batch_stays_spooled(tmp_path):
    """A platform killed while it answers (its headers sent, its body not): the shipper keeps the
    batch and retries, as for a refused connection, rather than its thread dying."""
    class CutOff(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", "46")
            self.end_headers()              # and no body: the connection closes

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CutOff)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        destination = PushDestination(f"http://127.0.0.1:{server.server_port}", timeout_s=10)
        spool = Spool(tmp_path / "spool")
        spool.append(batch(1))
        with pytest.raises(Unavailable, match="IncompleteRead"):
            Shipper(spool, destination).ship()
        assert len(spool.peek(10)) == 1
    finally:
        server.shutdown()
