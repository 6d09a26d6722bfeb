"""The global filters (time range, environment, team), read from and written to the URL.

A link reproduces the view: ``/spend?range=7d&env=aws&team=research``, or a fixed window
``?from=2026-10-01&to=2026-10-31`` (both days included). Values that cannot be right (a
malformed date, a day outside 2000-01-01..2099-12-31, ``from`` after ``to``, an environment that
is not a plain word, a value over 128 characters) are
dropped with a note shown on the page; everything else reaches SQL only as a bound parameter,
so a team called ``x' OR 1=1 --`` is just a team that matches nothing.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from urllib.parse import urlencode

PRESETS = {"1d": 1, "7d": 7, "30d": 30, "90d": 90}
PRESET_LABELS = {"1d": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days", "90d": "Last 90 days"}
ENVIRONMENT = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,31}$")
MAX_VALUE = 128
MAX_VALUES = 20
MAX_DAYS = 400
EARLIEST, LATEST = date(2000, 1, 1), date(2099, 12, 31)   # days a window may name (ingest refuses older samples)


@dataclass(frozen=True)
class Filters:
    start: date                       # first day shown
    end: date                         # the day after the last day shown
    preset: str = ""                  # "30d" etc.; "" for a fixed from/to window
    envs: tuple[str, ...] = ()        # empty: every environment
    teams: tuple[str, ...] = ()       # empty: every team
    notes: tuple[str, ...] = field(default=(), compare=False)   # what was dropped from the URL, and why

    @property
    def days(self) -> int:
        return (self.end - self.start).days

    def params(self) -> dict:
        """Bound parameters every dashboard query takes."""
        return {"start": datetime.combine(self.start, time(), timezone.utc).replace(tzinfo=None),
                "end": datetime.combine(self.end, time(), timezone.utc).replace(tzinfo=None),
                "start_day": self.start, "end_day": self.end,
                "envs": list(self.envs), "teams": list(self.teams)}

    def query(self) -> dict[str, str | list[str]]:
        out: dict[str, str | list[str]] = {}
        if self.preset:
            out["range"] = self.preset
        else:
            out["from"], out["to"] = self.start.isoformat(), (self.end - timedelta(days=1)).isoformat()
        if self.envs:
            out["env"] = list(self.envs)
        if self.teams:
            out["team"] = list(self.teams)
        return out

    def search(self) -> str:
        return "?" + urlencode(self.query(), doseq=True)

    def describe(self) -> str:
        when = PRESET_LABELS.get(self.preset) or f"{self.start} to {self.end - timedelta(days=1)}"
        parts = [when, ", ".join(self.envs) or "all environments", ", ".join(self.teams) or "all teams"]
        return " · ".join(parts)

    def to_data(self) -> dict:
        """JSON-able form kept in the page (a dcc.Store) for the callbacks."""
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "preset": self.preset,
                "envs": list(self.envs), "teams": list(self.teams), "notes": list(self.notes)}

    @classmethod
    def from_data(cls, data: dict | None, today: date, default_range: str = "30d") -> Filters:
        if not isinstance(data, dict):
            return parse({}, today, default_range)
        try:
            start, end = date.fromisoformat(data["start"]), date.fromisoformat(data["end"])
        except (KeyError, TypeError, ValueError):
            return parse({}, today, default_range)
        envs, teams = _clean_list(data.get("envs")), _clean_list(data.get("teams"))
        if not (0 < (end - start).days <= MAX_DAYS and EARLIEST <= start and end <= LATEST):
            return parse({}, today, default_range)
        preset = data.get("preset") if data.get("preset") in PRESETS else ""
        return cls(start, end, preset, tuple(e for e in envs if ENVIRONMENT.match(e)), teams)


def parse(args: Mapping, today: date, default_range: str = "30d") -> Filters:
    """Filters from URL query arguments (each a string or a list of strings)."""
    notes: list[str] = []
    start = end = None
    preset = _one(args.get("range"))
    if preset and preset not in PRESETS:
        notes.append(f"unknown time range {shown(preset)} ignored; use one of {', '.join(PRESETS)}")
        preset = ""
    if not preset and (args.get("from") or args.get("to")):
        try:
            start = date.fromisoformat(_one(args.get("from")) or "")
            last = date.fromisoformat(_one(args.get("to")) or "")
            if not (EARLIEST <= start <= last <= LATEST and (last - start).days < MAX_DAYS):
                raise ValueError
            end = last + timedelta(days=1)
        except ValueError:
            notes.append(f"from/to must be two dates (YYYY-MM-DD) from {EARLIEST} to {LATEST}, from not after to, "
                         f"at most {MAX_DAYS} days apart; showing the default range")
            start = end = None
    if start is None:
        preset = preset or default_range
        end = today + timedelta(days=1)
        start = end - timedelta(days=PRESETS[preset])
    envs = []
    for value in _many(args.get("env"), "environment", notes):
        if ENVIRONMENT.match(value):
            envs.append(value)
        else:
            notes.append(f"environment {shown(value)} ignored: environments are lower-case words like aws or onprem")
    teams = _many(args.get("team"), "team", notes)
    return Filters(start, end, preset, tuple(dict.fromkeys(envs)),
                   tuple(dict.fromkeys(teams)), tuple(notes))


def _one(value) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    return value if isinstance(value, str) and len(value) <= MAX_VALUE else ""


def _many(value, what: str, notes: list[str]) -> list[str]:
    values = value if isinstance(value, list) else [value] if value else []
    out = []
    for v in values:
        if not isinstance(v, str) or not v.strip():
            continue
        if len(v) > MAX_VALUE or not v.isprintable():
            notes.append(f"a {what} value of {len(v)} characters ignored (at most {MAX_VALUE} printable characters)")
            continue
        out.append(v.strip())
    if len(out) > MAX_VALUES:
        notes.append(f"only the first {MAX_VALUES} {what} values are used")
    return out[:MAX_VALUES]


def _clean_list(value) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str) and 0 < len(v) <= MAX_VALUE)[:MAX_VALUES]


def shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")
