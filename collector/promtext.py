"""A fast parser for the Prometheus text exposition format 0.0.4.

``parse(text)`` returns every sample as ``Sample(name, labels, value, timestamp_ms)`` plus
the ``# HELP`` and ``# TYPE`` metadata. It handles escaped label values (``\\\\``, ``\\"``,
``\\n``), optional timestamps (integer milliseconds), ``NaN`` / ``+Inf`` / ``-Inf``, blank
lines and other comments, and lines for metrics with no HELP/TYPE. Exemplars and the
OpenMetrics-only syntax are not accepted.

It is a line-at-a-time regular-expression parser, several times faster than
``prometheus_client.parser.text_string_to_metric_families`` (see ``bench/bench_promtext.py``);
the scrape path of the ingest side parses thousands of series per second with it.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from base.errors import PromTextError


class Sample(NamedTuple):
    name: str
    labels: dict[str, str]
    value: float
    timestamp_ms: int | None


class Parsed(NamedTuple):
    samples: list[Sample]
    types: dict[str, str]
    help: dict[str, str]


_LINE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:[ \t]*\{(.*)\}[ \t]*|[ \t]+)"
                   r"([^ \t{}\r]+)(?:[ \t]+(-?[0-9]+))?[ \t\r]*")
_VALUE = r'"(?:[^"\\]|\\.)*"'
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*,?')
_LABELS_OK = re.compile(rf'[ \t]*(?:[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*{_VALUE}[ \t]*,[ \t]*)*'
                        rf'(?:[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*{_VALUE}[ \t]*)?')
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_META = re.compile(r"#[ \t]+(HELP|TYPE)[ \t]+([a-zA-Z_:][a-zA-Z0-9_:]*)(?:[ \t]+(.*))?")
_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped"})
_SPECIAL = {"NaN": float("nan"), "+Inf": float("inf"), "-Inf": float("-inf"),
            "Inf": float("inf")}


def unescape(value: str) -> str:
    """Undo label-value / HELP escaping (backslash, double quote, newline)."""
    if "\\" not in value:
        return value
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), value)


def parse(text: str) -> Parsed:
    """Every sample and the metadata of a text-format exposition."""
    samples: list[Sample] = []
    types: dict[str, str] = {}
    helps: dict[str, str] = {}
    line_match, labels_of, append = _LINE.fullmatch, _labels, samples.append
    for number, line in enumerate(text.split("\n"), 1):
        if not line or line[0] == "#":
            if line.startswith("#"):
                _meta(line, types, helps, number)
            continue
        m = line_match(line)
        if m is None:
            if line.isspace():
                continue
            raise PromTextError(f"line {number}: not a Prometheus sample: {line[:120]!r}")
        name, raw_labels, raw_value, ts = m.groups()
        try:
            value = float(raw_value)
        except ValueError:
            value = _special(raw_value, number)
        append(Sample(name, labels_of(raw_labels, number) if raw_labels else {}, value,
                      int(ts) if ts is not None else None))
    return Parsed(samples, types, helps)


def _labels(raw: str, number: int) -> dict[str, str]:
    if not _LABELS_OK.fullmatch(raw):
        raise PromTextError(f"line {number}: malformed label set {{{raw[:120]}}}; label "
                            'values must be double-quoted, pairs separated by commas')
    if "\\" in raw:
        return {k: unescape(v) for k, v in _LABEL.findall(raw)}
    return dict(_LABEL.findall(raw))


def _special(raw: str, number: int) -> float:
    if raw in _SPECIAL:
        return _SPECIAL[raw]
    raise PromTextError(f"line {number}: {raw!r} is not a sample value (a float, NaN, "
                        "+Inf or -Inf)")


def _meta(line: str, types: dict, helps: dict, number: int) -> None:
    m = _META.fullmatch(line.rstrip())
    if m is None:
        return  # an ordinary comment
    kind, name, rest = m.groups()
    if kind == "HELP":
        helps[name] = unescape(rest or "")
    else:
        t = (rest or "").strip()
        if t not in _TYPES:
            raise PromTextError(f"line {number}: unknown metric type {t!r} for {name}")
        types[name] = t
