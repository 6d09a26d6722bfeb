"""Label matchers, as in Alertmanager: ``name=value``, ``name!=value``, ``name=~regex``,
``name!~regex``. Regular expressions are anchored (they must match the whole value); a label an
alert does not have has the value ``""``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

_MATCHER = re.compile(r'^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(.*?)\s*$')
OPS = ("=", "!=", "=~", "!~")


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str
    value: str

    @cached_property
    def _regex(self):
        return re.compile(self.value) if self.op in ("=~", "!~") else None

    def matches(self, labels: dict[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        hit = self._regex.fullmatch(actual) is not None
        return hit if self.op == "=~" else not hit

    def __str__(self) -> str:
        return f"{self.name}{self.op}{self.value}"


def parse_matcher(text: str) -> Matcher:
    """``team=vision`` -> Matcher; raises ValueError saying what a matcher looks like."""
    match = _MATCHER.match(text)
    if not match:
        raise ValueError(f"matcher {text!r} is not like name=value, name!=value, name=~regex or name!~regex")
    name, op, value = match.groups()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if op in ("=~", "!~"):
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"matcher {text!r} has a bad regular expression: {exc}") from None
    return Matcher(name, op, value)


def matches_all(matchers, labels: dict[str, str]) -> bool:
    return all(m.matches(labels) for m in matchers)
