"""Prometheus remote_write (protocol 1.0) payloads -> samples -> ``GpuSample`` records.

A remote_write request body is a ``prometheus.WriteRequest`` protobuf (prometheus/prompb
remote.proto and types.proto), compressed with snappy's block format::

    WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
    TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; ... }
    Label        { string name = 1; string value = 2; }
    Sample       { double value = 1; int64 timestamp = 2; }   // timestamp: ms since epoch

The protobuf is decoded by hand (no generated code); fields we do not use (metadata,
exemplars, native histograms) are skipped. Snappy comes from ``cramjam``. Remote-write 2.0
(``io.prometheus.write.v2.Request``) is not accepted: configure the sender for 1.0.
"""
from __future__ import annotations

import struct
from datetime import datetime

from base.errors import PayloadTooLarge, RemoteWriteError
from collector.dcgm import GPULEDGER
from collector.promtext import Sample
from collector.records import GpuSample
from collector.sample_mapping import MetricMapping, samples_to_records

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_DOUBLE = struct.Struct("<d")


def decompress(body: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Snappy block decompression, refusing payloads larger than ``max_bytes``."""
    size, _ = _varint(body, 0, len(body))
    if size > max_bytes:
        raise PayloadTooLarge(f"remote_write body decompresses to {size} bytes, over the "
                              f"{max_bytes}-byte limit; lower the sender's "
                              "queue_config.max_samples_per_send or raise the limit")
    try:
        import cramjam
    except ImportError as e:  # pragma: no cover - a packaging problem, not a data problem
        raise RemoteWriteError("cramjam is not installed; `pip install cramjam` to receive "
                               "remote_write") from e
    try:
        return bytes(cramjam.snappy.decompress_raw(body))
    except Exception as e:  # cramjam raises its own DecompressionError
        raise RemoteWriteError(f"remote_write body is not snappy block data ({e}); the sender "
                               "must use Content-Encoding: snappy") from e


def decode_write_request(data: bytes) -> list[Sample]:
    """Every (series, sample) of an uncompressed WriteRequest as a promtext ``Sample``
    (``__name__`` becomes the name; the other labels stay labels)."""
    out: list[Sample] = []
    labels: dict[bytes, tuple[str, str]] = {}    # a Label message's bytes -> (name, value)
    mv = memoryview(data)
    pos, end = 0, len(data)
    try:
        while pos < end:
            key, pos = _varint(mv, pos, end)
            if key == 0x0A:   # field 1, length-delimited: TimeSeries
                length, pos = _varint(mv, pos, end)
                _timeseries(mv, pos, pos + length, out, labels)
                pos += length
            else:
                pos = _skip(mv, pos, end, key)
    except (IndexError, UnicodeDecodeError, struct.error) as e:
        raise RemoteWriteError(f"malformed WriteRequest near byte {pos} ({e}); the sender "
                               "must use remote_write protocol 1.0") from e
    return out


def decode(body: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Sample]:
    """Samples of a snappy-compressed remote_write request body."""
    return decode_write_request(decompress(body, max_bytes))


def records_from_remote_write(body: bytes, received: datetime,
                              mapping: MetricMapping = GPULEDGER,
                              defaults: dict | None = None,
                              source: str = "remote_write") -> list[GpuSample]:
    """GpuSample records (one per GPU entity and timestamp) from a remote_write body;
    ``received`` is used only for samples without a timestamp."""
    return samples_to_records(decode(body), mapping, received, defaults, source)


def _timeseries(mv, pos: int, end: int, out: list, known: dict[bytes, tuple[str, str]]) -> None:
    """Appends the series' samples to ``out``. ``known`` caches labels by their message's bytes:
    a request repeats the same few labels (host, GPU, UUID, ...) on every series."""
    labels: dict[str, str] = {}
    points: list[tuple[float, int]] = []
    while pos < end:
        key = mv[pos]
        pos += 1
        if key >= 0x80:
            key, pos = _varint(mv, pos - 1, end)
        if key == 0x0A or key == 0x12:
            length = mv[pos]
            pos += 1
            if length >= 0x80:
                length, pos = _varint(mv, pos - 1, end)
            if pos + length > end:
                raise IndexError("field runs past its message")
            if key == 0x0A:
                raw = mv[pos:pos + length].tobytes()
                label = known.get(raw)
                if label is None:
                    label = known[raw] = _label(mv, pos, pos + length)
                labels[label[0]] = label[1]
            else:
                points.append(_sample(mv, pos, pos + length))
            pos += length
        else:
            pos = _skip(mv, pos, end, key)
    name = labels.pop("__name__", "")
    for value, ts in points:
        out.append(Sample(name, labels, value, ts))


def _label(mv, pos: int, end: int) -> tuple[str, str]:
    name = value = ""
    while pos < end:
        key, pos = _varint(mv, pos, end)
        if key in (0x0A, 0x12):
            length, pos = _varint(mv, pos, end)
            text = str(mv[pos:pos + length], "utf-8")
            pos += length
            if key == 0x0A:
                name = text
            else:
                value = text
        else:
            pos = _skip(mv, pos, end, key)
    return name, value


def _sample(mv, pos: int, end: int) -> tuple[float, int]:
    value, ts = 0.0, 0
    while pos < end:
        key, pos = _varint(mv, pos, end)
        if key == 0x09:    # field 1, fixed64: double
            value = _DOUBLE.unpack_from(mv, pos)[0]
            pos += 8
        elif key == 0x10:  # field 2, varint: int64
            ts, pos = _varint(mv, pos, end)
            if ts >= 1 << 63:
                ts -= 1 << 64
        else:
            pos = _skip(mv, pos, end, key)
    return value, ts


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise IndexError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise IndexError("varint longer than 10 bytes")


def _skip(mv, pos: int, end: int, key: int) -> int:
    """Position after a field we do not use."""
    wire = key & 7
    if wire == 0:
        return _varint(mv, pos, end)[1]
    if wire == 1:
        pos += 8
    elif wire == 2:
        length, pos = _varint(mv, pos, end)
        pos += length
    elif wire == 5:
        pos += 4
    else:
        raise IndexError(f"unsupported protobuf wire type {wire}")
    if pos > end:
        raise IndexError("field runs past its message")
    return pos
