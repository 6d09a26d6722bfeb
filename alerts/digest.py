"""Each team's waste digest: what its GPUs wasted in the last day or week, through its channel.

Idle windows that have ended page nobody (``gpu_idle_window`` fires for open ones); their cost,
and the rest of the waste, goes into a periodic digest per team (``[alerts.digest]``, see
docs/alerts.md "Waste digest"):

* **period**: ``daily``, the previous UTC day [D-1, D); ``weekly``, the previous Monday to Sunday.
  A round reports on the period just before the one it is in, from ``at_hour_utc`` on (weekly:
  from that hour on ``weekday``). The first round at or after that time sends it; a later round
  in the same day (week) sends it when it is not yet recorded — a catch-up after downtime;
* **content** (``sql/alerts/digest/``): waste by part (idle allocated, idle unallocated, unused;
  no-data cost apart, never waste) and efficiency, the trend of waste against the period before,
  the ``top_windows`` costliest idle windows that overlapped the period with their owner, GPU and
  dashboard link, and what to do;
* **recipients**: every ``[[teams]]`` entry whose ``contact`` names a channel; Alertmanager
  channels take alerts, not reports, and are skipped. A team with no spend in either period gets
  nothing (and nothing is recorded, so data that arrives later is still reported);
* **once**: the notification's key is derived from channel, team and period, and a key already
  in the outbox (``alert_notifications``, whatever its status) is never enqueued again, so neither
  a later round nor a restart sends a period's digest twice. Delivery is the outbox's: retried
  with backoff, every attempt recorded.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from urllib.parse import urlencode

from alerts import outbox
from alerts.config import WEEKDAYS, DigestConfig
from alerts.delivery.retry import DeliveryReport
from alerts.grouping import alert_url, iso_ms
from alerts.notification import Notification
from base.sqlfiles import sql

log = logging.getLogger(__name__)

KIND = "digest"                                  # the outbox's kind (status) of a digest


# --- the period ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Period:
    every: str                                   # daily | weekly
    start: date
    end: date                                    # exclusive

    def previous(self) -> Period:
        return Period(self.every, self.start - (self.end - self.start), self.start)

    @property
    def name(self) -> str:
        """``on 2026-03-19`` or ``in the week of 2026-03-09 to 2026-03-15``."""
        if self.every == "daily":
            return f"on {self.start}"
        return f"in the week of {self.start} to {self.end - timedelta(days=1)}"

    @property
    def before(self) -> str:
        return "the day before" if self.every == "daily" else "the week before"


def period_at(cfg: DigestConfig, now: datetime) -> tuple[Period, datetime]:
    """The period a round at ``now`` reports on, and when its digest is due."""
    today = now.astimezone(timezone.utc).date()
    if cfg.every == "daily":
        period, send_day = Period("daily", today - timedelta(days=1), today), today
    else:
        monday = today - timedelta(days=today.weekday())
        period = Period("weekly", monday - timedelta(days=7), monday)
        send_day = monday + timedelta(days=WEEKDAYS.index(cfg.weekday))
    return period, datetime.combine(send_day, time(cfg.at_hour_utc), timezone.utc)


def due_period(cfg: DigestConfig, now: datetime) -> Period | None:
    """The period whose digest is due at ``now``; None before its time."""
    period, due = period_at(cfg, now)
    return period if now >= due else None


def digest_key(channel: str, team: str, period: Period) -> str:
    """The idempotency key of a digest: the same for the same channel, team and period, so a
    restart or a later round finds it recorded."""
    parts = [KIND, channel, team, period.every, period.start.isoformat()]
    return "digest-" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


# --- the figures -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Waste:
    """A team's waste in one period: the columns of sql/alerts/digest/waste.sql."""

    spend_usd: float = 0.0
    idle_allocated_usd: float = 0.0
    idle_unallocated_usd: float = 0.0
    unused_usd: float = 0.0
    no_data_usd: float = 0.0
    gpu_hours: float = 0.0

    @property
    def waste_usd(self) -> float:
        return self.idle_allocated_usd + self.idle_unallocated_usd + self.unused_usd

    @property
    def efficiency_pct(self) -> float | None:
        return 100 * (1 - self.waste_usd / self.spend_usd) if self.spend_usd > 0 else None


