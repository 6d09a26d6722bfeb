"""Sending spooled batches, oldest first, to where they are stored.

A destination is anything with ``send(batch)`` that returns once the batch is stored and
raises :class:`Unavailable` when it cannot tell (retry later) or
``collector.batches.BatchRejected`` when the data will never be accepted:

* ``ingest.writer.StoreDestination`` inserts into a ClickHouse server (``--store http://...``),
  the batch id as ``insert_deduplication_token``;
* :class:`PushDestination` POSTs the batch to a platform's ``/api/v1/ingest/batch``
  (``--push-url``), which inserts it the same way into its own store (embedded or server).
  Every push says ``User-Agent: gpuledger-collect/<version>``; the platform answers with its own
  in ``X-Gpuledger-Version``, and when its major.minor differs from the agent's, one warning is
  logged (again only when the platform's version changes), and batches are still sent.

:class:`Shipper` runs in a thread: it sends what the spool holds, acknowledges each batch
once sent, and while the destination is down retries with exponential backoff (1 s .. 60 s),
logging the outage once when it starts and once when it ends.
"""
from __future__ import annotations

import gzip
import http.client
import logging
import threading
import time
import urllib.error
import urllib.request

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from base.errors import BatchRejected, Unavailable
from base.version import VERSION_HEADER, major_minor, user_agent
from base.version import version as installed_version
from collector.batches import BATCH_PATH, Batch

log = logging.getLogger(__name__)


