"""Silences: while active, alerts whose labels match every matcher are not notified.

Created and expired from the CLI (``gpuledger alerts silence ...``) and the dashboard through
``create_silence`` / ``expire_silence`` / ``list_silences``; every silence names its author and
says why. They live in ``alert_silences``; expiring one sets its end to the time of expiry, so
the alerts it held back are notified on the next round.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from alerts.clock import utc, version
from alerts.matchers import Matcher, matches_all, parse_matcher
from base.errors import SilenceError

COLUMNS = ["id", "matchers", "starts_at", "ends_at", "created_by", "comment", "created_at", "updated_by"]


@dataclass(frozen=True)
class Silence:
    id: str
    matchers: tuple[Matcher, ...]
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    created_at: datetime
    updated_by: str = ""

    def active(self, now: datetime) -> bool:
        return self.starts_at <= now < self.ends_at

    def matches(self, labels: dict[str, str]) -> bool:
        return matches_all(self.matchers, labels)

    def state(self, now: datetime) -> str:
        return "active" if self.active(now) else ("pending" if now < self.starts_at else "expired")


def parse_matchers(texts: list[str]) -> tuple[Matcher, ...]:
    try:
        matchers = tuple(parse_matcher(t) for t in texts)
    except ValueError as exc:
        raise SilenceError(str(exc)) from None
    if not matchers:
        raise SilenceError("a silence needs at least one matcher, e.g. team=vision or alertname=gpu_idle_window")
    if all(m.matches({}) for m in matchers):
        raise SilenceError("these matchers match every alert (even one with no labels); name a label value "
                           "that selects the alerts to silence")
    return matchers


def create_silence(store, matchers: list[str], *, author: str, comment: str, now: datetime,
                   duration_s: float | None = None, ends_at: datetime | None = None,
                   starts_at: datetime | None = None) -> Silence:
    if not author.strip():
        raise SilenceError("a silence needs an author (--author NAME)")
    if not comment.strip():
        raise SilenceError("a silence needs a comment saying why (--comment TEXT)")
    parsed = parse_matchers(matchers)
    start = utc(starts_at) or now
    if ends_at is None:
        if not duration_s or duration_s <= 0:
            raise SilenceError("a silence needs a positive duration (--duration 2h) or an end time")
        ends_at = start + timedelta(seconds=duration_s)
    ends_at = utc(ends_at)
    if ends_at <= start:
        raise SilenceError(f"the silence would end ({ends_at:%Y-%m-%d %H:%M}Z) before it starts ({start:%Y-%m-%d %H:%M}Z)")
    silence = Silence(uuid.uuid4().hex[:12], parsed, start, ends_at, author.strip(), comment.strip(), now)
    _write(store, silence)
    return silence


def expire_silence(store, silence_id: str, *, now: datetime, author: str = "") -> Silence:
    found = [s for s in list_silences(store, now, include_expired=True) if s.id == silence_id]
    if not found:
        raise SilenceError(f"no silence with id {silence_id!r}; `gpuledger alerts silence list --all` shows them")
    silence = found[0]
    if silence.ends_at <= now:
        raise SilenceError(f"silence {silence_id} already expired at {silence.ends_at:%Y-%m-%d %H:%M:%S}Z")
    expired = Silence(silence.id, silence.matchers, min(silence.starts_at, now), now, silence.created_by,
                      silence.comment, silence.created_at, author or silence.created_by)
    _write(store, expired)
    return expired


def list_silences(store, now: datetime, include_expired: bool = False) -> list[Silence]:
    rows = store.rows(f"SELECT {', '.join(COLUMNS)} FROM alert_silences FINAL "
                      + ("" if include_expired else "WHERE ends_at > {now:DateTime64(3, 'UTC')} ")
                      + "ORDER BY starts_at, id",
                      {"now": now.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]})
    out = []
    for sid, matchers, starts, ends, by, comment, created, updated_by in rows:
        out.append(Silence(sid, tuple(_matcher(m) for m in matchers), utc(starts), utc(ends), by, comment,
                           utc(created), updated_by))
    return out


def _matcher(raw) -> Matcher:
    if isinstance(raw, dict):      # named tuples come back as dicts
        return Matcher(raw["name"], raw["op"], raw["value"])
    return Matcher(*raw)


def silenced_by(labels: dict[str, str], silences: list[Silence], now: datetime) -> str | None:
    """Id of the first active silence matching ``labels``, or None."""
    for s in silences:
        if s.active(now) and s.matches(labels):
            return s.id
    return None


def _write(store, s: Silence) -> None:
    row = [s.id, [(m.name, m.op, m.value) for m in s.matchers], s.starts_at, s.ends_at, s.created_by, s.comment,
           s.created_at, s.updated_by, version()]
    store.insert("alert_silences", [row], COLUMNS + ["version"])
