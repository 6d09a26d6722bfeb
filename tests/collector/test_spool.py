"""The durable spool: what is appended survives restarts until acknowledged, a full spool
drops the oldest (counted, logged, exported), and a replay after a crash stores nothing twice."""
from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, generate_latest

from collector.records import GPU_SAMPLE_COLUMNS
from collector.shipper import Shipper
from collector.spool import Spool
from ingest.writer import StoreDestination, insert_batch
from tests.helpers import batch


def test_batches_survive_a_restart_until_acknowledged(tmp_path):
    spool = Spool(tmp_path / "spool")
    for n in range(5):
        spool.append(batch(n))
    first = spool.peek(2)
    assert [b.id for b in first] == ["node-1/gpu_samples/0", "node-1/gpu_samples/1"]
    assert first[0].rows == batch(0).rows            # values and datetimes round-trip exactly
    spool.ack(first[0].id)
    spool.ack(first[1].id)
    # no close(): as after kill -9
    again = Spool(tmp_path / "spool")
    assert [b.id for b in again.peek(10)] == [f"node-1/gpu_samples/{n}" for n in (2, 3, 4)]
    assert again.pending_rows == 9


def test_a_torn_last_record_is_discarded_and_the_rest_kept(tmp_path, caplog):
    spool = Spool(tmp_path)
    for n in range(3):
        spool.append(batch(n))
    segment = sorted(tmp_path.glob("seg-*.log"))[-1]
    data = segment.read_bytes()
    segment.write_bytes(data[:-7])                      # a crash in the middle of a write
    with caplog.at_level(logging.WARNING):
        again = Spool(tmp_path)
    assert [b.id for b in again.peek(10)] == ["node-1/gpu_samples/0", "node-1/gpu_samples/1"]
    assert "incomplete or corrupt record" in caplog.text
    again.append(batch(9))
    assert [b.id for b in Spool(tmp_path).peek(10)][-1] == "node-1/gpu_samples/9"


def test_segments_are_deleted_once_resolved(tmp_path):
    spool = Spool(tmp_path, max_bytes=10 << 20, segment_bytes=2000)
    for n in range(30):
        spool.append(batch(n))
    assert len(list(tmp_path.glob("seg-*.log"))) > 5
    for b in spool.peek(30):
        spool.ack(b.id)
    assert len(spool) == 0
    assert len(list(tmp_path.glob("seg-*.log"))) == 1  # only the one being written
    spool.close()
    assert list(tmp_path.glob("seg-*")) == []


def test_a_full_spool_drops_the_oldest_counted_logged_and_exported(tmp_path, caplog):
    one = len(batch(0).to_json()) + 60
    spool = Spool(tmp_path, max_bytes=4 * one, segment_bytes=one)
    with caplog.at_level(logging.WARNING):
        for n in range(10):
            spool.append(batch(n))                      # never raises
    kept = [b.id for b in spool.peek(100)]
    assert kept == [f"node-1/gpu_samples/{n}" for n in range(10 - len(kept), 10)]
    assert len(kept) >= 3
    dropped = 10 - len(kept)
    assert spool.stats.dropped_batches == dropped and spool.stats.dropped_rows == 3 * dropped
    assert caplog.text.count("because the spool is full") == dropped
    assert "node-1/gpu_samples/0 (3 rows)" in caplog.text
    registry = CollectorRegistry()
    registry.register(type("C", (), {"collect": lambda self: spool.collect()})())
    text = generate_latest(registry).decode()
    assert f"gpuledger_spool_dropped_batches_total {float(dropped)}" in text
    assert f"gpuledger_spool_dropped_rows_total {float(3 * dropped)}" in text
    assert sum(p.stat().st_size for p in tmp_path.glob("seg-*.log")) <= 4 * one + 2 * one
    assert [b.id for b in Spool(tmp_path, max_bytes=4 * one).peek(100)] == kept  # drops are durable


def test_replay_after_a_crash_between_insert_and_ack_stores_nothing_twice(tmp_path, store):
    spool = Spool(tmp_path)
    for n in range(4):
        spool.append(batch(n))
    # the store has the first two batches, but the agent died before acknowledging them
    for b in spool.peek(2):
        insert_batch(store, b)
    assert store.scalar("SELECT count() FROM gpu_samples") == 6
    restarted = Spool(tmp_path)
    assert len(restarted) == 4
    shipper = Shipper(restarted, StoreDestination(lambda: store))
    assert shipper.ship() == 4
    assert len(restarted) == 0
    assert store.rows("SELECT count(), uniqExact(host, gpu_uuid, ts) FROM gpu_samples") == [(12, 12)]
    assert store.rows("SELECT util_gpu, power_w FROM gpu_samples WHERE gpu_uuid = 'GPU-1' ORDER BY ts") == \
        [(float(n), 101.0) for n in range(4)]


def test_a_refused_batch_is_dropped_not_retried_forever(tmp_path, store, caplog):
    spool = Spool(tmp_path)
    bad = batch(0)
    bad.rows[0][GPU_SAMPLE_COLUMNS.index("util_gpu")] = 250.0   # violates util_gpu_percent
    spool.append(bad)
    spool.append(batch(1))
    shipper = Shipper(spool, StoreDestination(lambda: store))
    with caplog.at_level(logging.ERROR):
        assert shipper.ship() == 2
    assert shipper.rejected_batches == 1 and shipper.sent_batches == 1
    assert "refused batch node-1/gpu_samples/0" in caplog.text
    assert "1 of 3 rows refused, 2 stored" in caplog.text
    # the refused row alone is left out: batch 1's 3 rows and batch 0's 2 good ones are stored
    assert store.scalar("SELECT count() FROM gpu_samples") == 5


def test_oldest_unsent_age_is_exported_and_survives_a_restart(tmp_path):
    from prometheus_client.core import GaugeMetricFamily

    from collector.batches import Batch
    from collector.records import GPU_SAMPLE_COLUMNS

    def age(spool):
        fams = {f.name: f for f in spool.collect() if isinstance(f, GaugeMetricFamily)}
        return fams["gpuledger_spool_oldest_unsent_age_seconds"].samples[0].value

    spool = Spool(tmp_path / "s", max_bytes=1 << 20)
    assert age(spool) == 0
    made = int((__import__("time").time() - 120) * 1000)
    spool.append(Batch(f"node-1/gpu_samples/{made}/abc", "gpu_samples", GPU_SAMPLE_COLUMNS, []))
    assert 0 <= age(spool) < 60                 # spooled just now
    spool.close()
    again = Spool(tmp_path / "s", max_bytes=1 << 20)
    assert 115 <= age(again) < 200              # after a restart: the time its id carries
    again.ack(f"node-1/gpu_samples/{made}/abc")
    assert age(again) == 0