class PushDestination:
    """POST batches (gzip JSON, optional bearer token) to a platform's batch endpoint.

    ``version`` is the one this agent announces (default: the installed package's);
    ``platform_version`` is the platform's, from its last answer that carried one."""

    def __init__(self, base_url: str, token: str | None = None, timeout_s: float = 30.0,
                 version: str | None = None):
        self.url = base_url.rstrip("/") + BATCH_PATH
        self._token, self._timeout = token, timeout_s
        self.version = version or installed_version()
        self.platform_version: str | None = None

    def send(self, batch: Batch) -> None:
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip",
                   "User-Agent": user_agent(self.version)}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        request = urllib.request.Request(self.url, data=gzip.compress(batch.to_json(), 1),
                                         headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                self._heard(response.headers.get(VERSION_HEADER))
                response.read()
        except urllib.error.HTTPError as e:
            self._heard(e.headers.get(VERSION_HEADER) if e.headers else None)
            detail = e.read()[:300].decode("utf-8", "replace")
            if e.code in (400, 413, 422):
                raise BatchRejected(f"{self.url} refused batch {batch.id}: {e.code} {detail}") from e
            raise Unavailable(f"{self.url} answered {e.code}: {detail}"
                              + (" (check collector.push_token against receiver.token)"
                                 if e.code in (401, 403) else "")) from e
        except (OSError, ValueError, http.client.HTTPException) as e:
            # connection refused, reset, timeout, bad URL; an answer cut off (the platform killed mid-reply)
            raise Unavailable(f"{self.url}: {getattr(e, 'reason', e)}") from e

    def _heard(self, platform: str | None) -> None:
        """The platform's version from an answer: warn once per change to a major.minor not ours."""
        platform = "".join(ch for ch in (platform or "")[:64] if ch.isprintable()).strip()
        if not platform or platform == self.platform_version:
            return
        before, self.platform_version = self.platform_version, platform
        if before is not None and major_minor(before) == major_minor(platform):
            return
        if major_minor(platform) != major_minor(self.version):
            log.warning("the platform at %s runs gpuledger %s and this agent %s: their major.minor "
                        "versions differ; batches are still sent, but upgrade the older of the two "
                        "to the same release", self.url, platform, self.version)
        elif before is not None:
            log.info("the platform at %s now runs gpuledger %s, the same release as this agent",
                     self.url, platform)

    def __str__(self) -> str:
        return self.url


class Shipper:
    """Drains a spool into a destination; see the module docstring."""

    def __init__(self, spool, destination, min_backoff_s: float = 1.0, max_backoff_s: float = 60.0,
                 on_sent=None):
        self.spool, self.destination = spool, destination
        self.min_backoff_s, self.max_backoff_s = min_backoff_s, max_backoff_s
        self.on_sent = on_sent                   # called with each stored batch (tests, logs)
        self.sent_batches = self.sent_rows = self.rejected_batches = self.failures = 0
        self.last_success = 0.0
        self.down_since: float | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def ship(self, limit: int | None = None) -> int:
        """Send pending batches until the spool is empty (or ``limit``); raise Unavailable."""
        sent = 0
        while limit is None or sent < limit:
            batches = self.spool.peek(1)
            if not batches:
                break
            batch = batches[0]
            try:
                self.destination.send(batch)
            except BatchRejected as e:
                self.rejected_batches += 1
                log.error("%s; the batch (%d rows) is dropped from the spool", e, len(batch.rows))
            else:
                self.sent_batches += 1
                self.sent_rows += len(batch.rows)
                if self.on_sent:
                    self.on_sent(batch)
            self.spool.ack(batch.id)
            sent += 1
            self._up()
        return sent

    def wake(self) -> None:
        """New batches were spooled: send them now rather than at the next poll."""
        self._wake.set()

    def run(self, poll_s: float = 1.0) -> None:
        backoff = self.min_backoff_s
        while not self._stop.is_set():
            try:
                self.ship()
                backoff = self.min_backoff_s
                wait = poll_s
            except Unavailable as e:
                self.failures += 1
                self._down(e)
                wait, backoff = backoff, min(backoff * 2, self.max_backoff_s)
            except OSError as e:  # the spool's own disk (full, unreadable): keep going, retry later
                log.error("spool problem while sending: %s; retrying in %.0f s", e, backoff)
                wait, backoff = backoff, min(backoff * 2, self.max_backoff_s)
            self._wake.wait(wait)
            self._wake.clear()

    def start(self) -> Shipper:
        self._thread = threading.Thread(target=self.run, name="gpuledger-shipper", daemon=True)
        self._thread.start()
        return self

    def stop(self, drain_s: float = 5.0) -> None:
        """Stop the thread, first trying for up to ``drain_s`` to send what is pending."""
        deadline = time.monotonic() + drain_s
        while len(self.spool) and time.monotonic() < deadline and self.down_since is None:
            self.wake()
            time.sleep(0.05)
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=max(drain_s, 1.0) + 30)

    def _down(self, error: Exception) -> None:
        if self.down_since is None:
            self.down_since = time.time()
            log.warning("cannot send to %s (%s); batches wait in the spool (%d pending) and are "
                        "retried with backoff", self.destination, error, len(self.spool))

    def _up(self) -> None:
        self.last_success = time.time()
        if self.down_since is not None:
            log.info("%s is reachable again after %.0f s; sending the %d spooled batch(es)",
                     self.destination, time.time() - self.down_since, len(self.spool))
            self.down_since = None

    def collect(self):
        yield CounterMetricFamily("gpuledger_ship_batches", "Batches stored by the destination.",
                                  value=self.sent_batches)
        yield CounterMetricFamily("gpuledger_ship_rows", "Rows stored by the destination.",
                                  value=self.sent_rows)
        yield CounterMetricFamily("gpuledger_ship_rejected_batches",
                                  "Batches the store refused (bad data); dropped.",
                                  value=self.rejected_batches)
        yield CounterMetricFamily("gpuledger_ship_failures",
                                  "Send attempts that failed (destination unreachable).",
                                  value=self.failures)
        yield GaugeMetricFamily("gpuledger_ship_up", "1 when the last send succeeded.",
                                value=0 if self.down_since is not None else 1)
        yield GaugeMetricFamily("gpuledger_ship_last_success_timestamp_seconds",
                                "When a batch was last stored (Unix time).",
                                value=self.last_success)
