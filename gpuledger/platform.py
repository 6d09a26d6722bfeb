"""The long-running platform process (``gpuledger up``): one web server, one scheduler, one store.

Parts register themselves on the ``Platform``: routes on ``platform.web`` (a Flask app; the
dashboard and the ingest endpoints mount here) and jobs on ``platform.scheduler``
(APScheduler). ``/healthz`` reports the store and every part's last run.

A job holds a named lock while it runs (``Platform.lock``, by default the job's name), and skips
its turn when the lock is taken: a command run inside the platform (``gpuledger.remote``) takes
the same lock, so a CLI-triggered rollup and the scheduled one never run at once.
"""
from __future__ import annotations

import ipaddress
import logging
import signal
import threading
import time
from datetime import datetime, timezone

from apscheduler.schedulers.background import BackgroundScheduler
from flask import Flask, jsonify

from base.errors import ConfigError
from gpuledger.selfmetrics import SelfMetrics
from gpuledger.serving import PooledWSGIServer
from ingest.migrations import schema_version

log = logging.getLogger(__name__)


class Platform:
    def __init__(self, config, store):
        self.config, self.store = config, store
        self.web = Flask("gpuledger")
        # A turn that comes late (the first one, due when the job is added, comes as late as the
        # start takes) runs late rather than being dropped: APScheduler's default grace of 1 s
        # dropped the first backfill on a slow start. Turns missed meanwhile run once.
        self.scheduler = BackgroundScheduler(timezone=timezone.utc, job_defaults={
            "coalesce": True, "max_instances": 1, "misfire_grace_time": None})
        self.started = time.time()
        self.host = ""
        self.metrics = SelfMetrics(store, config)      # GET /metrics (gpuledger.selfmetrics.install)
        self.parts: dict[str, dict] = {}
        self._server = None
        self.services: list = []           # side servers (the SQL port): start(host) / stop()
        self._stopping = threading.Event()
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.web.add_url_rule("/healthz", "healthz", self.health)

    def add_part(self, name: str, detail: str = "") -> None:
        self.parts[name] = {"detail": detail, "last_ok": None, "last_error": None}

    def add_service(self, service) -> None:
        """A server of its own (``start(host)``, ``stop()``), run while the platform serves."""
        self.services.append(service)

    def lock(self, name: str) -> threading.Lock:
        """The lock named ``name``, shared by the jobs and commands whose work must not overlap."""
        with self._locks_guard:
            return self._locks.setdefault(name, threading.Lock())

    def add_job(self, name: str, func, seconds: int, lock: str | None = None) -> None:
        """Run ``func()`` every ``seconds`` holding ``lock(lock or name)``, skipping a turn while it
        is taken; its outcome shows in /healthz, its errors in the log."""
        self.add_part(name, f"every {seconds}s")
        held = self.lock(lock or name)

        def run():
            if not held.acquire(blocking=False):
                log.info("job %s skipped: a command run through the platform holds its lock", name)
                return
            try:
                func()
                self.parts[name]["last_ok"] = _now()
            except Exception as exc:  # a failing job must not stop the platform
                self.parts[name]["last_error"] = f"{_now()}: {type(exc).__name__}: {exc}"[:500]
                log.exception("job %s failed", name)
            finally:
                held.release()

        self.scheduler.add_job(run, "interval", seconds=seconds, id=name, next_run_time=datetime.now(timezone.utc))

    def health(self):
        try:
            version = schema_version(self.store)
            store = {"ok": True, "target": str(self.store.target), "schema_version": version}
        except Exception as exc:
            store = {"ok": False, "target": str(self.store.target), "error": str(exc).splitlines()[0][:300]}
        failing = [n for n, p in self.parts.items() if p["last_error"] and (not p["last_ok"] or p["last_ok"] < p["last_error"])]
        body = {
            "status": "ok" if store["ok"] and not failing else "degraded",
            "uptime_s": round(time.time() - self.started, 1),
            "store": store,
            "parts": self.parts,
        }
        return jsonify(body), 200 if store["ok"] else 503

    def serve(self, host: str, port: int, ready=None) -> None:
        """Serve until SIGTERM / SIGINT (or ``stop()``), then stop the scheduler and server cleanly."""
        self.host = host
        self._server = PooledWSGIServer(host, port, self.web, threads=self.config.server.threads)
        self.port = self._server.server_port
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)} \
            if threading.current_thread() is threading.main_thread() else {}
        self.scheduler.start()
        started = []
        try:
            for service in self.services:
                service.start(host)
                started.append(service)
        except Exception:
            self._shut_down(started, previous, wait=False)
            raise
        log.info("gpuledger is up on http://%s:%d (health: /healthz)", host, self.port)
        if ready:
            ready(self)
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._shut_down(started, previous, wait=True)
            log.info("gpuledger stopped")

    def _shut_down(self, services, previous_handlers, wait: bool) -> None:
        """Stop the side servers and the scheduler (``wait``: for running jobs), close the web
        server and give the signals their earlier handlers."""
        for service in services:
            service.stop()
        self.scheduler.shutdown(wait=wait)
        self._server.server_close()
        for sig, handler in previous_handlers.items():
            signal.signal(sig, handler)

    def stop(self) -> None:
        if self._server and not self._stopping.is_set():
            self._stopping.set()
            threading.Thread(target=self._server.shutdown, daemon=True).start()

    def _on_signal(self, signum, _frame) -> None:
        log.info("received %s, shutting down", signal.Signals(signum).name)
        self.stop()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def build_platform(config, store, *, auth: bool = True, clock=None) -> Platform:
    """The platform with every part that runs inside ``gpuledger up``. ``clock`` (a function
    returning an aware UTC datetime) is the time derivation and alerts run at; tests control it."""
    from alerts.clock import system_clock
    from alerts.scheduler import install as install_alerts
    from gpuledger.selfmetrics import install as install_metrics
    from ingest.billing.pulls import pull_sources
    from ingest.rollup.run import rollup

    clock = clock or system_clock
    platform = Platform(config, store)
    metrics = platform.metrics

    def derive():
        with metrics.rollup_run() as seen:
            seen["days"] = len(rollup(store, config, now=clock()).days)

    def pull():
        for result in pull_sources(store, config.billing, time.time):
            if not result.error and result.report is not None:
                metrics.billing_loaded(result.source, result.report.quarantined_rows)

    platform.add_job("rollup", derive, seconds=config.analytics.interval_minutes * 60)
    if config.billing.sources:
        platform.add_job("billing-pull", pull, seconds=config.billing.interval_minutes * 60, lock="billing")
    install_alerts(platform, config, clock=clock)
    install_metrics(platform, auth=auth and _dashboard_auth(config))
    from ingest.telemetry import register_telemetry

    register_telemetry(platform, store, config, auth=auth and _dashboard_auth(config))
    from dashboard.app import mount

    mount(platform, config, store, auth=auth)
    from ingest.sql_http import install as install_sql

    install_sql(platform, config, store)
    if store.target.embedded:     # commands beside the platform (last: it announces the SQL port too)
        from gpuledger.remote import install as install_remote

        install_remote(platform)
    return platform


