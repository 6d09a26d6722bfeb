"""Agent and platform announce their versions to each other over real HTTP on loopback: the
agent's push says ``User-Agent: gpuledger-collect/<version>``, every ingest answer says
``X-Gpuledger-Version``, the platform records each agent host's version in ``agent_versions``
(once, however many pushes), a platform a major.minor apart makes the agent warn once, and a
push from anything else (curl) records nothing and is still stored."""
from __future__ import annotations

import gzip
import logging
import re

import pytest
import requests
from flask import request

from base.settings import Secret
from base.version import VERSION_HEADER, agent_version, major_minor, version
from collector.shipper import PushDestination, Shipper
from collector.spool import Spool
from gpuledger.platform import Platform
from ingest.receiver import AgentVersions, Receiver
from ingest.telemetry_config import ReceiverConfig
from tests.helpers import ROOT, ServedPlatform, batch, platform_config

TOKEN = "versions-token"
VERSIONS = "SELECT host, version FROM agent_versions ORDER BY host, version"


@pytest.fixture
def served(store):
    """``served(version=None, store=store)``: a loopback platform whose receiver answers as
    ``version``; ``.user_agents`` lists the User-Agent of every ingest request it got."""
    running = []

    def start(version: str | None = None, on=store):
        platform = Platform(platform_config(), on)
        receiver = Receiver(on, ReceiverConfig(token=Secret(TOKEN, "test")), version=version)
        receiver.register(platform.web)
        user_agents = []

        @platform.web.before_request
        def note():
            if request.path.startswith("/api/v1/"):
                user_agents.append(request.headers.get("User-Agent"))

        s = ServedPlatform(platform).__enter__()
        s.receiver, s.user_agents = receiver, user_agents
        running.append(s)
        return s

    yield start
    for s in running:
        s.__exit__(None, None, None)


def push(tmp_path, url: str, batches, agent: str | None = None) -> PushDestination:
    """Ship ``batches`` through a spool and the real Shipper to ``url``; return the destination."""
    destination = PushDestination(url, TOKEN, version=agent)
    spool = Spool(tmp_path / "spool")
    for b in batches:
        spool.append(b)
    assert Shipper(spool, destination).ship() == len(batches)
    return destination


def test_pushes_carry_versions_both_ways_and_the_host_is_recorded_once(served, store, tmp_path):
    s = served()
    destination = push(tmp_path, s.url, [batch(n, host="node-v") for n in range(12)])
    assert s.user_agents == [f"gpuledger-collect/{version()}"] * 12
    assert destination.platform_version == version()
    assert store.scalar("SELECT count() FROM gpu_samples") == 36
    assert store.rows(VERSIONS) == [("node-v", version())]
    assert s.receiver.agents.writes == 1
    first, last = store.rows("SELECT min(first_seen), max(last_seen) FROM agent_versions")[0]
    assert first == last


def test_an_upgraded_agent_adds_a_row_and_the_readme_query_shows_the_new_version(served, store, tmp_path):
    s = served()
    push(tmp_path / "a", s.url, [batch(n, host="node-a") for n in range(3)], agent="0.9.1")
    push(tmp_path / "b", s.url, [batch(n, host="node-b") for n in range(3)], agent="0.9.1")
    push(tmp_path / "a2", s.url, [batch(n, host="node-a") for n in range(3, 6)], agent="0.10.0")
    assert store.rows(VERSIONS) == [("node-a", "0.10.0"), ("node-a", "0.9.1"), ("node-b", "0.9.1")]
    section = (ROOT / "sql" / "README.md").read_text().split("## Agents and their versions", 1)[1]
    query = re.search(r"^```\n(SELECT .*?)^```", section, re.S | re.M).group(1)
    assert [row[:2] for row in store.rows(query)] == [("node-a", "0.10.0"), ("node-b", "0.9.1")]


def test_every_ingest_answer_says_the_platform_version_and_curl_records_nothing(served, store):
    s = served()
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    ok = requests.post(s.url + "/api/v1/ingest/batch", data=batch(1, host="node-c").to_json(),
                       headers={**auth, "User-Agent": "curl/8.5.0"}, timeout=30)
    assert ok.status_code == 200 and ok.headers[VERSION_HEADER] == version()
    assert store.scalar("SELECT count() FROM gpu_samples") == 3
    refused = requests.post(s.url + "/api/v1/ingest/batch", data=b"{not json", headers=auth, timeout=30)
    assert refused.status_code == 400 and refused.headers[VERSION_HEADER] == version()
    unauthorized = requests.post(s.url + "/api/v1/write", data=b"x", timeout=30)
    assert unauthorized.status_code == 401 and unauthorized.headers[VERSION_HEADER] == version()
    assert store.scalar("SELECT count() FROM agent_versions") == 0


