"""``nvidia-smi`` output as ``GpuSample`` records, for clusters that run no exporter, only a cron'd
or looping ``nvidia-smi``.

``records_from_query_csv(text, host=…)`` reads ``nvidia-smi --query-gpu=… --format=csv[,nounits]``
output, with or without ``-l`` (a header line, repeated or not, then rows). Any subset of the
fields in ``FIELDS`` is read, by the header's names (a unit in the header, ``memory.used [MiB]``,
is dropped from the name); other fields are ignored. Values may carry units (``45 %``,
``1024 MiB``, ``70.12 W``, ``1410 MHz``) or not (``nounits``: the header's unit is used).
``[N/A]``, ``N/A``, ``[Not Supported]`` and any other bracketed remark are unknown: NULL, never 0.

nvidia-smi prints ``timestamp`` (``2026/07/03 08:33:38.123``) in the node's local time with no
zone; it is read as ``tz`` (UTC unless told otherwise). The file does not name its host unless the
``hostname`` field was queried, so ``host`` is passed in (``--host``) and wins over that field.

``sniff(head)`` tells an nvidia-smi file from our own CSV by its first line: a gpuledger CSV
names ``ts``, ``host`` and ``gpu_uuid``, which nvidia-smi never prints, while a query header has
only field names (``uuid``, ``pci.bus_id``, …, a unit in brackets) and at least one we map that is
not a gpuledger column name.
"""
from __future__ import annotations

import csv
import re
from datetime import datetime, timezone

from base.errors import InputError
from collector.records import GPU_SAMPLE_COLUMNS, GpuSample

SOURCE = "nvidia-smi"
MIB = 1024 * 1024
_BYTES = {"b": 1, "kib": 1024, "mib": MIB, "gib": 1024 * MIB, "tib": 1024 * 1024 * MIB}

# field (unit dropped) -> (column, kind); several fields may fill a column: the first listed wins
FIELDS: dict[str, tuple[str, str]] = {
    "timestamp": ("ts", "time"),
    "uuid": ("gpu_uuid", "text"),
    "name": ("model", "text"),
    "pci.bus_id": ("pci_bus_id", "text"),
    "driver_version": ("driver_version", "text"),
    "index": ("gpu_index", "int"),
    "hostname": ("host", "text"),
    "utilization.gpu": ("util_gpu", "float"),
    "utilization.memory": ("util_mem", "float"),
    "memory.used": ("mem_used_bytes", "bytes"),
    "memory.total": ("mem_total_bytes", "bytes"),
    "power.draw": ("power_w", "float"),
    "power.draw.average": ("power_w", "float"),
    "power.draw.instant": ("power_w", "float"),
    "temperature.gpu": ("temperature_c", "float"),
    "clocks.sm": ("sm_clock_mhz", "int"),
    "clocks.current.sm": ("sm_clock_mhz", "int"),
    "clocks.mem": ("mem_clock_mhz", "int"),
    "clocks.current.memory": ("mem_clock_mhz", "int"),
    "clocks_event_reasons.active": ("throttle_reasons", "hex"),
    "clocks_throttle_reasons.active": ("throttle_reasons", "hex"),
    "clock_throttle_reasons.active": ("throttle_reasons", "hex"),
    "ecc.errors.corrected.volatile.total": ("ecc_corrected_volatile", "int"),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected_volatile", "int"),
    "ecc.errors.corrected.aggregate.total": ("ecc_corrected_aggregate", "int"),
    "ecc.errors.uncorrected.aggregate.total": ("ecc_uncorrected_aggregate", "int"),
}
_OURS = frozenset({"ts", "host", "gpu_uuid"})     # in every gpuledger CSV, never in nvidia-smi's
_PRIORITY = {f: i for i, f in enumerate(FIELDS)}
_FIELD = re.compile(r"[a-z][A-Za-z0-9_.]*(?: \[[^\]]*\])?")
_UNIT = re.compile(r"\s*\[([^\]]*)\]$")
_NUMBER = re.compile(r"(-?[0-9]+(?:\.[0-9]+)?)\s*([A-Za-z%°]*)")
_TIME_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S")


