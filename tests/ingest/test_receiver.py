"""The receiver's endpoints on a Platform with a real store: remote_write and agent batches,
with bounded bodies, bearer tokens and clear 4xx answers."""
from __future__ import annotations

import gzip

import cramjam
import pytest

from base.settings import Secret
from gpuledger.platform import Platform
from ingest.receiver import register_receiver
from ingest.telemetry_config import ReceiverConfig
from tests.helpers import batch, platform_config, series, snappy_literal, write_request

UUID = "GPU-5f0c6a0e-1111-2222-3333-444455556666"
TS = 1_784_000_000_000


def remote_write_body(ts_ms: int = TS, stale: bool = False) -> bytes:
    gpu = {"UUID": UUID, "Hostname": "node-7", "gpu": "3", "modelName": "NVIDIA H100 80GB HBM3",
           "instance": "node-7:9400", "job": "dcgm"}
    stale_nan = 0x7FF0000000000002
    import struct
    nan = struct.unpack("<d", struct.pack("<Q", stale_nan))[0]
    return snappy_literal(write_request(
        series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **gpu}, [(87.0, ts_ms)] + ([(nan, ts_ms + 15000)] if stale else [])),
        series({"__name__": "DCGM_FI_DEV_FB_USED", **gpu}, [(1024.0, ts_ms)]),
        series({"__name__": "DCGM_FI_DEV_FB_FREE", **gpu}, [(3072.0, ts_ms)]),
        series({"__name__": "DCGM_FI_DEV_POWER_USAGE", **gpu}, [(612.25, ts_ms)]),
        series({"__name__": "up", "instance": "node-7:9400", "job": "dcgm"}, [(1.0, ts_ms)]),
    ))


TOKEN = "receiver-test-token"


@pytest.fixture
def client(store):
    def make(**receiver):
        receiver.setdefault("token", Secret(TOKEN, "test"))
        platform = Platform(platform_config(), store)
        register_receiver(platform, store, ReceiverConfig(**receiver))
        return platform.web.test_client()
    return make


AUTH = {"Authorization": f"Bearer {TOKEN}"}
RW_HEADERS = {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
              "X-Prometheus-Remote-Write-Version": "0.1.0", **AUTH}


def test_remote_write_lands_in_gpu_samples_once(client, store):
    c = client(environment="onprem")
    body = remote_write_body(stale=True)
    assert c.post("/api/v1/write", data=body, headers=RW_HEADERS).status_code == 204
    assert c.post("/api/v1/write", data=body, headers=RW_HEADERS).status_code == 204  # a retry
    rows = store.rows("SELECT host, gpu_index, model, util_gpu, mem_used_bytes, mem_total_bytes, power_w, "
                      "environment, source, toUnixTimestamp64Milli(ts) FROM gpu_samples")
    assert rows == [("node-7", 3, "NVIDIA H100 80GB HBM3", 87.0, 1024 * 2**20, 4096 * 2**20, 612.25,
                     "onprem", "remote_write", TS)]


def test_remote_write_series_without_a_host_label_take_the_instance_or_are_refused_by_name(client, store):
    c = client()
    body = snappy_literal(write_request(
        # dcgm-exporter --no-hostname: the host is the target Prometheus scraped
        series({"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-a", "instance": "gpu-box-7:9400", "job": "dcgm"},
               [(40.0, TS)]),
        series({"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-b", "instance": "[fd00::7]:9400"}, [(41.0, TS)]),
        series({"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-nowhere"}, [(5.0, TS)]),
        series({"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-c", "Hostname": "h"}, [(700.0, TS)]),  # > 100 %
    ))
    answer = c.post("/api/v1/write", data=body, headers=RW_HEADERS)
    assert answer.status_code == 400
    assert "2 of 4 rows" in answer.json["error"] and "GPU-c" in answer.json["error"]
    assert answer.json["problems"][1].startswith("series of GPU GPU-nowhere carry none of the labels")
    assert answer.json["problems"][1].endswith("Hostname, instance, so their host is unknown")
    assert store.rows("SELECT gpu_uuid, host, util_gpu FROM gpu_samples ORDER BY gpu_uuid") == [
        ("GPU-a", "gpu-box-7", 40.0), ("GPU-b", "fd00::7", 41.0)]


def test_remote_write_with_real_snappy_compression(client, store):
    raw = cramjam.snappy.decompress_raw(remote_write_body(TS + 1000))
    body = bytes(cramjam.snappy.compress_raw(bytes(raw)))
    assert client().post("/api/v1/write", data=body, headers=RW_HEADERS).status_code == 204
    assert store.scalar("SELECT count() FROM gpu_samples") == 1


