"""Running a rule's SQL and turning its rows into alert instances.

Row conventions: every column is a label, except ``value`` (a number), ``summary``,
``description``, ``severity`` (overrides the rule's when it is critical, warning or info) and
``annotation_*`` columns, which become annotations. The engine adds ``alertname`` and
``severity`` labels and the rule's own labels; the fingerprint is a stable hash of the sorted
labels, so the same labels are the same alert across rounds and restarts.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import string
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from alerts.config import SEVERITIES
from alerts.rules import Rule
from base.errors import RuleError, first_line

log = logging.getLogger(__name__)

SPECIAL = {"value", "summary", "description", "severity"}
ANNOTATION_PREFIX = "annotation_"
MAX_INSTANCES = 10_000


@dataclass(frozen=True)
class Instance:
    """One active alert instance as a rule's query returned it this round."""

    rule: str
    fingerprint: str
    labels: dict[str, str]
    annotations: dict[str, str] = field(default_factory=dict)
    value: float = 0.0

    @property
    def severity(self) -> str:
        return self.labels.get("severity", "warning")


def fingerprint(labels: dict[str, str]) -> str:
    """Stable hash of the sorted labels (16 hex digits)."""
    text = json.dumps(sorted(labels.items()), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def sql_time(now: datetime) -> str:
    """``now`` as the ``{now:DateTime64(3, 'UTC')}`` parameter."""
    return now.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def run_rule(store, rule: Rule, now: datetime) -> list[Instance]:
    """The rule's active instances at ``now``; RuleError (naming the rule) when its SQL fails."""
    parameters = {"now": sql_time(now), **{k: float(v) for k, v in rule.params.items()}}
    try:
        result = store.client.query(rule.sql, parameters=parameters)
    except Exception as exc:
        raise RuleError(f"rule {rule.name}: its query failed: {first_line(exc)}") from None
    columns = list(result.column_names)
    if len(result.result_rows) > MAX_INSTANCES:
        raise RuleError(f"rule {rule.name}: its query returned {len(result.result_rows)} rows, more than "
                        f"{MAX_INSTANCES}; make its labels coarser or its thresholds stricter")
    out: dict[str, Instance] = {}
    for row in result.result_rows:
        inst = to_instance(rule, dict(zip(columns, row)))
        kept = out.get(inst.fingerprint)
        if kept is None or inst.value > kept.value:
            out[inst.fingerprint] = inst
    return list(out.values())


def to_instance(rule: Rule, row: dict) -> Instance:
    labels, annotations = {}, {}
    for name, raw in row.items():
        if name in SPECIAL:
            continue
        if name.startswith(ANNOTATION_PREFIX):
            annotations[name[len(ANNOTATION_PREFIX):]] = _text(raw)
        else:
            labels[name] = _text(raw)
    for name in ("summary", "description"):
        if row.get(name) not in (None, ""):
            annotations[name] = _text(row[name])
    labels.update(rule.labels)
    severity = row.get("severity")
    labels["severity"] = severity if severity in SEVERITIES and not rule.severity_fixed else rule.severity
    labels["alertname"] = rule.name
    value = _number(row.get("value"))
    context = {**rule.params, **annotations, **labels, "value": value}
    for name, template in rule.annotations.items():
        annotations[name] = render(template, context)
    annotations["value"] = with_unit(value, rule.unit)
    return Instance(rule.name, fingerprint(labels), labels, annotations, value)


def with_unit(value: float, unit: str) -> str:
    """``value`` as people read it: ``$1,234.50``, ``3.2 h``, ``87.5 %``, ``12``."""
    if unit == "USD":
        return f"${value:,.2f}"
    number = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}" if abs(value) < 10 else f"{value:,.1f}"
    return f"{number} {unit}".strip()


class _Template(string.Formatter):
    def get_value(self, key, args, kwargs):
        return kwargs.get(key, "{" + str(key) + "}")

    def format_field(self, value, format_spec):
        try:
            return format(value, format_spec)
        except (ValueError, TypeError):
            try:
                return format(float(value), format_spec)
            except (ValueError, TypeError):
                return str(value)


def render(template: str, context: dict) -> str:
    """``template`` with ``{name}`` / ``{name:.1f}`` filled from ``context``; unknown names stay."""
    try:
        return _Template().vformat(template, (), context)
    except (ValueError, IndexError, KeyError, AttributeError):
        return template


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(value) -> float:
    if value is None:
        return 0.0
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def evaluate_rules(store, rules: list[Rule], now: datetime) -> tuple[dict[str, list[Instance]], dict[str, str]]:
    """Run every rule: ({rule: instances} for those that ran, {rule: error} for those that failed)."""
    results, errors = {}, {}
    for rule in rules:
        started = time.perf_counter()
        try:
            results[rule.name] = run_rule(store, rule, now)
        except RuleError as exc:
            errors[rule.name] = str(exc)
        log.debug("rule %s: %.3f s", rule.name, time.perf_counter() - started)
    return results, errors
