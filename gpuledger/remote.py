"""Commands run inside the platform: ``POST /api/v1/cli`` (the client side, the link file and the
wire format are in ``gpuledger.link``).

    install(platform)          # in build_platform, on an embedded store; last, after the SQL port

Only the commands the CLI makes with ``gpuledger.cli.common.beside`` run here (query, rollup,
ingest samples|billing, alerts check, alerts silence add|list|expire): the request's argv is
parsed by the CLI's own parser, and that command's ``run(args, cfg, store, con)`` runs with the
platform's config, a handle of its own on the platform's store, and a console whose lines
stream back as they are written. The files of ``ingest`` arrive in the request body; they are
kept in a private temporary directory for the load and shown under the names they were sent
with. Work that must not overlap with the platform's own jobs takes the job's lock
(``Platform.lock``): a rollup waits for the scheduled one (and the scheduled one skips its turn
while a command's runs), a billing load for the billing pull, ``alerts check --send`` for the
alerts round; sample loads run one at a time.
"""
from __future__ import annotations

import json
import logging
import queue
import shutil
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path

from flask import Response, request

from base.errors import GpuledgerError, InputError, first_line
from base.settings import bearer_matches
from base.sqlfiles import sql
from gpuledger import link

log = logging.getLogger(__name__)

MAX_HEAD = 1 << 20
UPLOAD_PREFIX = "gpuledger-upload-"
# the command's run function -> the platform lock it takes (alerts check only with --send)
LOCKS = {"run_rollup": "rollup", "run_ingest_billing": "billing", "run_ingest_samples": "ingest-samples",
         "run_check": "alerts"}


def install(platform) -> None:
    """Serve ``POST /api/v1/cli`` and announce the platform in its store directory while it serves."""
    store_dir = Path(platform.store.target.path)
    announcement = Announcement(platform, store_dir)
    platform.add_service(announcement)

    def cli():
        if not bearer_matches(request.headers.get("Authorization"), announcement.token):
            return Response(json.dumps({"error": "a valid token from the store's link file is required"}) + "\n",
                            401, content_type="application/json")
        try:
            args, run, uploads_dir = receive(request)
        except InputError as exc:     # a request this endpoint cannot take
            return Response(json.dumps({"error": str(exc)}) + "\n", 400, content_type="application/json")
        return Response(stream(platform, args, run, uploads_dir), content_type="application/x-ndjson",
                        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    platform.web.add_url_rule(link.PATH, "cli", cli, methods=["POST"])
    platform.add_part("cli", f"commands beside the platform ({link.PATH}; announced in {link.link_path(store_dir)})")


class Announcement:
    """The link file as a platform service: written once the platform serves, removed when it stops."""

    def __init__(self, platform, store_dir: Path):
        self.platform, self.store_dir, self.token = platform, store_dir, ""

    def start(self, host: str) -> None:
        web_host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
        web_host = f"[{web_host}]" if ":" in web_host else web_host
        sql = next((s for s in self.platform.services if hasattr(s, "port") and s is not self and s.port), None)
        info = link.write_link(self.store_dir, f"http://{web_host}:{self.platform.port}", getattr(sql, "port", None))
        self.token = info["token"]
        log.info("commands beside the platform: announced in %s", link.link_path(self.store_dir))

    def stop(self) -> None:
        if self.token:
            link.remove_link(self.store_dir, self.token)
            self.token = ""


def receive(req):
    """(args, run, uploads dir or None) of a request: its argv parsed, its files saved."""
    from gpuledger.cli import parser

    stream = req.stream
    try:
        head = json.loads(stream.readline(MAX_HEAD))
        argv, files = list(map(str, head["argv"])), head.get("files") or []
        sizes = [(str(f["name"]), int(f["size"])) for f in files]
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"the request does not start with the command's JSON line: {exc}") from None
    try:
        args = parser().parse_args(argv)
    except SystemExit:
        raise InputError(f"not a gpuledger command line: {' '.join(argv)[:300]}") from None
    run = getattr(args.func, "run", None)
    if run is None:
        raise InputError(f"`gpuledger {' '.join(argv)[:100]}` does not run through the platform")
    if sizes and not getattr(args.func, "files", None):
        raise InputError("this command takes no files")
    uploads_dir = None
    if getattr(args.func, "files", None):
        uploads_dir = Path(tempfile.mkdtemp(prefix=UPLOAD_PREFIX))
        try:
            args.uploads = [(save(stream, uploads_dir / str(i) / _safe_name(name), size), name)
                            for i, (name, size) in enumerate(sizes)]
        except BaseException:
            shutil.rmtree(uploads_dir, ignore_errors=True)
            raise
        args.paths = [str(path) for path, _ in args.uploads] + [p for p in args.paths if p.startswith("s3://")]
    return args, run, uploads_dir


