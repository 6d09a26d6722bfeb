"""remote_write payloads built with an independent minimal encoder (``tests/helpers.py``), decoded by ours.

The encoder writes protobuf by the wire-format rules (varint keys, length-delimited
messages, little-endian doubles) and snappy as literal-only blocks, which every snappy
decoder must accept; one payload is compressed with a real snappy compressor as well.
A test against a real Prometheus sender belongs to the ingest side.
"""
from __future__ import annotations

from datetime import datetime, timezone

import cramjam
import pytest

from collector.promtext import Sample
from collector.remote_write import PayloadTooLarge, RemoteWriteError, decode, decode_write_request, records_from_remote_write
from tests.helpers import series, snappy_literal, varint, write_request

MIB = 1024 * 1024


DCGM_LABELS = {"gpu": "0", "UUID": "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005",
               "pci_bus_id": "00000000:53:00.0", "device": "nvidia0",
               "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "gpu-node-1",
               "DCGM_FI_DRIVER_VERSION": "580.105.08", "namespace": "dynamo-workload",
               "pod": "vllm-agg-0", "instance": "10.0.3.7:9400", "job": "dcgm"}
T1, T2 = 1_784_000_000_000, 1_784_000_015_000


def dcgm_payload(**kw) -> bytes:
    return write_request(
        series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **DCGM_LABELS}, [(37.0, T1), (91.0, T2)],
               **kw),
        series({"__name__": "DCGM_FI_DEV_FB_USED", **DCGM_LABELS}, [(11125.0, T1)]),
        series({"__name__": "DCGM_FI_DEV_FB_FREE", **DCGM_LABELS}, [(69956.0, T1)]),
        series({"__name__": "DCGM_FI_DEV_FB_RESERVED", **DCGM_LABELS}, [(479.0, T1)]),
        series({"__name__": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", **DCGM_LABELS},
               [(4742776.0, T1)]),
        series({"__name__": "up", "instance": "10.0.3.7:9400", "job": "dcgm"}, [(1.0, T1)]),
        metadata=True)


def test_decode_samples_of_a_literal_snappy_payload():
    samples = decode(snappy_literal(dcgm_payload(exemplar=True)))
    labels = {k: v for k, v in DCGM_LABELS.items()}
    assert samples[:3] == [Sample("DCGM_FI_DEV_GPU_UTIL", labels, 37.0, T1),
                           Sample("DCGM_FI_DEV_GPU_UTIL", labels, 91.0, T2),
                           Sample("DCGM_FI_DEV_FB_USED", labels, 11125.0, T1)]
    assert samples[-1] == Sample("up", {"instance": "10.0.3.7:9400", "job": "dcgm"}, 1.0, T1)
    assert len(samples) == 7


def test_records_one_per_gpu_and_timestamp():
    received = datetime(2030, 1, 1, tzinfo=timezone.utc)
    records = records_from_remote_write(cramjam.snappy.compress_raw(dcgm_payload()).read(),
                                        received, defaults={"environment": "azure"})
    assert [(r.ts, r.util_gpu, r.mem_used_bytes, r.mem_total_bytes, r.energy_j)
            for r in records] == [
        (datetime(2026, 7, 14, 3, 33, 20, tzinfo=timezone.utc), 37.0, 11125 * MIB,
         (11125 + 69956 + 479) * MIB, 4742.776),
        (datetime(2026, 7, 14, 3, 33, 35, tzinfo=timezone.utc), 91.0, None, None, None)]
    first = records[0]
    assert (first.host, first.gpu_uuid, first.gpu_index, first.model, first.k8s_namespace,
            first.k8s_pod, first.environment, first.source) == (
        "gpu-node-1", "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005", 0, "NVIDIA H100 80GB HBM3",
        "dynamo-workload", "vllm-agg-0", "azure", "remote_write")


def test_negative_timestamps_and_special_values():
    body = write_request(series({"__name__": "m", "a": "é"}, [(float("inf"), -1500)]))
    assert decode_write_request(body) == [Sample("m", {"a": "é"}, float("inf"), -1500)]


def test_malformed_payloads_are_named():
    with pytest.raises(RemoteWriteError, match="not snappy"):
        decode(b"\x10\xff\xff\xff\xff\xff")
    with pytest.raises(RemoteWriteError, match="malformed WriteRequest"):
        decode_write_request(dcgm_payload()[:-3])
    with pytest.raises(PayloadTooLarge, match="max_samples_per_send"):
        decode(varint(100 * MIB) + b"\x00", max_bytes=64 * MIB)


def test_long_labels_wide_field_numbers_and_labels_shared_by_series():
    """Lengths and keys of two varint bytes; a label repeated on many series (decoded once per
    request and reused) keeps its own value on each, and a label differing in one byte does not."""
    from tests.helpers import field, label, point

    long = "p" * 300                                          # a 2-byte length
    unknown = field(20, 2, b"skipped")                        # field 20: a 2-byte key
    body = write_request(
        field(1, 2, label("__name__", "a") + label("pod", long) + unknown + label("gpu", "0") + point(1.0, T1)),
        field(1, 2, label("__name__", "b") + label("pod", long) + label("gpu", "1") + point(2.0, T1)),
        field(1, 2, label("__name__", "a") + label("pod", long[:-1] + "q") + label("gpu", "0") + point(3.0, T2)))
    assert decode_write_request(body) == [
        Sample("a", {"pod": long, "gpu": "0"}, 1.0, T1),
        Sample("b", {"pod": long, "gpu": "1"}, 2.0, T1),
        Sample("a", {"pod": long[:-1] + "q", "gpu": "0"}, 3.0, T2)]
