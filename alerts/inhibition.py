"""Inhibition, as in Alertmanager: a firing alert matching a rule's ``source`` mutes the alerts
matching its ``target`` whose ``equal`` labels have the same values (a label an alert lacks
counts as ``""``). An alert never inhibits itself. By default a critical alert mutes warning and
info alerts, and a warning mutes info, with the same category, team, host and GPU.
"""
from __future__ import annotations

from dataclasses import dataclass

from alerts.matchers import Matcher, matches_all, parse_matcher


@dataclass(frozen=True)
class InhibitRule:
    source: tuple[Matcher, ...]
    target: tuple[Matcher, ...]
    equal: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, cfg) -> InhibitRule:
        return cls(tuple(map(parse_matcher, cfg.source)), tuple(map(parse_matcher, cfg.target)), tuple(cfg.equal))


def inhibited(alerts: dict[str, dict[str, str]], rules: list[InhibitRule]) -> dict[str, str]:
    """{fingerprint of a muted alert: fingerprint of the alert muting it}, among the firing
    ``alerts`` ({fingerprint: labels})."""
    out: dict[str, str] = {}
    for rule in rules:
        sources: dict[tuple, str] = {}
        for fp, labels in alerts.items():
            if matches_all(rule.source, labels):
                sources.setdefault(tuple(labels.get(n, "") for n in rule.equal), fp)
        if not sources:
            continue
        for fp, labels in alerts.items():
            if fp in out or not matches_all(rule.target, labels):
                continue
            source = sources.get(tuple(labels.get(n, "") for n in rule.equal))
            if source is not None and source != fp:
                out[fp] = source
    return out
