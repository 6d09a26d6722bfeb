"""The Idle & waste page's focus on one GPU entity and one of its idle windows, read from the URL.

``/idle?gpu=GPU-5d1c…&mig=3&window=2026-03-20T01:02:03Z`` is what the gpu_idle_window alert links
to (``alerts.grouping.alert_url``): ``gpu`` a GPU UUID, ``mig`` one of its MIG instances (none:
the whole GPU), ``window`` the start of one of that entity's idle windows (ISO 8601, UTC unless it
names an offset; matched to the second, as the alert's label is written). Only the Idle & waste
page reads them: they are not global ``Filters``, so the filter bar's links to the other pages
drop them. Values that cannot be right (over 128 characters, not printable, a time that is not
one, ``mig`` or ``window`` without ``gpu``) are dropped with a note; the rest reach SQL only as
bound parameters.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from dashboard.filters import EARLIEST, LATEST, MAX_VALUE, shown

FOCUS_PARAMS = ("gpu", "mig", "window")    # the focus's URL parameters
# every page-own URL parameter the filter bar keeps when it rewrites the URL: the focus, and the
# pages' toggles (dashboard/drill.py: ``by`` the aggregate-by grouping, ``rows`` the heatmap's rows)
PARAMS = (*FOCUS_PARAMS, "by", "rows")


@dataclass(frozen=True)
class Focus:
    gpu: str = ""                      # GPU UUID; "" for no focus
    mig: str = ""                      # MIG instance; "" for the whole GPU
    window: datetime | None = None     # an idle window's start, naive UTC, whole seconds
    notes: tuple[str, ...] = field(default=(), compare=False)   # what was dropped from the URL, and why

    def __bool__(self) -> bool:
        return bool(self.gpu)

    def params(self) -> dict:
        """Bound parameters of the queries that take a focus (``gpu`` "": every GPU)."""
        return {"gpu": self.gpu, "mig": self.mig}

    def window_params(self) -> dict:
        return {**self.params(), "window": self.window}

    def query(self) -> dict[str, str]:
        out = {"gpu": self.gpu, "mig": self.mig, "window": window_text(self.window) if self.window else ""}
        return {k: v for k, v in out.items() if v}

    def describe(self) -> str:
        name = self.gpu if self.gpu.upper().startswith("GPU") else f"GPU {self.gpu}"
        return name + (f" MIG {self.mig}" if self.mig else "")

    def to_data(self) -> dict:
        """JSON-able form kept in the page (a dcc.Store) for the callbacks."""
        return {"gpu": self.gpu, "mig": self.mig, "window": window_text(self.window) if self.window else ""}

    @classmethod
    def from_data(cls, data) -> Focus:
        """The focus a callback was sent; anything malformed is no focus (it came from parse)."""
        if not isinstance(data, dict):
            return cls()
        focus = parse({k: data.get(k) for k in FOCUS_PARAMS if isinstance(data.get(k), str)})
        return cls() if focus.notes else focus


def parse(args: Mapping) -> Focus:
    """The focus from URL query arguments (each a string or a list of strings)."""
    notes: list[str] = []
    gpu, mig, when = (url_value(args.get(name), name, notes) for name in FOCUS_PARAMS)
    window = None
    if when:
        window = parse_window(when)
        if window is None:
            notes.append(f"window {shown(when)} ignored: it must be an idle window's start time, "
                         "like 2026-03-20T01:02:03Z")
    if not gpu and (mig or window):
        notes.append("mig and window ignored: they need gpu (the GPU's UUID)")
        mig, window = "", None
    return Focus(gpu, mig, window, tuple(notes))


def parse_window(text: str) -> datetime | None:
    """An ISO 8601 time as naive UTC to the second; None if it is not one (or not in 2000..2099)."""
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is not None:
            moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    except (ValueError, OverflowError):
        return None
    return moment.replace(microsecond=0) if EARLIEST <= moment.date() <= LATEST else None


def window_text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def url_value(value, name: str, notes: list[str]) -> str:
    """One URL parameter as text: the first of several, at most MAX_VALUE printable characters
    (what is dropped is said in ``notes``)."""
    if isinstance(value, list):
        if len(value) > 1:
            notes.append(f"only the first {name} value is used")
        value = value[0] if value else ""
    if not isinstance(value, str):
        return ""
    if len(value) > MAX_VALUE or not value.isprintable():
        notes.append(f"a {name} value of {len(value)} characters ignored (at most {MAX_VALUE} printable characters)")
        return ""
    return value.strip()


NO_FOCUS = Focus()