def sniff(head: str) -> str | None:
    """``"query-csv"`` or ``"xml"`` for the start of an nvidia-smi file, else None."""
    text = head.lstrip("\ufeff \t\r\n")
    if text.startswith("<?xml") or text.startswith("<nvidia_smi_log") or "<nvidia_smi_log" in text[:512]:
        return "xml"
    cells = _cells(text.split("\n", 1)[0])
    garbled = bool(cells) and _name(cells[0]) == "timestamp" and not _OURS.intersection(map(_name, cells))
    return "query-csv" if _is_header(cells) or garbled else None


def _cells(line: str) -> list[str]:
    return [c.strip() for c in next(csv.reader([line]), [])]


def _name(cell: str) -> str:
    return _UNIT.sub("", cell).strip()


def _is_header(cells: list[str]) -> bool:
    names = [_name(c) for c in cells]
    return bool(cells) and not _OURS.intersection(names) and all(_FIELD.fullmatch(c) for c in cells) \
        and any(n in FIELDS and n not in GPU_SAMPLE_COLUMNS for n in names)


def unknown(raw: str) -> bool:
    """nvidia-smi's ways of saying "no value": ``N/A``, ``[N/A]``, ``[Not Supported]``, … or nothing."""
    raw = raw.strip()
    return not raw or raw == "N/A" or (raw.startswith("[") and raw.endswith("]"))


def value(raw: str, kind: str, unit: str = "", tz=timezone.utc):
    """One value of ``kind`` (text, int, float, hex, bytes, time); None when unknown; ValueError
    when it cannot be read."""
    raw = raw.strip()
    if unknown(raw):
        return None
    if kind == "text":
        return raw
    if kind == "time":
        for fmt in _TIME_FORMATS:
            try:
                return datetime.strptime(raw, fmt).replace(tzinfo=tz).astimezone(timezone.utc)
            except ValueError:
                continue
        raise ValueError(f"cannot read {raw!r} as a time (expected YYYY/MM/DD HH:MM:SS.mmm)")
    if kind == "hex":
        return int(raw, 16)
    m = _NUMBER.fullmatch(raw)
    if m is None:
        raise ValueError(f"cannot read {raw!r} as a number")
    number, given = float(m.group(1)), (m.group(2) or unit)
    if kind == "bytes":
        scale = _BYTES.get(given.lower())
        if scale is None:
            raise ValueError(f"cannot read {raw!r} as a memory size (expected MiB)")
        return int(round(number * scale))
    if kind == "int":
        if number != int(number):
            raise ValueError(f"cannot read {raw!r} as a whole number")
        return int(number)
    return number


def records_from_query_csv(text: str, host: str | None = None, path: str = "", tz=timezone.utc) -> list[GpuSample]:
    """One GpuSample per data row of ``--query-gpu`` CSV output; InputError (naming ``path`` and
    the line) for a garbled header, a row of the wrong width or a value that cannot be read."""
    records: list[GpuSample] = []
    fields: list[tuple[int, str, str, str]] | None = None      # (cell index, field, column, unit)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = _cells(line)
        if _is_header(cells):
            fields = _header_fields(cells, path, number)
            width = len(cells)
            continue
        if fields is None:
            raise InputError(f"line {number}: expected an nvidia-smi --query-gpu header (timestamp, uuid, …) "
                             f"before the values; got {line[:120]!r}", path=path)
        if len(cells) != width:
            raise InputError(f"line {number}: {len(cells)} values for {width} fields in the header "
                             "(a truncated or garbled line?); nothing from this file was stored", path=path)
        values: dict = {}
        for index, field, column, unit in fields:
            try:
                v = value(cells[index], FIELDS[field][1], unit, tz)
            except ValueError as exc:
                raise InputError(f"line {number}, field {field!r}: {exc}; nothing from this file was stored",
                                 path=path) from None
            if v is not None and column not in values:
                values[column] = v
        if host:
            values["host"] = host
        if not values.get("host"):
            raise InputError("nvidia-smi files do not name their host: pass --host NAME", path=path)
        if not values.get("gpu_uuid"):
            raise InputError(f"line {number}: no GPU uuid; nothing from this file was stored", path=path)
        records.append(GpuSample(source=SOURCE, **values))
    if fields is None:
        raise InputError("no nvidia-smi --query-gpu header found", path=path)
    return records


