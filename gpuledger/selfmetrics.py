"""The platform's own metrics: ``GET /metrics`` of ``gpuledger up`` (Prometheus text format).

One ``SelfMetrics`` per ``Platform`` (``platform.metrics``), on a registry of its own (never
prometheus_client's global one: several platforms may live in one process). The parts that see
the events are handed this object and call its methods where they happen (one way for all):

* ``ingested(path, received, stored, problems, ...)`` — the receiver (``batch``, ``remote_write``),
  the scrape jobs (``scrape``) and the sample files loaded through the platform (``file``);
* ``rollup_run`` — the ``rollup`` job wraps each derivation run in it;
* ``alert_round(seconds, firing)`` — the alerts job, after each round;
* ``billing_loaded(source, quarantined)`` — the billing pull (per source) and ``ingest billing``
  run through the platform (source ``cli``).

What the store knows is read when Prometheus scrapes (``StoreCollector``): bytes per table
(``system.parts``), the store's disk, notifications sent and failed per channel (from
``alert_delivery_attempts``) and the oldest undelivered one (``alert_notifications``).
The names are a contract with the alerting rules (deploy/prometheus/): do not rename them.
"""
from __future__ import annotations

import logging
import shutil
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone

from flask import Response, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    gc_collector,
    generate_latest,
    platform_collector,
    process_collector,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from base.errors import first_line
from base.settings import bearer_matches
from base.sqlfiles import sql
from base.version import version
from ingest.writer import PROBLEM_KINDS

log = logging.getLogger(__name__)

PATH = "/metrics"
PATHS = ("batch", "remote_write", "scrape", "file")
REASONS = PROBLEM_KINDS
QUIET_MINUTES = 15
DURATION_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)


def refusal_reason(problem) -> str:
    """The bounded reason label of a refused row (an ``ingest.writer.RowProblem``: its kind)."""
    return problem.kind if problem.kind in REASONS else "other"


