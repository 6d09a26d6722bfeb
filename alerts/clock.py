"""Time for the engine: a clock passed in (tests control it), UTC helpers, row versions."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone

Clock = Callable[[], datetime]
_lock = threading.Lock()
_last = 0


def system_clock() -> datetime:
    return datetime.now(timezone.utc)


def utc(value: datetime | None) -> datetime | None:
    """A datetime from ClickHouse (naive means UTC) or the clock, as an aware UTC datetime."""
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def version() -> int:
    """A strictly increasing row version (wall-clock nanoseconds), for ReplacingMergeTree rows.

    Independent of the injected clock, so that a later write always wins even when a test's clock
    stands still."""
    global _last
    with _lock:
        _last = max(_last + 1, time.time_ns())
        return _last


def iso(value: datetime | None) -> str:
    return utc(value).strftime("%Y-%m-%dT%H:%M:%SZ") if value else ""


def parse_iso(text: str) -> datetime | None:
    """An ISO 8601 time (``Z`` or an offset; none means UTC) or ``YYYY-MM-DD HH:MM`` as an aware
    datetime; None when ``text`` is not one."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T"))
    except (AttributeError, ValueError):
        return None
    return utc(value)
