"""Attribution rules → one ClickHouse expression returning (team, rule name).

Patterns and values travel as query parameters, never as SQL text.
"""
from __future__ import annotations

from ingest.rollup.config import AttributionRule


def glob_to_like(pattern: str) -> str:
    out = []
    for ch in pattern:
        if ch == "*":
            out.append("%")
        elif ch == "?":
            out.append("_")
        elif ch in "%_\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def field_sql(name: str, params: dict) -> str:
    if name.startswith("tag:"):
        key = f"attr_tag_{len(params)}"
        params[key] = name[4:]
        return f"tags[{{{key}:String}}]"
    return f"toString({name})"


def rules_expression(rules: list[AttributionRule], params: dict) -> str:
    """A multiIf over the rules; adds its parameters to ``params``."""
    branches = []
    for rule in rules:
        conditions = []
        for name, pattern in rule.when.items():
            key = f"attr_p{len(params)}"
            params[key] = glob_to_like(pattern)
            conditions.append(f"({field_sql(name, params)} LIKE {{{key}:String}})")
        if rule.team_from:
            value = field_sql(rule.team_from, params)
            conditions.append(f"({value} != '')")
        else:
            key = f"attr_t{len(params)}"
            params[key] = rule.team
            value = f"{{{key}:String}}"
        name_key = f"attr_n{len(params)}"
        params[name_key] = rule.name
        branches.append(f"{' AND '.join(conditions) or '1'}, tuple({value}, {{{name_key}:String}})")
    if not branches:
        return "tuple('unallocated', '')"
    return "multiIf(" + ", ".join(branches) + ", tuple('unallocated', ''))"
