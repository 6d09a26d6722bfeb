"""Rules as the engine runs them: the built-in pack with its overrides, plus the config's own.

A rule is a SQL query that returns one row per alert instance (see ``evaluate``) and the
Prometheus-style settings around it: ``for``, severity, labels, annotations, channels,
``group_by``, ``repeat_interval``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from alerts.builtin import BUILTIN_RULES
from alerts.config import AlertsConfig
from alerts.durations import parse_duration
from base.errors import RuleError


@dataclass(frozen=True)
class Rule:
    name: str
    sql: str
    severity: str = "warning"
    for_s: float = 0.0
    repeat_interval_s: float = 4 * 3600.0
    group_by: tuple[str, ...] = ("alertname",)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    channels: tuple[str, ...] = ()
    params: dict[str, float] = field(default_factory=dict)
    page: str = "alerts"
    unit: str = ""                        # what value counts, shown with it (h, %, USD, ...)
    builtin: bool = False
    severity_fixed: bool = False          # the config set it: a query's severity column does not override it


def runbook_url(base: str, rule: str) -> str:
    """Where a rule's runbook is: ``base`` with ``{alertname}`` filled in, or ``base#rule``."""
    return base.replace("{alertname}", rule) if "{alertname}" in base else f"{base}#{rule}"


def builtin_rules(cfg: AlertsConfig) -> list[Rule]:
    """The built-in pack with the config's overrides; disabled rules left out."""
    out = []
    for name, spec in BUILTIN_RULES.items():
        over = cfg.builtin_rules.get(name)
        if over is not None and not over.enabled:
            continue
        params = dict(spec.params)
        labels = {"category": spec.category}
        severity, for_d, repeat, group_by, channels = (spec.severity, spec.for_duration, spec.repeat_interval,
                                                       spec.group_by, ())
        if over is not None:
            params.update(over.params)
            labels.update(over.labels)
            severity = over.severity or severity
            for_d = over.for_duration or for_d
            repeat = over.repeat_interval or repeat
            group_by = tuple(over.group_by) if over.group_by is not None else group_by
            channels = tuple(over.channels)
        out.append(Rule(
            name=name, sql=spec.sql(), severity=severity, for_s=parse_duration(for_d),
            repeat_interval_s=parse_duration(repeat), group_by=group_by, labels=labels,
            annotations={"summary": spec.summary, "runbook_url": runbook_url(cfg.runbook_base_url, name)},
            channels=channels, params=params, page=spec.page, unit=spec.unit, builtin=True,
            severity_fixed=over is not None and over.severity is not None,
        ))
    return out


def rules_from_config(cfg: AlertsConfig, base_dir: Path | None = None) -> list[Rule]:
    """Every enabled rule: the built-in pack (unless ``builtin = false``), then the config's rules.

    A ``query_file`` is read relative to ``base_dir`` (the config file's folder)."""
    rules = builtin_rules(cfg) if cfg.builtin else []
    for rc in cfg.rules:
        if not rc.enabled:
            continue
        sql = rc.query
        if rc.query_file:
            path = Path(rc.query_file).expanduser()
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            try:
                sql = path.read_text()
            except OSError as exc:
                raise RuleError(f"rule {rc.name}: cannot read its query_file {path} ({exc.strerror})") from None
        rules.append(Rule(
            name=rc.name, sql=sql, severity=rc.severity, for_s=parse_duration(rc.for_duration),
            repeat_interval_s=parse_duration(rc.repeat_interval), group_by=tuple(rc.group_by),
            labels=dict(rc.labels), annotations=dict(rc.annotations), channels=tuple(rc.channels),
            params=dict(rc.params), page=rc.page, unit=rc.unit,
        ))
    return rules