def _dashboard_auth(config) -> bool:
    return getattr(getattr(config, "dashboard", None), "auth", True)


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(config, host: str, *, auth: bool = True) -> None:
    """Refuse (ConfigError) to serve on a non-loopback ``host`` with authentication on but no
    credential configured: no ``receiver.token`` and no dashboard users or trusted header, so
    the endpoints would be either open or closed to everyone. ``auth=False`` (``--no-auth``)
    is the explicit opt-out, logged as a warning."""
    _check_sql_exposure(config, host)
    if not auth or not _dashboard_auth(config):
        log.warning("authentication is OFF (--no-auth or dashboard.auth = false): anyone who can "
                    "reach %s may read the dashboard and write samples", host)
        return
    if is_loopback(host):
        return
    receiver, dashboard = getattr(config, "receiver", None), getattr(config, "dashboard", None)
    if (receiver is not None and receiver.token) or (dashboard is not None and (dashboard.users or dashboard.trusted_header)):
        return
    raise ConfigError(
        f"refusing to serve on {host}, an address other machines can reach, with no credential "
        "configured: anyone could write samples. Set receiver.token (token = { env = "
        '"GPULEDGER_INGEST_TOKEN" } under [receiver]) and [[dashboard.users]] (password_hash from '
        "`python3 -m dashboard.auth hash`), or listen on 127.0.0.1, or pass --no-auth to serve "
        "without authentication on purpose")


def _check_sql_exposure(config, host: str) -> None:
    """The SQL port never serves without users (``ingest.sql_http.install`` leaves it off), and
    ``--no-auth`` does not open it; on an address other machines reach, its basic-auth passwords
    travel in clear, which is said once."""
    sql = getattr(config, "sql", None)
    if sql is None or not sql.enabled:
        return
    if sql.users and not is_loopback(host):
        log.warning("SQL port %d on %s is reachable by other machines: its users' passwords travel in clear "
                    "over HTTP; put a TLS-terminating proxy in front or listen on 127.0.0.1", sql.port, host)