class SelfMetrics:
    def __init__(self, store=None, config=None, clock=time.time):
        self.store, self.config, self.clock = store, config, clock
        self.registry = r = CollectorRegistry()
        process_collector.ProcessCollector(registry=r)
        platform_collector.PlatformCollector(registry=r)
        gc_collector.GCCollector(registry=r)
        self.rows_received = Counter("gpuledger_ingest_rows_received", "Rows received, per ingest path.",
                                     ["path"], registry=r)
        self.rows_stored = Counter("gpuledger_ingest_rows_stored", "Rows stored, per ingest path.", ["path"], registry=r)
        self.rows_refused = Counter("gpuledger_ingest_rows_refused", "Rows refused, per ingest path and reason.",
                                    ["path", "reason"], registry=r)
        for path in PATHS:
            self.rows_received.labels(path)
            self.rows_stored.labels(path)
        self.rollup_runs = Counter("gpuledger_rollup_runs", "Derivation runs finished (ok or failed).", registry=r)
        self.rollup_failures = Counter("gpuledger_rollup_failures", "Derivation runs that failed.", registry=r)
        self.rollup_duration = Histogram("gpuledger_rollup_duration_seconds", "Duration of a derivation run.",
                                         buckets=DURATION_BUCKETS, registry=r)
        self.rollup_last_success = Gauge("gpuledger_rollup_last_success_timestamp_seconds",
                                         "End time of the last successful derivation run.", registry=r)
        self.rollup_pending_dates = Gauge("gpuledger_rollup_pending_dates",
                                         "Days whose inputs had changed since they were derived, as the last "
                                         "derivation run found them.", registry=r)
        self.alert_rounds = Counter("gpuledger_alert_rounds", "Alert evaluation rounds.", registry=r)
        self.alert_round_duration = Histogram("gpuledger_alert_round_duration_seconds", "Duration of an alert round.",
                                              buckets=DURATION_BUCKETS, registry=r)
        self.alerts_firing = Gauge("gpuledger_alerts_firing", "Alerts firing after the last round.", registry=r)
        self.billing_last_success = Gauge("gpuledger_billing_last_success_timestamp_seconds",
                                          "Last successful billing pull or load, per source.", ["source"], registry=r)
        self.billing_quarantined = Counter("gpuledger_billing_rows_quarantined", "Billing rows quarantined, per source.",
                                           ["source"], registry=r)
        Gauge("gpuledger_build_info", "The running version of gpuledger.", ["version"], registry=r).labels(version()).set(1)
        self._sources: dict[tuple[str, str], list] = {}      # (source, name) -> [newest sample ts, last heard]
        self._lock = threading.Lock()
        r.register(_SourcesCollector(self))
        if store is not None:
            r.register(StoreCollector(self))

    # ---- events ---------------------------------------------------------------------------
    def ingested(self, path: str, received: int, stored: int, problems=(), *, source: str | None = None,
                 name: str | None = None, newest: datetime | None = None) -> None:
        """A request, scrape or file of ``path``: rows received, stored, and the refused rows' problems."""
        self.rows_received.labels(path).inc(received)
        self.rows_stored.labels(path).inc(stored)
        for problem in problems:
            self.rows_refused.labels(path, refusal_reason(problem)).inc()
        if source and name is not None:
            self.heard(source, name, newest)

    def refused(self, path: str, rows: int, reason: str = "other") -> None:
        """``rows`` of a request refused as a whole (the store refused it)."""
        self.rows_refused.labels(path, reason if reason in REASONS else "other").inc(rows)

    def expect(self, source: str, name: str) -> None:
        """A sender that should be heard from (a configured scrape target): quiet until it is."""
        with self._lock:
            self._sources.setdefault((source, name), [None, self.clock()])

    def heard(self, source: str, name: str, newest: datetime | None) -> None:
        ts = newest.timestamp() if newest is not None else None
        with self._lock:
            entry = self._sources.setdefault((source, name), [None, 0.0])
            entry[1] = self.clock()
            if ts is not None and (entry[0] is None or ts > entry[0]):
                entry[0] = ts

    @contextmanager
    def rollup_run(self):
        """Around one derivation run: yields a dict where the run puts ``days`` (the days it found changed)."""
        seen: dict = {}
        started = time.perf_counter()
        try:
            yield seen
        except BaseException:
            self.rollup_failures.inc()
            raise
        else:
            self.rollup_last_success.set(self.clock())
            if "days" in seen:
                self.rollup_pending_dates.set(seen["days"])
        finally:
            self.rollup_runs.inc()
            self.rollup_duration.observe(time.perf_counter() - started)

    def alert_round(self, seconds: float, firing: int) -> None:
        self.alert_rounds.inc()
        self.alert_round_duration.observe(seconds)
        self.alerts_firing.set(firing)

    def billing_loaded(self, source: str, quarantined: int) -> None:
        self.billing_last_success.labels(source).set(self.clock())
        if quarantined:
            self.billing_quarantined.labels(source).inc(quarantined)
        else:
            self.billing_quarantined.labels(source)

    # ---- serving --------------------------------------------------------------------------
    def text(self) -> bytes:
        return generate_latest(self.registry)


class _SourcesCollector:
    """gpuledger_ingest_last_sample_timestamp_seconds and gpuledger_ingest_sources_quiet, at scrape time."""

    def __init__(self, metrics: SelfMetrics):
        self.metrics = metrics

    def describe(self):
        return []

    def collect(self):
        m = self.metrics
        receiver = getattr(m.config, "receiver", None)
        quiet_s = 60 * float(getattr(receiver, "quiet_minutes", QUIET_MINUTES) or QUIET_MINUTES)
        last = GaugeMetricFamily("gpuledger_ingest_last_sample_timestamp_seconds",
                                 "Newest sample time received per agent (source=agent, name=its host) or "
                                 "scrape target (source=scrape, name=the target's name).", labels=["source", "name"])
        quiet = GaugeMetricFamily("gpuledger_ingest_sources_quiet",
                                  f"Agents / scrape targets that sent nothing for over {quiet_s / 60:g} minutes.",
                                  labels=["source"])
        now = m.clock()
        counts = {"agent": 0, "scrape": 0}
        with m._lock:
            sources = {k: list(v) for k, v in m._sources.items()}
        for (source, name), (newest, heard) in sorted(sources.items()):
            if newest is not None:
                last.add_metric([source, name], newest)
            counts[source] = counts.get(source, 0) + (now - heard > quiet_s)
        for source, n in sorted(counts.items()):
            quiet.add_metric([source], n)
        yield last
        yield quiet


