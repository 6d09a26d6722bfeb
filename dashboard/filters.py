"""The global filters (time range, environment, team), read from and written to the URL.

A link reproduces the view: ``/spend?range=7d&env=aws&team=research``, or a fixed window
``?from=2026-10-01&to=2026-10-31`` (both days included). Values that cannot be right (a
malformed date, a day outside 2000-01-01..2099-12-31, ``from`` after ``to``, an environment that
is not a plain word, a value over 128 characters) are
dropped with a note shown on the page; everything else reaches SQL only as a bound parameter,
so a team called ``x' OR 1=1 --`` is just a team that matches nothing.

Time ranges (all UTC; ``now`` is the dashboard's clock):

* ``1d`` "Last 24 hours": the 24 whole hours up to now, ``floor_hour(now) + 1 h − 24 h`` ..
  ``floor_hour(now) + 1 h`` (the last hour, the current one, is partial). Hour-exact, not whole
  days: dashboard/queries.py reads hourly tables for such a window (``Filters.whole_days``).
* ``7d``, ``30d``, ``90d`` "Last N days": the N whole UTC days ending with today (today included,
  partial).
* ``mtd`` "Month to date": the 1st of the current month .. the end of today (whole days; data runs
  to now).
* ``month`` "This month": the whole calendar month containing today, 1st .. 1st of the next month;
  its days after today have no data yet, so charts show how much of the month is left.
* ``last-month`` "Last month": the whole previous calendar month.
* ``from``/``to``: a fixed window of whole days, both included (the date-range picker writes them).

Chart code reads the exact window with ``Filters.window()`` and the incomplete bucket with
``Filters.partial_from("day" | "hour")``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from urllib.parse import urlencode

PRESET_LABELS = {"1d": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days", "90d": "Last 90 days",
                 "mtd": "Month to date", "month": "This month", "last-month": "Last month"}
PRESETS = tuple(PRESET_LABELS)
ROLLING_DAYS = {"7d": 7, "30d": 30, "90d": 90}
MONTH_PRESETS = ("mtd", "month", "last-month")
ENVIRONMENT = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,31}$")
MAX_VALUE = 128
MAX_VALUES = 20
MAX_DAYS = 400
EARLIEST, LATEST = date(2000, 1, 1), date(2099, 12, 31)   # days a window may name (ingest refuses older samples)
HOUR, DAY = timedelta(hours=1), timedelta(days=1)


@dataclass(frozen=True)
class Filters:
    start: date                       # first day shown (the day of the window's start)
    end: date                         # the day after the last day shown (the window's end rounded up to a day)
    preset: str = ""                  # "30d" etc.; "" for a fixed from/to window
    envs: tuple[str, ...] = ()        # empty: every environment
    teams: tuple[str, ...] = ()       # empty: every team
    notes: tuple[str, ...] = field(default=(), compare=False)   # what was dropped from the URL, and why
    start_at: datetime | None = None  # hour-exact window start (naive UTC); None: midnight of ``start``
    end_at: datetime | None = None    # hour-exact window end, excluded (naive UTC); None: midnight of ``end``
    now: datetime | None = field(default=None, compare=False)   # the clock when the filters were read (naive UTC)

    @property
    def days(self) -> int:
        """Calendar days the window touches (a hour-exact 24 hours touches 2)."""
        return (self.end - self.start).days

    def window(self) -> tuple[datetime, datetime]:
        """The window as exact naive-UTC datetimes ``(start, end)``, end excluded: what x axes span."""
        return (self.start_at or datetime.combine(self.start, time()),
                self.end_at or datetime.combine(self.end, time()))

    @property
    def whole_days(self) -> bool:
        """Whether the window is whole UTC days (daily tables select exactly its hours)."""
        return all(t.time() == time() for t in self.window())

    @property
    def hours(self) -> float:
        """The window's length in hours."""
        start, end = self.window()
        return (end - start).total_seconds() / 3600

    def partial_from(self, bucket: str = "day") -> datetime | None:
        """The start of the current, incomplete ``bucket`` ("day" or "hour") when the window reaches
        now (naive UTC), else None: chart code marks data from there on as partial, not a drop."""
        if self.now is None:
            return None
        start, end = self.window()
        if not start <= self.now < end:
            return None
        if bucket == "hour":
            return self.now.replace(minute=0, second=0, microsecond=0)
        if bucket == "day":
            return max(start, datetime.combine(self.now.date(), time()))
        raise ValueError(f"bucket must be 'day' or 'hour', not {bucket!r}")

    @property
    def last_day(self) -> date:
        """The window's last (UTC) day."""
        return (self.window()[1] - timedelta(microseconds=1)).date()

    @property
    def budget_month(self) -> date:
        """The 1st of the month the budget card shows: the selected month for the month presets,
        else the calendar month of the window's last day."""
        return self.last_day.replace(day=1)

    @property
    def budget_month_is_current(self) -> bool:
        """Whether the budget month is the month of now (only then is a forecast meaningful)."""
        return self.now is not None and self.budget_month == self.now.date().replace(day=1)

    def params(self) -> dict:
        """Bound parameters every dashboard query takes: ``start``/``end`` the exact window
        (DateTime), ``start_day``/``end_day`` the days it touches (Date, end excluded), ``month``
        the budget month's 1st (Date), ``today`` the clock's day (Date)."""
        start, end = self.window()
        return {"start": start, "end": end, "start_day": self.start, "end_day": self.end,
                "month": self.budget_month, "today": self.now.date() if self.now else self.last_day,
                "envs": list(self.envs), "teams": list(self.teams)}

    def query(self) -> dict[str, str | list[str]]:
        out: dict[str, str | list[str]] = {}
        if self.preset:
            out["range"] = self.preset
        else:
            out["from"], out["to"] = self.start.isoformat(), (self.end - DAY).isoformat()
        if self.envs:
            out["env"] = list(self.envs)
        if self.teams:
            out["team"] = list(self.teams)
        return out

    def search(self) -> str:
        return "?" + urlencode(self.query(), doseq=True)

    def describe_window(self) -> str:
        """The window in words, UTC: ``2026-11-20 15:00 to 2026-11-21 15:00 UTC`` or ``2026-10-01 to 2026-10-31``."""
        if self.whole_days:
            last = self.end - DAY
            return f"{self.start}" if last == self.start else f"{self.start} to {last}"
        start, end = self.window()
        return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"

    def describe(self) -> str:
        label = PRESET_LABELS.get(self.preset)
        when = f"{label} ({self.describe_window()})" if label else self.describe_window()
        parts = [when, ", ".join(self.envs) or "all environments", ", ".join(self.teams) or "all teams"]
        return " · ".join(parts)

    def to_data(self) -> dict:
        """JSON-able form kept in the page (a dcc.Store) for the callbacks."""
        start, end = self.window()
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "preset": self.preset,
                "start_at": start.isoformat(), "end_at": end.isoformat(),
                "envs": list(self.envs), "teams": list(self.teams), "notes": list(self.notes)}

    @classmethod
    def from_data(cls, data: dict | None, today: date | datetime, default_range: str = "30d") -> Filters:
        """Filters back from to_data(); anything malformed gives the default range. ``today`` is the
        clock (a datetime; a date means the end of that day)."""
        if not isinstance(data, dict):
            return parse({}, today, default_range)
        try:
            start, end = date.fromisoformat(data["start"]), date.fromisoformat(data["end"])
        except (KeyError, TypeError, ValueError):
            return parse({}, today, default_range)
        envs, teams = _clean_list(data.get("envs")), _clean_list(data.get("teams"))
        if not (0 < (end - start).days <= MAX_DAYS and EARLIEST <= start and end <= LATEST):
            return parse({}, today, default_range)
        start_at, end_at = _hour(data.get("start_at")), _hour(data.get("end_at"))
        lo, hi = datetime.combine(start, time()), datetime.combine(end, time())
        if not (start_at and end_at and lo <= start_at < lo + DAY and hi - DAY < end_at <= hi and start_at < end_at):
            start_at = end_at = None
        elif start_at == lo and end_at == hi:
            start_at = end_at = None
        preset = data.get("preset") if data.get("preset") in PRESETS else ""
        return cls(start, end, preset, tuple(e for e in envs if ENVIRONMENT.match(e)), teams,
                   start_at=start_at, end_at=end_at, now=_now(today))


