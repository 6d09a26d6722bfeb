"""The telemetry config sections parse from TOML through the project's schema, and refuse
nonsense naming the key."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

import pytest

from base.errors import ConfigError
from base.settings import build
from collector.config import CollectorConfig
from ingest.scrape import mapping_for
from ingest.telemetry_config import ReceiverConfig, ScrapeTarget


@dataclass
class Sections:          # the three fields the lead adds to gpuledger.config.Config
    collector: CollectorConfig = field(default_factory=CollectorConfig)
    scrape: list[ScrapeTarget] = field(default_factory=list)
    receiver: ReceiverConfig = field(default_factory=ReceiverConfig)


TOML = """
[collector]
interval_s = 5
push_url = "http://platform:8050"
push_token = { env = "TOKEN" }
labels = { environment = "onprem", cluster = "berlin" }

[[scrape]]
name = "l4-box"
url = "http://l4-box:9835/metrics"
format = "custom"
metrics = { nvidia_smi_utilization_gpu_ratio = { column = "util_gpu", scale = 100.0 } }
label_map = { uuid = "gpu_uuid" }

[receiver]
token = { env = "TOKEN" }
max_body_mb = 4
"""


def load(text: str):
    return build(Sections, tomllib.loads(text), "", "gpuledger.toml", {"TOKEN": "t0k"})


def test_sections_parse_with_secrets_and_mappings():
    cfg = load(TOML)
    assert cfg.collector.interval_s == 5.0 and cfg.collector.push_token.get() == "t0k"
    assert "t0k" not in repr(cfg)
    assert cfg.receiver.token.get() == "t0k" and cfg.receiver.max_body_mb == 4.0
    mapping = mapping_for(cfg.scrape[0])
    assert mapping.metrics == {"nvidia_smi_utilization_gpu_ratio": ("util_gpu", 100.0)}
    assert mapping.source == "l4-box"


@pytest.mark.parametrize("text, key", [
    ("[collector]\ninterval_s = 0", "collector.interval_s"),
    ("[collector]\nlabels = { team = 'x' }", "collector.labels.team"),
    ("[collector]\npush_url = 'platform:8050'", "collector.push_url"),
    ("[[scrape]]\nname = 'a'\nurl = 'node:9400'", "scrape[0].url"),
    ("[[scrape]]\nname = 'a'\nurl = 'http://n:1/m'\nformat = 'influx'", "scrape[0].format"),
    ("[[scrape]]\nname = 'a'\nurl = 'http://n:1/m'\nformat = 'custom'", "scrape[0].metrics"),
    ("[receiver]\ntoken = 'literal'", "receiver.token"),
])
def test_bad_values_are_named_by_key(text, key):
    with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
        load(text)


def test_host_labels_from_config_reach_the_scrape_and_the_receiver(store):
    from collector.dcgm import NODE_LABELS
    from ingest.receiver import Receiver

    target = ScrapeTarget(name="n1", url="http://n1:9400/metrics", format="dcgm")
    assert mapping_for(target).host_labels == NODE_LABELS
    assert mapping_for(ScrapeTarget(name="n1", url="http://n1:9400/metrics", format="dcgm", host_labels=[])).host_labels == ()
    assert Receiver(store).mapping.host_labels == NODE_LABELS
    assert Receiver(store, ReceiverConfig(host_labels=["k8s_node"])).mapping.host_labels == ("k8s_node",)