def save(stream, path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True)
    left = size
    with open(path, "wb") as handle:
        while left:
            block = stream.read(min(left, link.BLOCK))
            if not block:
                raise InputError(f"the request ended {left} bytes before the end of {path.name}")
            handle.write(block)
            left -= len(block)
    return path


def _safe_name(name: str) -> str:
    base = Path(name.replace("\\", "/")).name
    return base if base not in ("", ".", "..") and "\x00" not in base else "file"


def stream(platform, args, run, uploads_dir: Path | None):
    """Run the command in a thread; yield its console's lines as JSON lines, then its status."""
    from gpuledger.cli.common import Console

    names = [(str(path), name) for path, name in getattr(args, "uploads", [])]
    names += [(str(Path(path).resolve()), name) for path, name in getattr(args, "uploads", [])]

    def shown(text: str) -> str:        # uploaded copies under the names they were sent with
        for here, there in names:
            text = text.replace(here, there)
        return text

    lines: queue.SimpleQueue = queue.SimpleQueue()
    con = Console(out=lambda text: lines.put({"out": shown(text)}), err=lambda text: lines.put({"err": shown(text)}))
    command = " ".join(args.argv if hasattr(args, "argv") else [])

    def work():
        try:
            lines.put({"exit": run_locked(platform, args, run, con)})
        except GpuledgerError as exc:
            lines.put({"exit": 2, "error": shown(str(exc))})
        except Exception as exc:     # a bug: its traceback goes to the platform's log
            log.exception("command %s failed", run.__name__)
            lines.put({"exit": 1, "error": f"the platform failed running the command ({type(exc).__name__}: "
                                           f"{shown(first_line(exc))}); its log has the traceback"})
        finally:
            if uploads_dir is not None:
                shutil.rmtree(uploads_dir, ignore_errors=True)

    threading.Thread(target=work, name=f"cli {command}"[:60], daemon=True).start()
    yield b'{"started": true}\n'
    while True:
        message = lines.get()
        yield json.dumps(message).encode() + b"\n"
        if "exit" in message:
            return


def run_locked(platform, args, run, con) -> int:
    """``run`` on a handle of its own, holding the platform lock its work shares with a job."""
    name = LOCKS.get(run.__name__)
    if run.__name__ == "run_check" and not args.send:
        name = None
    store = platform.store.clone()
    try:
        if name is None:
            return run(args, platform.config, store, con)
        lock = platform.lock(name)
        if not lock.acquire(blocking=False):
            con.progress(f"waiting for the platform's running {name} to finish")
            lock.acquire()
        try:
            since = datetime.now(timezone.utc)
            code = run(args, platform.config, store, con)
            if code == 0 and run.__name__ in COUNTED:
                count_load(platform, store, run.__name__, since)
            return code
        finally:
            lock.release()
    finally:
        store.close()


COUNTED = ("run_ingest_samples", "run_ingest_billing")


def count_load(platform, store, command: str, since: datetime) -> None:
    """Count a sample or billing load run here in the platform's metrics (path ``file``; billing
    source ``cli``), from what the load recorded (``ingested_files``, ``billing_loads``); its lock
    keeps the platform's own loads of the kind out meanwhile."""
    metrics = getattr(platform, "metrics", None)
    if metrics is None:
        return
    try:
        sample_rows, _, quarantined = store.rows(sql("store/loads_since"), {"since": since})[0]
    except Exception as exc:     # counting must not fail a load that succeeded
        log.warning("cannot count the load in /metrics: %s", first_line(exc))
        return
    if command == "run_ingest_samples":
        metrics.ingested("file", int(sample_rows or 0), int(sample_rows or 0))
    else:
        metrics.billing_loaded("cli", int(quarantined or 0))