def test_tokens_sizes_and_malformed_bodies_get_clear_4xx(client, store, monkeypatch):
    c = client(token=Secret("s3cret", "test"), max_body_mb=0.001)
    r = c.post("/api/v1/write", data=remote_write_body(), headers={**RW_HEADERS, "Authorization": ""})
    assert r.status_code == 401 and "bearer token" in r.get_json()["error"]
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    auth = {**RW_HEADERS, "Authorization": "Bearer wrong"}
    assert c.post("/api/v1/write", data=remote_write_body(), headers=auth).status_code == 401
    auth["Authorization"] = "Bearer s3cret"
    assert c.post("/api/v1/write", data=remote_write_body(), headers=auth).status_code == 204
    big = c.post("/api/v1/write", data=b"x" * 5000, headers=auth)
    assert big.status_code == 413 and "receiver.max_body_mb" in big.get_json()["error"]
    bad = c.post("/api/v1/write", data=b"\x05garbage", headers=auth)
    assert bad.status_code == 400 and "snappy" in bad.get_json()["error"]
    v2 = c.post("/api/v1/write", data=remote_write_body(),
                headers={**auth, "Content-Type": "application/x-protobuf;proto=io.prometheus.write.v2.Request"})
    assert v2.status_code == 415 and "2.0" in v2.get_json()["error"]
    empty = c.post("/api/v1/ingest/batch", data=b"", headers={"Authorization": "Bearer s3cret"})
    assert empty.status_code == 400
    assert store.scalar("SELECT count() FROM gpu_samples") == 1


def test_agent_batches_are_stored_once_by_id(client, store):
    c = client()
    b = batch(4)
    body = gzip.compress(b.to_json())
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json", **AUTH}
    first = c.post("/api/v1/ingest/batch", data=body, headers=headers)
    assert first.status_code == 200 and first.get_json() == {"id": b.id, "stored": 3}
    assert c.post("/api/v1/ingest/batch", data=body, headers=headers).status_code == 200
    assert store.scalar("SELECT count() FROM gpu_samples") == 3


@pytest.mark.parametrize("doc, message", [
    (b"{not json", "not JSON"),
    (b'{"id": "a", "table": "users", "columns": [], "rows": []}', "unknown table"),
    (b'{"id": "a", "table": "gpu_samples", "columns": ["ts", "hostname"], "rows": []}', "hostname"),
    (b'{"id": "a", "table": "gpu_samples", "columns": ["ts", "host", "gpu_uuid"], "rows": [[1]]}', "row 0 has 1 values"),
    (b'{"id": "a b", "table": "gpu_samples", "columns": [], "rows": []}', "batch id"),
    (b'{"id": "a", "table": "gpu_samples", "columns": ["ts", "host", "gpu_uuid"], "rows": [[1784000000000, "", "x"]]}',
     "refused"),
])
def test_malformed_batches_are_refused_by_name(client, store, doc, message):
    r = client().post("/api/v1/ingest/batch", data=doc, headers=AUTH)
    assert r.status_code == 400 and message in r.get_json()["error"]
    assert store.scalar("SELECT count() FROM gpu_samples") == 0


def test_a_scrape_split_over_two_remote_writes_derives_as_whole_samples(client, store):
    # Prometheus spreads a scrape's series over requests (shards, max_samples_per_send): here every
    # scrape's utilization comes in one request and its memory and power in another, so each
    # sample is stored as two rows; the derivation merges them (sql/rollup/split_samples.sql)
    from datetime import datetime, timedelta, timezone

    from gpuledger.config import Config
    from ingest.rollup.run import rollup

    c = client(environment="onprem")
    gpu = {"UUID": UUID, "Hostname": "node-7", "gpu": "3", "instance": "node-7:9400", "job": "dcgm"}
    for i in range(20):                                            # 20 scrapes, 15 s apart
        ts = TS + i * 15_000
        utilization = write_request(series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **gpu}, [(87.0, ts)]))
        power = write_request(series({"__name__": "DCGM_FI_DEV_FB_USED", **gpu}, [(1024.0, ts)]),
                              series({"__name__": "DCGM_FI_DEV_FB_FREE", **gpu}, [(3072.0, ts)]),
                              series({"__name__": "DCGM_FI_DEV_POWER_USAGE", **gpu}, [(612.25, ts)]))
        for body in (utilization, power):
            assert c.post("/api/v1/write", data=snappy_literal(body), headers=RW_HEADERS).status_code == 204
    assert store.scalar("SELECT count() FROM gpu_samples") == 40
    day = datetime.fromtimestamp(TS / 1000, timezone.utc).date()
    rollup(store, Config(), since=day, until=day, now=datetime.fromtimestamp(TS / 1000, timezone.utc) + timedelta(hours=1))
    samples, covered, util, power, used = store.rows(
        "SELECT sum(samples), sum(covered_s), sum(util_gpu_s) / sum(util_covered_s), sum(energy_j) / sum(power_covered_s), "
        "sum(mem_used_s) / sum(mem_covered_s) FROM gpu_hour")[0]
    # 20 samples, each holding 15 s (the last for the interval before it)
    assert (samples, covered) == (20, 300.0)
    assert util == pytest.approx(87.0) and power == pytest.approx(612.25) and used == pytest.approx(1024 * 2**20)