@dataclass(frozen=True)
class IdleWindow:
    """One idle window: the columns of sql/alerts/digest/top_windows.sql."""

    kind: str                                    # allocated | unallocated
    user: str
    job_id: str
    k8s_namespace: str
    k8s_pod: str
    slurm_account: str
    environment: str
    host: str
    gpu_uuid: str
    mig_instance: str
    model: str
    start: datetime
    end: datetime
    duration_s: float
    cost_usd: float

    def whose(self) -> str:
        """``job 81 of user ana (pod ml/train-0)``; ``nothing allocated`` for an unallocated window."""
        if self.kind != "allocated":
            return "nothing allocated"
        held = f"job {self.job_id}" if self.job_id else ""
        if self.user:
            held = f"{held} of user {self.user}" if held else f"user {self.user}"
        where = f"pod {self.k8s_namespace}/{self.k8s_pod}" if self.k8s_pod else \
            f"namespace {self.k8s_namespace}" if self.k8s_namespace else \
            f"Slurm account {self.slurm_account}" if self.slurm_account else ""
        if held and where:
            return f"{held} ({where})"
        return held or where or "an unknown owner"

    def gpu(self) -> str:
        """``host h1 GPU GPU-1a2b MIG 3 (A100)``."""
        mig = f" MIG {self.mig_instance}" if self.mig_instance else ""
        model = f" ({self.model})" if self.model else ""
        return f"host {self.host} GPU {self.gpu_uuid}{mig}{model}"

    def url(self, base_url: str, team: str) -> str:
        """The Idle & waste page focused on this window's GPU entity and start."""
        labels = {"team": team, "environment": self.environment, "gpu_uuid": self.gpu_uuid,
                  "mig_instance": self.mig_instance, "window_start": self.start.strftime("%Y-%m-%dT%H:%M:%SZ")}
        return alert_url(base_url, "idle", labels, {"window_end": self.end.strftime("%Y-%m-%dT%H:%M:%SZ")})


def money(usd: float, cents: bool = True) -> str:
    """``$1,234.50``; without ``cents``, whole dollars from $100 on (``$1,235``)."""
    return f"${usd:,.2f}" if cents or abs(usd) < 100 else f"${usd:,.0f}"


def hours(seconds: float) -> str:
    """``7.0 h``, or ``45 min`` under an hour: a window's length as the digest lists it."""
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