def _header_fields(cells: list[str], path: str, number: int) -> list[tuple[int, str, str, str]]:
    names = [_name(c) for c in cells]
    for required, hint in (("timestamp", "timestamp"), ("uuid", "uuid")):
        if required not in names:
            raise InputError(f"line {number}: the nvidia-smi header has no {required} field; run nvidia-smi "
                             f"--query-gpu={hint},… so each row says its time and GPU", path=path)
    found = []
    for index, (cell, name) in enumerate(zip(cells, names)):
        if name in FIELDS:
            unit = _UNIT.search(cell)
            found.append((index, name, FIELDS[name][0], unit.group(1) if unit else ""))
    return sorted(found, key=lambda f: _PRIORITY[f[1]])


# ---- nvidia-smi -q -x ------------------------------------------------------------------------

# NVML's clocks-event (throttle) reason bits, by the XML's element suffix
THROTTLE_BITS = {"gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
                 "sync_boost": 0x10, "sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40,
                 "hw_power_brake_slowdown": 0x80, "display_clocks_setting": 0x100}
_XML_TIME = "%a %b %d %H:%M:%S %Y"            # <timestamp>Fri Aug  4 11:44:30 2023</timestamp>
_POWER = ("gpu_power_readings/power_draw", "gpu_power_readings/average_power_draw",
          "gpu_power_readings/instant_power_draw", "power_readings/power_draw",
          "power_readings/average_power_draw", "power_readings/instant_power_draw")
# (volatile|aggregate) children summed per column: the 535+ schema, then the older one
_ECC_CORRECTED = ("sram_correctable", "dram_correctable", "single_bit/total")
_ECC_UNCORRECTED = ("sram_uncorrectable", "sram_uncorrectable_parity", "sram_uncorrectable_secded",
                    "dram_uncorrectable", "double_bit/total")


