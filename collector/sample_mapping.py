"""Turning Prometheus samples (scraped text or remote_write) into ``GpuSample`` records.

A :class:`MetricMapping` says which metric fills which column (with a scale) and which label
fills which string column. Samples are grouped into one record per GPU entity — the labels
mapped to ``host``, ``gpu_uuid`` and ``mig_instance`` — and per timestamp. Series without a
value for the ``gpu_uuid`` label are not GPU samples and are skipped.

Any exporter can be read with a mapping from configuration::

    mapping = mapping_from_config(
        metrics={"nvidia_smi_utilization_gpu_ratio": ("util_gpu", 100.0),
                 "nvidia_smi_memory_used_bytes": ("mem_used_bytes", 1.0)},
        labels={"uuid": "gpu_uuid", "name": "model", "instance": "host"},
        source="nvidia_gpu_exporter")

Besides real columns a mapping may fill these helper columns, combined when a record is
finished: ``_fb_used_mib`` / ``_fb_free_mib`` / ``_fb_reserved_mib`` (memory in MiB: used,
and total = used + free + reserved), ``_util_gpu_ratio`` / ``_util_mem_ratio`` (0..1 ratios
used when the percentage is absent), ``_energy_mj`` (used when ``energy_j`` is absent),
``_ts_seconds`` (the sample's own time) and ``_xid_last_or_zero`` (0 meaning "no XID").
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

from base.errors import MappingError
from collector.records import GpuSample

MIB = 1024 * 1024
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
IDENTITY_COLUMNS = ("host", "gpu_uuid", "mig_instance")
HELPER_COLUMNS = frozenset({"_fb_used_mib", "_fb_free_mib", "_fb_reserved_mib",
                            "_util_gpu_ratio", "_util_mem_ratio", "_ts_seconds",
                            "_xid_last_or_zero", "_energy_mj"})
_TYPES = {f.name: f.type for f in dataclasses.fields(GpuSample)}
INT_COLUMNS = frozenset(c for c, t in _TYPES.items() if t.startswith("int"))
STR_COLUMNS = frozenset(c for c, t in _TYPES.items() if t == "str")
NUMERIC_COLUMNS = frozenset(c for c, t in _TYPES.items() if t.startswith(("int", "float")))


@dataclass(frozen=True)
class MetricMapping:
    """metric name -> (column, scale); label name -> string column; default ``source``.

    ``info`` names metrics that carry only labels (such as ``gpuledger_gpu_info``).
    ``host_labels``: labels that name the host better than the mapped one, first present wins —
    under the GPU Operator dcgm-exporter's ``Hostname`` is the exporter pod's name, while a
    Kubernetes node label (``kubernetes_node``, ``node``, added by Prometheus' relabelling) names
    the node, so one GPU stays one GPU across exporter restarts."""
    metrics: dict[str, tuple[str, float]]
    labels: dict[str, str]
    source: str = "prometheus"
    info: frozenset[str] = frozenset()
    host_labels: tuple[str, ...] = ()
    uuid_prefix: str = ""               # prepended to a UUID that lacks NVML's GPU-/MIG- prefix

    def identity_labels(self) -> tuple[str, ...]:
        by_col = {col: label for label, col in self.labels.items()}
        return tuple(by_col.get(c, "") for c in IDENTITY_COLUMNS)

    def host_of(self, labels: dict, mapped: str) -> str:
        """The host a series belongs to: the first preferred host label present, else the mapped
        one, else the host of Prometheus' ``instance`` (the target it scraped, as a scrape of
        ours takes the target URL's host: dcgm-exporter run with ``--no-hostname``)."""
        host = next((labels[name] for name in self.host_labels if labels.get(name)), labels.get(mapped, ""))
        if not host and labels.get("instance"):
            host = urlsplit("//" + labels["instance"]).hostname or ""
        return host


def mapping_from_config(metrics: dict, labels: dict, source: str = "prometheus",
                        base: MetricMapping | None = None) -> MetricMapping:
    """A mapping from plain configuration, optionally extending ``base``; checks columns."""
    parsed = {}
    for name, target in metrics.items():
        column, scale = (target, 1.0) if isinstance(target, str) else target
        if column not in NUMERIC_COLUMNS and column not in HELPER_COLUMNS:
            raise MappingError(f"metric {name!r} maps to {column!r}, which is not a numeric "
                               f"gpu_samples column; use one of {sorted(NUMERIC_COLUMNS)}")
        parsed[name] = (column, float(scale))
    for label, column in labels.items():
        if column not in STR_COLUMNS and column != "gpu_index":
            raise MappingError(f"label {label!r} maps to {column!r}, which is not a text "
                               f"gpu_samples column; use one of {sorted(STR_COLUMNS)}")
    if "gpu_uuid" not in labels.values() and (base is None or
                                              "gpu_uuid" not in base.labels.values()):
        raise MappingError("the mapping has no label for gpu_uuid; every GPU sample needs "
                           "one (dcgm-exporter: UUID)")
    info, host_labels, uuid_prefix = frozenset(), (), ""
    if base is not None:
        parsed = {**base.metrics, **parsed}
        labels = {**base.labels, **labels}
        info, host_labels, uuid_prefix = base.info, base.host_labels, base.uuid_prefix
    return MetricMapping(parsed, dict(labels), source, info, host_labels, uuid_prefix)


def samples_to_records(samples, mapping: MetricMapping, scrape_ts: datetime,
                       defaults: dict | None = None, source: str | None = None
                       ) -> list[GpuSample]:
    """One GpuSample per GPU entity (and per timestamp) from ``(name, labels, value,
    timestamp_ms)`` samples. ``defaults`` fill columns the data lacks (e.g. ``host`` from the
    scrape target, ``environment``). ``source``: a ``source`` label in the data wins (our own
    exposition says ``nvml``), then this argument, then the mapping's."""
    metrics, label_cols, info = mapping.metrics, mapping.labels, mapping.info
    host_l, uuid_l, mig_l = mapping.identity_labels()
    groups: dict[tuple, dict] = {}
    scrape: dict[tuple, int] = {}      # series without their own time: which saved scrape an entity is in
    for name, labels, value, ts_ms in samples:
        target = metrics.get(name)
        uuid = labels.get(uuid_l)
        if not uuid or (target is None and name not in info):
            continue
        host = mapping.host_of(labels, host_l)
        entity = (host, uuid, labels.get(mig_l, ""), ts_ms)
        series = None
        if ts_ms is None:
            # a series seen again is the next scrape saved in the same file (``curl >> f.prom``):
            # a record of its own, at its own sample time where it says one
            series = (name, tuple(sorted(labels.items())))
            n = scrape.get(entity, 0)
            if series in groups.get(entity + (n,), {}).get("_series", ()):
                scrape[entity] = n = n + 1
            entity += (n,)
        acc = groups.get(entity)
        if acc is None:
            acc = groups[entity] = {"_labels": {}, "_series": set()}
        if series is not None:
            acc["_series"].add(series)
        _merge_labels(acc["_labels"], labels, label_cols)
        if host:
            acc["_labels"]["host"] = host
        if target is not None and not math.isnan(value):
            col, scale = target
            # dividing by 1000 (not multiplying by 0.001) keeps mJ -> J exact
            acc[col] = value if scale == 1.0 else value * scale if scale > 1 else value / (1 / scale)
    base = dict(defaults or {})
    return [_finish(acc, key[3], scrape_ts, base, source or mapping.source, mapping.uuid_prefix)
            for key, acc in groups.items()]


def one_per_sample(records: list[GpuSample]) -> list[GpuSample]:
    """One record per GPU entity and ``ts`` (``IDENTITY_COLUMNS`` + ts), in first-seen order: records
    of the same sample (a line repeated, series with and without their own timestamp landing on the
    same time) are merged, a later value winning where it is given (not None, not '')."""
    out: dict[tuple, GpuSample] = {}
    for r in records:
        key = (r.host, r.gpu_uuid, r.mig_instance, r.ts)
        seen = out.get(key)
        if seen is None:
            out[key] = r
            continue
        for name in _TYPES:
            value = getattr(r, name)
            if value is not None and value != "":
                setattr(seen, name, value)
    return list(out.values())


def _merge_labels(out: dict, labels: dict, label_cols: dict) -> None:
    for label, value in labels.items():
        col = label_cols.get(label)
        if col is not None and (value or col not in out):
            out[col] = value


def _finish(acc: dict, ts_ms, scrape_ts: datetime, defaults: dict, source: str, uuid_prefix: str = "") -> GpuSample:
    acc.pop("_series", None)
    values = {**defaults, **acc.pop("_labels")}
    values["source"] = values.get("source") or source
    uuid = values.get("gpu_uuid") or ""
    if uuid_prefix and not uuid.upper().startswith(("GPU-", "MIG-")):
        values["gpu_uuid"] = uuid_prefix + uuid
    values["ts"] = _when(acc.pop("_ts_seconds", None), ts_ms, scrape_ts)
    _memory(acc)
    energy_mj = acc.pop("_energy_mj", None)
    if energy_mj is not None:
        acc.setdefault("energy_j", energy_mj / 1000)
    _ratios(acc)
    if "_xid_last_or_zero" in acc:
        xid = acc.pop("_xid_last_or_zero")
        acc.setdefault("xid_last", int(xid) if xid else None)
    for col, v in acc.items():
        # an infinite value stays a float, for the column check to refuse (never an error here)
        values[col] = v if v is None else int(round(v)) if col in INT_COLUMNS and math.isfinite(v) else float(v)
    if "gpu_index" in values and isinstance(values["gpu_index"], str):
        text = values["gpu_index"].strip()
        # not a number stays text, for the column check to refuse by row
        values["gpu_index"] = int(text) if text.lstrip("-").isdigit() else 0 if not text else text
    return GpuSample(**{k: v for k, v in values.items() if k in _TYPES})


def _when(ts_seconds, ts_ms, scrape_ts: datetime) -> datetime:
    try:
        if ts_seconds is not None:
            return _EPOCH + timedelta(milliseconds=round(ts_seconds * 1000))
        if ts_ms is not None:
            return _EPOCH + timedelta(milliseconds=ts_ms)
    except OverflowError:      # beyond year 9999: refused as out of range by the column check
        late = (ts_seconds if ts_seconds is not None else ts_ms) > 0
        return (datetime.max if late else datetime.min).replace(tzinfo=timezone.utc)
    return scrape_ts


def _memory(acc: dict) -> None:
    used = acc.pop("_fb_used_mib", None)
    free = acc.pop("_fb_free_mib", None)
    reserved = acc.pop("_fb_reserved_mib", 0.0)
    if used is not None:
        acc.setdefault("mem_used_bytes", used * MIB)
        if free is not None:
            acc.setdefault("mem_total_bytes", (used + free + reserved) * MIB)


def _ratios(acc: dict) -> None:
    for ratio, col in (("_util_gpu_ratio", "util_gpu"), ("_util_mem_ratio", "util_mem")):
        r = acc.pop(ratio, None)
        if r is not None and col not in acc:
            acc[col] = r * 100.0