def test_a_platform_a_major_minor_apart_is_warned_about_once_per_change(served, store, tmp_path, caplog):
    s = served(version="7.3.0")
    warnings = lambda: [r.getMessage() for r in caplog.records  # noqa: E731
                        if r.levelno == logging.WARNING and "major.minor" in r.getMessage()]
    with caplog.at_level(logging.INFO, logger="collector.shipper"):
        destination = push(tmp_path / "1", s.url, [batch(n) for n in range(8)], agent="7.4.2")
        assert len(warnings()) == 1
        assert "runs gpuledger 7.3.0 and this agent 7.4.2" in warnings()[0]
        s.receiver.version = "7.3.1"                     # a patch release: same major.minor
        spool = Spool(tmp_path / "2")
        for n in range(8, 12):
            spool.append(batch(n))
        Shipper(spool, destination).ship()
        assert len(warnings()) == 1
        s.receiver.version = "7.5.0"                     # upgraded again, still apart: warned again
        spool = Spool(tmp_path / "3")
        for n in range(12, 16):
            spool.append(batch(n))
        Shipper(spool, destination).ship()
        assert len(warnings()) == 2 and "7.5.0" in warnings()[1]
        s.receiver.version = "7.4.0"                     # now the same: no warning, one line saying so
        spool = Spool(tmp_path / "4")
        for n in range(16, 20):
            spool.append(batch(n))
        Shipper(spool, destination).ship()
        assert len(warnings()) == 2
        assert any("same release" in r.getMessage() for r in caplog.records)
    assert store.scalar("SELECT count() FROM gpu_samples") == 60


class FailingVersions:
    """The real store, except that inserts into agent_versions fail (counted in ``tries``)."""

    def __init__(self, store):
        self.store, self.tries = store, 0

    def __getattr__(self, name):
        return getattr(self.store, name)

    def insert(self, table, rows, columns=None, **kwargs):
        if table == "agent_versions":
            self.tries += 1
            raise ConnectionError("agent_versions is on a broken disk")
        return self.store.insert(table, rows, columns, **kwargs)


def test_a_failure_to_record_never_fails_the_batch(served, store, tmp_path, caplog):
    failing = FailingVersions(store)
    s = served(on=failing)
    with caplog.at_level(logging.WARNING, logger="ingest.receiver"):
        push(tmp_path, s.url, [batch(n, host="node-f") for n in range(5)])
    assert store.scalar("SELECT count() FROM gpu_samples") == 15
    assert failing.tries == 1                              # retried after a minute, not per batch
    assert "could not record agent node-f's version" in caplog.text
    assert store.scalar("SELECT count() FROM agent_versions") == 0


def test_a_host_is_written_again_only_on_a_new_version_or_after_an_hour(store):
    now = [1_784_000_000.0]
    agents = AgentVersions(store, clock=lambda: now[0])
    for _ in range(50):
        agents.seen("node-h", "1.2.0")
        now[0] += 60                                      # 50 minutes of pushes: one write
    assert agents.writes == 1
    now[0] += 600
    agents.seen("node-h", "1.2.0")                        # an hour on: last_seen refreshed
    agents.seen("node-h", "1.3.0")                        # upgraded: written at once
    agents.seen("node-h", "1.3.0")
    assert agents.writes == 3
    rows = store.rows("SELECT version, min(first_seen), max(last_seen) FROM agent_versions "
                      "GROUP BY version ORDER BY version")
    assert [(v, int(last.timestamp() - first.timestamp())) for v, first, last in rows] == [("1.2.0", 3600), ("1.3.0", 0)]


@pytest.mark.parametrize("header, expected", [
    ("gpuledger-collect/0.4.1", "0.4.1"),
    ("gpuledger-collect/1.0.0+local.3 Python-urllib/3.11", "1.0.0+local.3"),
    ("curl/8.5.0", None), ("Python-urllib/3.11", None), (None, None), ("gpuledger-collect/", None),
    ("gpuledger-collect/1.0;DROP", None),
])
def test_only_our_agents_user_agent_names_a_version(header, expected):
    assert agent_version(header) == expected


def test_major_minor():
    assert [major_minor(v) for v in ("1.4.2", "v1.4.0rc1", "0.10.0", "0+unknown")] == ["1.4", "1.4", "0.10", "0+unknown"]


def test_a_batch_refused_whole_records_no_agent(served, store):
    """Rows without a host are refused (400, with the version header); no agent is recorded."""
    s = served()
    b = batch(2, host="")
    r = requests.post(s.url + "/api/v1/ingest/batch", data=gzip.compress(b.to_json()),
                      headers={"Authorization": f"Bearer {TOKEN}", "Content-Encoding": "gzip",
                               "User-Agent": f"gpuledger-collect/{version()}"}, timeout=30)
    assert r.status_code == 400 and r.headers[VERSION_HEADER] == version()
    assert store.scalar("SELECT count() FROM agent_versions") == 0