class StoreCollector:
    """What the store knows, read at scrape time: table bytes, its disk, notification delivery.
    A query that fails leaves its series out of this scrape (logged once per outage)."""

    def __init__(self, metrics: SelfMetrics):
        self.metrics = metrics
        self._failing: set[str] = set()

    def describe(self):
        return []

    def collect(self):
        store = self.metrics.store
        yield from self._guarded("tables", lambda: self._tables(store))
        yield from self._guarded("disk", lambda: self._disk(store))
        yield from self._guarded("notifications", lambda: self._notifications(store))

    def _guarded(self, what: str, make):
        try:
            families = list(make())
        except Exception as exc:      # a scrape must answer even when the store does not
            if what not in self._failing:
                self._failing.add(what)
                log.warning("/metrics: cannot read the store's %s: %s", what, first_line(exc))
            return []
        self._failing.discard(what)
        return families

    def _tables(self, store):
        family = GaugeMetricFamily("gpuledger_store_table_bytes", "Bytes on disk per table (active parts).",
                                   labels=["table"])
        for table, size in store.rows(sql("store/table_bytes")):
            family.add_metric([table], float(size))
        yield family

    def _disk(self, store):
        if store.target.embedded:
            usage = shutil.disk_usage(store.target.path)
            free, total = usage.free, usage.total
        else:
            row = store.rows(sql("store/disk_space"), {"disk": "default"})
            if not row:
                return
            free, total = row[0]
        yield GaugeMetricFamily("gpuledger_store_disk_free_bytes", "Free bytes on the store's disk.", value=float(free))
        yield GaugeMetricFamily("gpuledger_store_disk_total_bytes", "Total bytes of the store's disk.", value=float(total))

    def _notifications(self, store):
        sent = CounterMetricFamily("gpuledger_notifications_sent", "Notifications delivered, per channel.",
                                   labels=["channel"])
        failed = CounterMetricFamily("gpuledger_notifications_failed", "Delivery attempts that failed, per channel.",
                                     labels=["channel"])
        alerts = getattr(self.metrics.config, "alerts", None)
        counts = {c.name: (0, 0) for c in getattr(alerts, "channels", None) or []}
        for channel, ok, bad in store.rows(sql("store/notification_attempts")):
            counts[channel] = (int(ok), int(bad))
        for channel, (ok, bad) in sorted(counts.items()):
            sent.add_metric([channel], ok)
            failed.add_metric([channel], bad)
        yield sent
        yield failed
        oldest = store.rows(sql("store/oldest_undelivered"))
        age = 0.0
        if oldest and oldest[0][0] is not None:
            created = oldest[0][0]
            created = created if created.tzinfo else created.replace(tzinfo=timezone.utc)
            age = max(0.0, self.metrics.clock() - created.timestamp())
        yield GaugeMetricFamily("gpuledger_notification_oldest_undelivered_age_seconds",
                                "Age of the oldest notification not yet delivered (0 when none).", value=age)


def install(platform, *, auth: bool = True) -> None:
    """Serve ``GET /metrics`` on ``platform.web``. With ``auth`` on and ``receiver.token``
    configured, it needs ``Authorization: Bearer <token>``; with no token it is open only while
    the platform listens on loopback (``--no-auth`` opens it)."""
    from gpuledger.platform import is_loopback

    metrics = platform.metrics
    receiver = getattr(platform.config, "receiver", None)
    secret = getattr(receiver, "token", None)

    def allowed() -> bool:
        if not auth:
            return True
        token = secret.get() if secret else ""
        if not token:
            return is_loopback(getattr(platform, "host", "") or "")
        return bearer_matches(request.headers.get("Authorization"), token)

    def serve():
        if not allowed():
            return Response("a valid 'Authorization: Bearer <receiver.token>' is required\n", 401,
                            {"WWW-Authenticate": 'Bearer realm="gpuledger"'}, content_type="text/plain")
        return Response(metrics.text(), content_type=CONTENT_TYPE_LATEST)

    platform.web.add_url_rule(PATH, "metrics", serve)
    access = "token required" if secret else ("open (--no-auth)" if not auth else "open on loopback only")
    platform.add_part("metrics", f"GET {PATH} (Prometheus); {access}")
