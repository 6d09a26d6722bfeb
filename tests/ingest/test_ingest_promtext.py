"""`gpuledger ingest samples` also loads Prometheus text exposition files (.prom / .txt):
all-or-nothing, and a file already loaded is skipped."""
from __future__ import annotations

import os

import pytest
from prometheus_client import generate_latest

from base.errors import InputError
from collector.agent import Agent, open_sampler
from ingest.samples import ingest_samples
from tests.helpers import fake_node
from tests.ingest.test_scrape import DCGM_TEXT


def test_agent_and_dcgm_text_files_load_once(tmp_path, store):
    sampler, _ = open_sampler(lambda: fake_node(3), host="node-f")
    agent = Agent(sampler)
    round_ = agent.round()
    (tmp_path / "agent.prom").write_bytes(generate_latest(agent.registry))
    dcgm = tmp_path / "dcgm.txt"
    dcgm.write_text(DCGM_TEXT)
    os.utime(dcgm, (1_784_000_000, 1_784_000_000))
    report = ingest_samples(store, [tmp_path], progress=lambda m: None)
    assert (report.files_loaded, report.rows) == (2, 4)
    again = ingest_samples(store, [tmp_path], progress=lambda m: None)
    assert (again.files_loaded, again.files_skipped) == (0, 2)
    assert store.rows("SELECT host, count(), min(power_w), any(source) FROM gpu_samples GROUP BY host ORDER BY host") == \
        [("dgx-1", 1, 301.5, "import"), ("node-f", 3, min(s.power_w for s in round_.samples), "nvml")]
    assert store.scalar("SELECT toUnixTimestamp(ts) FROM gpu_samples WHERE host = 'dgx-1'") == 1_784_000_000


def test_scrapes_saved_one_after_another_in_one_file_stay_apart(tmp_path, store):
    """``curl node:9400/metrics >> node.prom`` twice: each scrape is a sample of its own, at its
    own time, with its own values (the second scrape has no utilization: NULL, not the first's)."""
    gpu = 'UUID="GPU-a",Hostname="node-1",gpu="0"'
    def scrape(ts: float, util: str) -> str:
        return (f"gpuledger_sample_timestamp_seconds{{{gpu}}} {ts}\n" + util
                + f"DCGM_FI_DEV_POWER_USAGE{{{gpu}}} {ts - 1_795_773_000}\n")
    path = tmp_path / "node.prom"
    path.write_text(scrape(1_795_773_600.125, f"DCGM_FI_DEV_GPU_UTIL{{{gpu}}} 87.5\n") + scrape(1_795_773_610.125, ""))
    report = ingest_samples(store, [path], progress=lambda m: None)
    assert report.rows == 2
    assert store.rows("SELECT toUnixTimestamp64Milli(ts), util_gpu, power_w FROM gpu_samples ORDER BY ts") == [
        (1_795_773_600_125, 87.5, 600.125), (1_795_773_610_125, None, 610.125)]


@pytest.mark.parametrize("text, message", [
    ('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",Hostname="h"} 50\nDCGM_FI_DEV_GPU_UTIL{UUID="GPU-2" 7\n', "line 2"),
    ('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",Hostname="h"} 50\nDCGM_FI_DEV_GPU_UTIL{UUID="GPU-2",Hostname="h"} 700\n',
     "refused"),
    ('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1"} 50\n', "no Hostname label"),
    ('node_load1 0.5\n', "no GPU samples found"),
])
def test_bad_files_store_nothing_and_say_why(tmp_path, store, text, message):
    path = tmp_path / "bad.prom"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        ingest_samples(store, [path], progress=lambda m: None)
    assert str(path) in str(err.value)
    assert store.scalar("SELECT count() FROM gpu_samples") == 0
    assert store.scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() AND name LIKE '_stage%'") == 0