def preset_window(preset: str, now: datetime) -> tuple[datetime, datetime]:
    """The exact window (naive UTC, end excluded) of ``preset`` at ``now`` (see the module doc)."""
    today = datetime.combine(now.date(), time())
    if preset == "1d":
        end = now.replace(minute=0, second=0, microsecond=0) + HOUR
        return end - 24 * HOUR, end
    if preset in ROLLING_DAYS:
        return today + DAY - ROLLING_DAYS[preset] * DAY, today + DAY
    first = today.replace(day=1)
    if preset == "mtd":
        return first, today + DAY
    if preset == "month":
        return first, _next_month(first)
    if preset == "last-month":
        return (first - DAY).replace(day=1), first   # the day before the 1st is in the previous month
    raise ValueError(f"unknown preset {preset!r}")


def _next_month(first: datetime) -> datetime:
    first = first.replace(day=1)
    return first.replace(year=first.year + 1, month=1) if first.month == 12 else first.replace(month=first.month + 1)


def parse(args: Mapping, today: date | datetime, default_range: str = "30d") -> Filters:
    """Filters from URL query arguments (each a string or a list of strings). ``today`` is the
    clock: a datetime (aware or naive UTC), or a date meaning the end of that day."""
    now = _now(today)
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
            end = last + DAY
        except ValueError:
            notes.append(f"from/to must be two dates (YYYY-MM-DD) from {EARLIEST} to {LATEST}, from not after to, "
                         f"at most {MAX_DAYS} days apart; showing the default range")
            start = end = None
    start_at = end_at = None
    if start is None:
        preset = preset or (default_range if default_range in PRESETS else "30d")
        start_at, end_at = preset_window(preset, now)
        start, end = start_at.date(), (end_at - timedelta(microseconds=1)).date() + DAY
        if start_at.time() == time() and end_at.time() == time():
            start_at = end_at = None
    envs = []
    for value in _many(args.get("env"), "environment", notes):
        if ENVIRONMENT.match(value):
            envs.append(value)
        else:
            notes.append(f"environment {shown(value)} ignored: environments are lower-case words like aws or onprem")
    teams = _many(args.get("team"), "team", notes)
    return Filters(start, end, preset, tuple(dict.fromkeys(envs)),
                   tuple(dict.fromkeys(teams)), tuple(notes), start_at=start_at, end_at=end_at, now=now)


def _now(today: date | datetime) -> datetime:
    """The clock as a naive-UTC datetime; a date stands for the last moment of that day."""
    if isinstance(today, datetime):
        return today.astimezone(timezone.utc).replace(tzinfo=None) if today.tzinfo else today
    return datetime.combine(today, time.max)


def _hour(value) -> datetime | None:
    """A whole-hour naive datetime from an ISO string, or None."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    if t.tzinfo:
        t = t.astimezone(timezone.utc).replace(tzinfo=None)
    return t if (t.minute, t.second, t.microsecond) == (0, 0, 0) and EARLIEST <= t.date() <= LATEST else None


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
