"""Durations as people write them in alerting configs: ``90s``, ``15m``, ``4h``, ``1h30m``, ``7d``."""
from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str | int | float) -> float:
    """Seconds in ``text``; a bare number is seconds. Raises ValueError on anything else."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"duration {text!r} is negative")
        return float(text)
    raw = str(text).strip()
    if raw == "0":
        return 0.0
    pos, total = 0, 0.0
    for match in _PART.finditer(raw):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(raw) or not raw:
        raise ValueError(f"duration {text!r} is not like 30s, 15m, 4h, 1h30m or 7d")
    return total