# --- the digest ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Digest:
    team: str
    channel: str
    period: Period
    waste: Waste
    before: Waste                                # the period before
    windows: tuple[IdleWindow, ...] = ()

    @property
    def key(self) -> str:
        return digest_key(self.channel, self.team, self.period)

    @property
    def change_usd(self) -> float:
        return self.waste.waste_usd - self.before.waste_usd

    @property
    def change_pct(self) -> float | None:
        """Change in waste against the period before, in %; None when there was none before."""
        return 100 * self.change_usd / self.before.waste_usd if self.before.waste_usd > 0 else None

    def trend(self) -> str:
        """``▲ 12% vs the day before``."""
        if self.change_pct is None:
            return f"none {self.period.before}" + (" either" if self.waste.waste_usd <= 0 else "")
        arrow = "▲" if self.change_usd > 0 else "▼" if self.change_usd < 0 else "="
        return f"{arrow} {abs(self.change_pct):.0f}% vs {self.period.before}"

    def subject(self) -> str:
        return (f"gpuledger {self.period.every} digest · team {self.team} · "
                f"{money(self.waste.waste_usd, cents=False)} wasted {self.period.name} ({self.trend()})")

    def lines(self, base_url: str) -> list[str]:
        w, b = self.waste, self.before
        out = [f"Team {self.team} {self.period.name} (UTC): {money(w.waste_usd)} wasted of {money(w.spend_usd)} "
               f"GPU spend ({w.gpu_hours:,.1f} GPU-hours with data), efficiency {_pct(w.efficiency_pct)}.",
               "",
               "Waste by part:",
               f"  idle, allocated (held by a job or process, unused): {money(w.idle_allocated_usd)}",
               f"  idle, unallocated (held by nothing): {money(w.idle_unallocated_usd)}",
               f"  unused (busy GPUs below full use): {money(w.unused_usd)}",
               f"  total waste: {money(w.waste_usd)}",
               f"  no data (not counted as waste): {money(w.no_data_usd)}",
               "",
               f"Trend: waste {_signed(self.change_usd)}"
               + (f" ({self.change_pct:+.1f}%)" if self.change_pct is not None else "")
               + f" vs {self.period.before}: {money(b.waste_usd)} wasted of {money(b.spend_usd)}, "
                 f"efficiency {_pct(b.efficiency_pct)}."]
        if self.windows:
            out += ["", f"Top {len(self.windows)} idle window(s) (the whole window's length and cost):"]
            start, end = (datetime.combine(d, time(), timezone.utc) for d in (self.period.start, self.period.end))
            for i, win in enumerate(self.windows, 1):
                edge = " (began before the period)" if win.start < start else ""
                edge += " (went on after it)" if win.end > end else ""
                out += [f"  {i}. {win.start:%Y-%m-%d %H:%M} UTC, {hours(win.duration_s)}, {money(win.cost_usd)}: "
                        f"{win.whose()} on {win.gpu()}{edge}",
                        f"     {win.url(base_url, self.team)}"]
        advice = self.advice()
        if advice:
            out += ["", "What to do: " + advice]
        out += ["", f"Idle & waste for the period: {self.page_url(base_url)}"]
        return out

    def advice(self) -> str:
        w, tips = self.waste, []
        if self.windows:
            top = self.windows[0]
            gpu = f"{top.model or 'GPU'} on {top.host}"
            if top.kind == "allocated":
                tips.append(f"the top window: {top.whose()} held an idle {gpu} for {hours(top.duration_s)} "
                            f"({money(top.cost_usd)}): stop idle jobs or release GPUs they do not use.")
            else:
                tips.append(f"the top window: an {gpu} sat idle with nothing allocated for {hours(top.duration_s)} "
                            f"({money(top.cost_usd)}): scale the pool down or give its GPUs to a queue.")
        if w.unused_usd > 0 and w.unused_usd >= w.idle_allocated_usd + w.idle_unallocated_usd:
            tips.append(f"unused capacity ({money(w.unused_usd)}) is the larger part: jobs ran well below full use "
                        "of their GPUs; right-size them (smaller GPUs, MIG slices) or pack more work per GPU.")
        return " ".join(tips)

    def page_url(self, base_url: str) -> str:
        query = {"team": self.team, "from": self.period.start.isoformat(),
                 "to": (self.period.end - timedelta(days=1)).isoformat()}
        return f"{base_url.rstrip('/')}/idle?{urlencode(query)}"

    def figures(self) -> dict:
        """The digest's numbers, kept with the notification (``extra["digest"]``)."""
        return {"team": self.team, "every": self.period.every, "start": self.period.start.isoformat(),
                "end": self.period.end.isoformat(), "spend_usd": self.waste.spend_usd,
                "idle_allocated_usd": self.waste.idle_allocated_usd,
                "idle_unallocated_usd": self.waste.idle_unallocated_usd, "unused_usd": self.waste.unused_usd,
                "waste_usd": self.waste.waste_usd, "efficiency_pct": self.waste.efficiency_pct,
                "no_data_usd": self.waste.no_data_usd, "before_spend_usd": self.before.spend_usd,
                "before_waste_usd": self.before.waste_usd, "change_usd": self.change_usd,
                "change_pct": self.change_pct,
                "windows": [{"start": w.start.isoformat(), "host": w.host, "gpu_uuid": w.gpu_uuid,
                             "mig_instance": w.mig_instance, "cost_usd": w.cost_usd} for w in self.windows]}

    def notification(self, now: datetime, base_url: str) -> Notification:
        return Notification(
            key=self.key, channel=self.channel, group_key=f"digest:{self.team}", group_labels={"team": self.team},
            status=KIND, alerts=(), created_at=iso_ms(now), subject=self.subject(),
            body=tuple(self.lines(base_url)), extra={"digest": self.figures(), "url": self.page_url(base_url)})


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _signed(usd: float) -> str:
    return ("+" if usd > 0 else "-" if usd < 0 else "±") + money(abs(usd))


