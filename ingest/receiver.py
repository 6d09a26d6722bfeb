"""HTTP endpoints of ``gpuledger up`` that receive telemetry pushed to it.

``POST /api/v1/write`` — Prometheus remote_write 1.0 (snappy-compressed protobuf). Point an
existing Prometheus at it::

    remote_write:
      - url: http://platform:8050/api/v1/write
        authorization: { credentials: <receiver.token> }      # when a token is configured

Series are mapped onto ``gpu_samples`` like a scrape of our agent or dcgm-exporter
(``collector.dcgm.GPULEDGER``); series without a GPU ``UUID`` label, NaN values (including
Prometheus' staleness markers) and GPUs without a ``Hostname`` label are skipped.

``POST /api/v1/ingest/batch`` — a batch (``collector.batches``; JSON, optionally
``Content-Encoding: gzip``) from ``gpuledger collect --push-url``; recorded under its id, so an
agent re-sending a batch after a crash stores it once.

Versions: every ingest answer carries ``X-Gpuledger-Version: <the platform's version>``. An
agent's batch sent with ``User-Agent: gpuledger-collect/<version>`` records that host (the
batch's ``host`` column) and version in ``agent_versions`` (:class:`AgentVersions`: only when
the version changes or an hour after the host's last write, never per batch; a failure to record
is logged and never fails the batch). Other senders (curl, scripts) record nothing.

Requests from many senders do not wait for each other's inserts: each is checked in its own
thread, then stored together with the others that arrived meanwhile, in one insert per table
(``ingest.group_commit``); each is answered once its own rows are stored, and each is stored
exactly once however often it is resent (a remote_write is recorded under its body's digest).

Values are checked against the column types before they are inserted
(``ingest.writer.split_valid``): a row (one GPU entity at one time) holding a value its column
cannot take — a negative byte count, an XID above 2^32-1, ``gpu="-1"``, a NaN time, a ``ts``
before 2000-01-01 or more than 1 day ahead of now, a label over 256 bytes or an id (GPU uuid,
pod, ...) over 2048 (``ingest.limits``) — is refused by itself, the other rows of the request are stored, and the answer is 400 with a JSON body
naming what was stored and refused (``stored``, ``refused``, ``problems``). Prometheus and the
agent drop a request answered 4xx instead of retrying it, which is right: its good part is
already stored, and its bad part would be refused again.

Credentials: with ``auth`` on (the default; ``gpuledger up --no-auth`` turns it off, as for the
dashboard) every request must carry ``Authorization: Bearer <receiver.token>``; with no token
configured, ingest is closed (401) rather than open to anyone.

Answers: 2xx stored; 400 malformed or refused data, good rows of it stored (do not retry); 401
missing or wrong bearer token; 413 body over ``receiver.max_body_mb``; 415 wrong encoding or
protocol version; 503 the store failed (retry later — Prometheus and the agent both do); when
an insert fails, every request stored in it gets 503.
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import threading
import time
import zlib
from datetime import datetime, timezone

from flask import jsonify, make_response, request

from base.errors import BatchError, BatchRejected, PartlyRefused, Refused, first_line
from base.settings import bearer_matches
from base.version import VERSION_HEADER, agent_version
from base.version import version as installed_version
from collector.batches import BATCH_PATH, Batch
from collector.dcgm import GPULEDGER
from collector.records import GPU_SAMPLE_COLUMNS, as_row
from collector.remote_write import PayloadTooLarge, RemoteWriteError, decode
from collector.sample_mapping import one_per_sample, samples_to_records
from ingest.group_commit import GroupCommit, Request
from ingest.telemetry_config import ReceiverConfig
from ingest.writer import RowProblem, is_data_error, split_valid

log = logging.getLogger(__name__)

WRITE_PATH = "/api/v1/write"
MAX_PROBLEMS = 20                  # refused rows named in one answer (all are counted)
AGENT_VERSIONS = "agent_versions"  # sql/migrations/012_agent_versions.sql


class AgentVersions:
    """Records which version each agent host runs in ``agent_versions``, cheaply: a map in
    memory says what was last written per host; a row is inserted only when a host's version
    changes or its last write is ``refresh_s`` old (so ``last_seen`` stays within that of the
    truth). A failed insert is logged and tried again after ``retry_s``; it never raises."""

    def __init__(self, store, clock=time.time, refresh_s: float = 3600.0, retry_s: float = 60.0):
        self.store, self.clock, self.refresh_s, self.retry_s = store, clock, refresh_s, retry_s
        self._due: dict[str, tuple[str, float]] = {}     # host -> (version written, next write due)
        self._lock = threading.Lock()
        self.writes = self.failures = 0

    def seen(self, host: str, version: str) -> None:
        now = self.clock()
        with self._lock:
            known = self._due.get(host)
            if known is not None and known[0] == version and now < known[1]:
                return
            self._due[host] = (version, now + self.refresh_s)    # other batches of this host: no write
        at = datetime.fromtimestamp(now, timezone.utc)
        try:
            self.store.insert(AGENT_VERSIONS, [(host, version, at, at)],
                              ("host", "version", "first_seen", "last_seen"))
            self.writes += 1
        except Exception as e:    # never the batch's problem: its rows are stored
            self.failures += 1
            with self._lock:
                self._due[host] = (version, now + self.retry_s)
            log.warning("receiver: could not record agent %s's version %s in %s (%s: %s); trying "
                        "again in %.0f s", host, version, AGENT_VERSIONS, type(e).__name__,
                        first_line(e), self.retry_s)


class Receiver:
    """The two endpoints' logic, independent of Flask's routing (``register`` mounts it)."""

    def __init__(self, store, config: ReceiverConfig | None = None, clock=time.time, *, auth: bool = True,
                 metrics=None, version: str | None = None):
        self.store, self.config, self.clock, self.auth = store, config or ReceiverConfig(), clock, auth
        self.metrics = metrics                 # the platform's (gpuledger.selfmetrics), or None
        self.version = version or installed_version()      # answered in X-Gpuledger-Version
        self.agents = AgentVersions(store, clock)
        self.max_bytes = int(self.config.max_body_mb * 1024 * 1024)
        self.mapping = GPULEDGER if self.config.host_labels is None else \
            dataclasses.replace(GPULEDGER, host_labels=tuple(self.config.host_labels))
        self.groups = GroupCommit(store)       # requests arriving together: one insert
        self.counts = {"remote_write_requests": 0, "remote_write_rows": 0, "batches": 0,
                       "batch_rows": 0, "refused": 0, "rows_refused": 0}

    # ---- request handling ------------------------------------------------------------
    def check_auth(self, header: str | None) -> None:
        token = self.config.token.get() if self.config.token else ""
        if not token:
            if self.auth:
                raise Refused(401, "ingest needs a bearer token and none is configured: set "
                                   "receiver.token (e.g. token = { env = \"GPULEDGER_INGEST_TOKEN\" }) "
                                   "and send 'Authorization: Bearer <token>', or run the local demo "
                                   "with --no-auth")
            return
        if not bearer_matches(header, token):
            raise Refused(401, "missing or wrong bearer token: send 'Authorization: Bearer "
                               "<token>' with the token configured as receiver.token")

    def read_body(self, content_length: int | None, stream) -> bytes:
        if content_length is not None and content_length > self.max_bytes:
            raise Refused(413, f"body of {content_length} bytes is over the receiver's "
                               f"{self.config.max_body_mb:g} MB limit (receiver.max_body_mb); "
                               "send smaller batches")
        body = stream.read(self.max_bytes + 1)
        if len(body) > self.max_bytes:
            raise Refused(413, f"body is over the receiver's {self.config.max_body_mb:g} MB "
                               "limit (receiver.max_body_mb); send smaller batches")
        if not body:
            raise Refused(400, "empty request body")
        return body

    def remote_write(self, body: bytes, content_type: str, encoding: str) -> int:
        """Store a remote_write body; return the rows stored."""
        if "proto=io.prometheus.write.v2" in content_type:
            raise Refused(415, "remote_write 2.0 is not supported; set "
                               "protobuf_message: prometheus.WriteRequest (1.0) on the sender")
        if encoding and encoding.lower() != "snappy":
            raise Refused(415, f"Content-Encoding {encoding!r}: remote_write bodies must be snappy")
        try:
            samples = decode(body, max_bytes=8 * self.max_bytes)
        except PayloadTooLarge as e:
            raise Refused(413, str(e)) from None
        except RemoteWriteError as e:
            raise Refused(400, str(e)) from None
        samples = [s for s in samples if not math.isnan(s.value)]
        defaults = {"host": ""}
        if self.config.environment:
            defaults["environment"] = self.config.environment
        received = datetime.fromtimestamp(self.clock(), timezone.utc)
        # one row per GPU entity and sample time: a round scraped twice is sent twice
        records = one_per_sample(samples_to_records(samples, self.mapping, received, defaults, "remote_write"))
        hostless = [r for r in records if not r.host]
        records = [r for r in records if r.host]
        self.counts["remote_write_requests"] += 1
        stored, problems = 0, []
        if records:
            rows = [as_row(r) for r in records]
            token = "rw:" + hashlib.sha256(body).hexdigest()
            stored, problems = self._insert(token, "gpu_samples", GPU_SAMPLE_COLUMNS, rows, received, "remote_write")
            self.counts["remote_write_rows"] += stored
        refused = [_series_of(records[p.row], p) for p in problems[:MAX_PROBLEMS]]
        if hostless:
            labels = ", ".join(filter(None, (*self.mapping.host_labels, self.mapping.identity_labels()[0], "instance")))
            refused.append(f"series of GPU {hostless[0].gpu_uuid[:80]} carry none of the labels {labels}, "
                           "so their host is unknown")
        if refused:
            self._partly_refused("a remote_write", stored, refused, len(problems) + len(hostless))
        return stored

    def batch(self, body: bytes, encoding: str, user_agent: str | None = None) -> Batch:
        """Store an agent's batch; return it. Sent by ``gpuledger collect`` (``user_agent``
        ``gpuledger-collect/<version>``), its host's version is recorded (``AgentVersions``)."""
        if encoding and encoding.lower() == "gzip":
            try:
                body = _gunzip(body, 8 * self.max_bytes)
            except (OSError, EOFError, zlib.error) as e:
                raise Refused(400, f"body is not valid gzip ({e})") from None
        elif encoding and encoding.lower() != "identity":
            raise Refused(415, f"Content-Encoding {encoding!r}: use gzip or none")
        try:
            batch = Batch.from_json(body)
        except BatchError as e:
            raise Refused(400, str(e)) from None
        now = datetime.fromtimestamp(self.clock(), timezone.utc)
        stored, problems = self._insert(batch.id, batch.table, batch.columns, batch.rows, now, "batch")
        self.counts["batches"] += 1
        self.counts["batch_rows"] += stored
        self._record_version(user_agent, batch, problems)
        if problems:
            self._partly_refused(f"batch {batch.id}", stored, [str(p) for p in problems[:MAX_PROBLEMS]], len(problems))
        return batch

    def _record_version(self, user_agent: str | None, batch: Batch, problems) -> None:
        announced = agent_version(user_agent)
        if announced is None:
            return
        try:
            agent = _agent_of(batch.columns, batch.rows, {p.row for p in problems})
            if agent is not None:
                self.agents.seen(agent[0], announced)
        except Exception:          # a bug here must not fail a stored batch
            log.exception("receiver: recording the version of batch %s's agent failed", batch.id)

    def _partly_refused(self, what: str, stored: int, described: list[str], refused: int) -> None:
        """Count ``refused`` rows and answer 400 naming the first ``described`` of them."""
        self.counts["rows_refused"] += refused
        raise PartlyRefused(what, stored, described, refused)

    def store_rows(self, id: str, table: str, columns, rows, now: datetime) -> tuple[int, list[RowProblem]]:
        """Store the rows that fit ``table`` as request ``id`` (once, however often it is sent),
        grouped with other senders' requests; return how many and what was refused."""
        items, problems = split_valid(self.groups.types(table), columns, rows, now)
        request = self.groups.store_request(Request(id, table, tuple(columns), items, problems))
        return request.stored, sorted(request.problems, key=lambda p: p.row)

    def _insert(self, id: str, table: str, columns, rows, now: datetime, path: str):
        """``store_rows``, counted in the platform's metrics under ``path`` (an agent's batch also
        as its host's newest sample time)."""
        try:
            stored, problems = self.store_rows(id, table, columns, rows, now)
        except BatchRejected as e:
            self._count_refused(path, len(rows), "other")
            raise Refused(400, str(e)) from None
        except Exception as e:
            if is_data_error(e):
                self._count_refused(path, len(rows), "constraint")
                raise Refused(400, f"the store refused the data: {first_line(e)}") from None
            if self.metrics is not None:
                self.metrics.ingested(path, len(rows), 0)
            log.warning("receiver: the store failed an insert (%s: %s); the sender will retry",
                        type(e).__name__, first_line(e))
            raise Refused(503, f"the store is not accepting writes right now ({first_line(e)}); "
                               "retry later") from None
        if self.metrics is not None:
            agent = _agent_of(columns, rows, {p.row for p in problems}) if path == "batch" else None
            host, newest = agent or (None, None)
            self.metrics.ingested(path, len(rows), stored, problems, source="agent" if agent else None,
                                  name=host, newest=newest)
        return stored, problems

    def _count_refused(self, path: str, rows: int, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.ingested(path, rows, 0)
            self.metrics.refused(path, rows, reason)

    # ---- Flask -----------------------------------------------------------------------
    def register(self, web) -> None:
        web.add_url_rule(WRITE_PATH, "ingest_remote_write", self._flask_write, methods=["POST"])
        web.add_url_rule(BATCH_PATH, "ingest_batch", self._flask_batch, methods=["POST"])

    def _flask_write(self):
        def handle():
            body = self._request_body()
            self.remote_write(body, request.headers.get("Content-Type", ""),
                              request.headers.get("Content-Encoding", ""))
            return "", 204
        return self._answer(handle)

    def _flask_batch(self):
        def handle():
            batch = self.batch(self._request_body(), request.headers.get("Content-Encoding", ""),
                               request.headers.get("User-Agent"))
            return jsonify({"id": batch.id, "stored": len(batch.rows)}), 200
        return self._answer(handle)

    def _request_body(self) -> bytes:
        self.check_auth(request.headers.get("Authorization"))
        return self.read_body(request.content_length, request.stream)

    def _answer(self, handle):
        """``handle()``'s response, or the one for the error it raised; either way with the
        platform's version in ``X-Gpuledger-Version``."""
        response = make_response(self._handle(handle))
        response.headers[VERSION_HEADER] = self.version
        return response

    def _handle(self, handle):
        try:
            return handle()
        except Refused as e:
            self.counts["refused"] += 1
            if e.status != 503:
                log.info("receiver: %s %s refused with %d: %s", request.method, request.path,
                         e.status, e)
            doc = {"error": str(e)}
            if isinstance(e, PartlyRefused):
                doc.update(stored=e.stored, refused=e.refused, problems=e.problems)
            response = jsonify(doc)
            response.status_code = e.status
            if e.status == 401:
                response.headers["WWW-Authenticate"] = 'Bearer realm="gpuledger"'
            return response


def _agent_of(columns, rows, refused: set[int]) -> tuple[str, datetime | None] | None:
    """(host, newest sample time) of an agent's batch: its stored rows' host and greatest ``ts``."""
    columns = list(columns)
    kept = [row for n, row in enumerate(rows) if n not in refused]
    if "host" not in columns or not kept:
        return None
    h = columns.index("host")
    host = next((row[h] for row in kept if isinstance(row[h], str) and row[h]), None)
    if host is None:
        return None
    t = columns.index("ts") if "ts" in columns else None
    times = [row[t] for row in kept if isinstance(row[t], datetime)] if t is not None else []
    newest = max((x if x.tzinfo else x.replace(tzinfo=timezone.utc) for x in times), default=None)
    return host[:256], newest


def _gunzip(body: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(body, limit + 1)
    if len(out) > limit:
        raise Refused(413, "gzip body decompresses past the receiver's limit")
    if not d.eof:
        raise EOFError("truncated gzip stream")
    return out


def _series_of(record, problem: RowProblem) -> str:
    return (f"host={_short(record.host)} gpu_uuid={_short(record.gpu_uuid)}"
            + (f" mig_instance={_short(record.mig_instance)}" if record.mig_instance else "")
            + f" at {record.ts.isoformat()}: " + (f"{problem.column}: " if problem.column else "")
            + problem.reason)


def _short(text: str, keep: int = 80) -> str:
    """A label value for a message: a refused one may be megabytes long."""
    return text if len(text) <= keep else f"{text[:keep]}...({len(text):,} characters)"


def register_receiver(platform, store, config: ReceiverConfig | None = None, *,
                      auth: bool = True) -> Receiver | None:
    """Mount the receiver on ``platform.web`` (unless ``receiver.enabled = false``). With ``auth``
    (off only with ``--no-auth``) requests need ``receiver.token``; with none configured, none
    is accepted. Its counts show in /healthz under the part ``receiver``."""
    config = config or ReceiverConfig()
    if not config.enabled:
        return None
    receiver = Receiver(store, config, auth=auth, metrics=getattr(platform, "metrics", None))
    receiver.register(platform.web)
    access = "token required" if config.token else ("closed: no token configured" if auth else "open (--no-auth)")
    platform.add_part("receiver", f"POST {WRITE_PATH} (remote_write), POST {BATCH_PATH} (agents); {access}")
    platform.parts["receiver"]["counts"] = receiver.counts
    if config.token:
        log.info("receiving remote_write on %s and agent batches on %s", WRITE_PATH, BATCH_PATH)
    elif auth:
        log.warning("ingest is closed: no receiver.token is configured, so every POST to %s and %s "
                    "is refused with 401 (set receiver.token)", WRITE_PATH, BATCH_PATH)
    else:
        log.warning("ingest authentication is OFF (--no-auth): anyone who can reach the port may "
                    "write samples to %s and %s", WRITE_PATH, BATCH_PATH)
    return receiver