def records_from_xml(text: str, host: str | None = None, path: str = "", tz=timezone.utc) -> list[GpuSample]:
    """One GpuSample per ``<gpu>`` and per ``<mig_device>`` of an ``nvidia-smi -q -x`` snapshot;
    InputError (naming ``path`` and the element) for a document that is truncated, not nvidia-smi's
    or has a value that cannot be read."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise InputError(f"not a complete nvidia-smi -q -x XML document ({exc}); nothing from this file was stored",
                         path=path) from None
    if root.tag != "nvidia_smi_log":
        raise InputError(f"expected an nvidia-smi -q -x document (<nvidia_smi_log>), found <{root.tag[:80]}>",
                         path=path)
    if not host:
        raise InputError("nvidia-smi files do not name their host: pass --host NAME", path=path)
    when = _xml_value(root, "timestamp", "text", path)
    try:
        ts = datetime.strptime(" ".join((when or "").split()), _XML_TIME).replace(tzinfo=tz).astimezone(timezone.utc)
    except ValueError:
        raise InputError(f"<timestamp>: cannot read {when!r} as a time (expected e.g. 'Fri Aug  4 11:44:30 2023')",
                         path=path) from None
    common = {"ts": ts, "host": host, "source": SOURCE,
              "driver_version": _xml_value(root, "driver_version", "text", path) or "",
              "cuda_version": _xml_value(root, "cuda_version", "text", path) or ""}
    records = []
    for index, gpu in enumerate(root.findall("gpu")):
        records += _gpu_records(gpu, index, common, path)
    return records


def _gpu_records(gpu, index: int, common: dict, path: str) -> list[GpuSample]:
    def get(where, kind="float"):
        return _xml_value(gpu, where, kind, path)

    uuid = get("uuid", "text")
    if not uuid:
        raise InputError(f"<gpu> number {index + 1} has no <uuid>; nothing from this file was stored", path=path)
    ident = {**common, "gpu_uuid": uuid, "gpu_index": index, "model": get("product_name", "text") or "",
             "pci_bus_id": get("pci/pci_bus_id", "text") or gpu.get("id", "")}
    processes = gpu.find("processes")
    infos = processes.findall("process_info") if processes is not None else []
    known = processes is not None and not (processes.text or "").strip()     # "N/A" text: unknown; empty: none
    whole = GpuSample(
        **ident,
        util_gpu=get("utilization/gpu_util"), util_mem=get("utilization/memory_util"),
        mem_used_bytes=get("fb_memory_usage/used", "bytes"), mem_total_bytes=get("fb_memory_usage/total", "bytes"),
        power_w=next((v for v in (get(p) for p in _POWER) if v is not None), None),
        temperature_c=get("temperature/gpu_temp"),
        sm_clock_mhz=get("clocks/sm_clock", "int"), mem_clock_mhz=get("clocks/mem_clock", "int"),
        throttle_reasons=_throttle(gpu),
        ecc_corrected_volatile=_ecc(gpu, "volatile", _ECC_CORRECTED, path),
        ecc_uncorrected_volatile=_ecc(gpu, "volatile", _ECC_UNCORRECTED, path),
        ecc_corrected_aggregate=_ecc(gpu, "aggregate", _ECC_CORRECTED, path),
        ecc_uncorrected_aggregate=_ecc(gpu, "aggregate", _ECC_UNCORRECTED, path),
        process_count=len(infos) if known else None,
    )
    out = [whole]
    for mig in gpu.findall("mig_devices/mig_device"):
        gi = _xml_value(mig, "gpu_instance_id", "int", path)
        if gi is None:
            continue
        mine = [p for p in infos if _xml_value(p, "gpu_instance_id", "int", path) == gi]
        out.append(GpuSample(
            **ident, mig_instance=str(gi),
            mem_used_bytes=_xml_value(mig, "fb_memory_usage/used", "bytes", path),
            mem_total_bytes=_xml_value(mig, "fb_memory_usage/total", "bytes", path),
            ecc_uncorrected_volatile=_xml_value(mig, "ecc_error_count/volatile_count/sram_uncorrectable", "int", path),
            process_count=len(mine) if known else None,
        ))
    return out


def _xml_value(element, where: str, kind: str, path: str):
    found = element.find(where)
    if found is None:
        return None
    try:
        return value(found.text or "", kind)
    except ValueError as exc:
        raise InputError(f"<{where}>: {exc}; nothing from this file was stored", path=path) from None


def _throttle(gpu) -> int | None:
    """The reasons' bitmask from ``clocks_event_reasons`` (or the older ``clocks_throttle_reasons``)."""
    for section, prefix in (("clocks_event_reasons", "clocks_event_reason_"),
                            ("clocks_throttle_reasons", "clocks_throttle_reason_")):
        found = gpu.find(section)
        if found is None:
            continue
        mask, any_known = 0, False
        for child in found:
            state = (child.text or "").strip()
            if unknown(state):
                continue
            any_known = True
            if state == "Active":
                mask |= THROTTLE_BITS.get(child.tag.removeprefix(prefix), 0)
        return mask if any_known else None
    return None


def _ecc(gpu, which: str, parts: tuple[str, ...], path: str) -> int | None:
    values = [_xml_value(gpu, f"ecc_errors/{which}/{part}", "int", path) for part in parts]
    known = [v for v in values if v is not None]
    return sum(known) if known else None