# --- reading and sending ---------------------------------------------------------------------

def _bounds(period: Period, team: str) -> dict:
    return {"team": team, "start": f"{period.start} 00:00:00", "end": f"{period.end} 00:00:00"}


def team_waste(store, team: str, period: Period) -> Waste:
    row = store.rows(sql("alerts/digest/waste"), _bounds(period, team))[0]
    return Waste(*(float(v or 0.0) for v in row))


def top_windows(store, team: str, period: Period, limit: int) -> tuple[IdleWindow, ...]:
    rows = store.rows(sql("alerts/digest/top_windows"), {**_bounds(period, team), "limit": limit})
    return tuple(IdleWindow(*row[:11], _utc(row[11]), _utc(row[12]), float(row[13]), float(row[14])) for row in rows)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def build_digest(store, team: str, channel: str, period: Period, top: int) -> Digest:
    return Digest(team, channel, period, team_waste(store, team, period), team_waste(store, team, period.previous()),
                  top_windows(store, team, period, top))


@dataclass
class DigestReport:
    period: Period | None                                    # None: no digest is due yet
    enqueued: list[Notification] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)   # team -> why it got none this round
    delivery: DeliveryReport | None = None


def send_digests(store, cfg, engine, now: datetime) -> DigestReport:
    """Record and send every team's digest that is due at ``now`` and not yet recorded.

    ``cfg`` is the platform's config (``alerts``, ``teams``); ``engine`` gives the channels and
    delivers (``Engine.deliver``)."""
    dcfg: DigestConfig = cfg.alerts.digest
    report = DigestReport(due_period(dcfg, now))
    period = report.period
    if period is None or not dcfg.enabled:
        return report
    wanted: dict[str, str] = {}
    for team in cfg.teams:
        channel = engine.channels.get(team.contact) if team.contact else None
        if channel is None:
            report.skipped[team.name] = f"no contact channel ({team.contact!r})" if team.contact else "no contact"
        elif channel.type == "alertmanager":
            report.skipped[team.name] = f"channel {team.contact} is an Alertmanager (alerts, not reports)"
            log.info("waste digest for team %s skipped: its contact %s is an Alertmanager, which takes alerts, "
                     "not reports", team.name, team.contact)
        else:
            wanted[team.name] = team.contact
    keys = {name: digest_key(channel, name, period) for name, channel in wanted.items()}
    recorded = {r[0] for r in store.rows(sql("alerts/digest/recorded"), {"keys": list(keys.values())})} if keys else set()
    for name, channel in wanted.items():
        if keys[name] in recorded:
            report.skipped[name] = "already recorded"
            continue
        digest = build_digest(store, name, channel, period, dcfg.top_windows)
        if digest.waste.spend_usd <= 0 and digest.before.spend_usd <= 0:
            report.skipped[name] = "no spend in either period"
            continue
        report.enqueued.append(digest.notification(now, cfg.alerts.base_url))
    if report.enqueued:
        outbox.enqueue(store, report.enqueued, now)
        log.info("waste digest %s: %d recorded (%s)", period.name, len(report.enqueued),
                 ", ".join(n.group_labels["team"] for n in report.enqueued))
        report.delivery = engine.deliver(only=sorted({n.channel for n in report.enqueued}))
    return report
