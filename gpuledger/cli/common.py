"""What every command group shares: opening the store, printing, and running beside ``up``.

A command that needs the store is written as ``run(args, cfg, store, con)``: it reads its
arguments, calls one library function on ``store`` and prints through ``con`` (a ``Console``).
``beside(run)`` makes it a command: on a store this process can open, it runs here; on an
embedded store that a running platform (``gpuledger up``) holds, the same ``run`` runs inside
that platform (``gpuledger.remote``) and its output comes back here line by line
(``gpuledger.link``), so the command prints what it prints locally and exits with the same status.
"""
from __future__ import annotations

import sys
from collections.abc import Callable


class Console:
    """Where a command's output goes: ``out`` (results, stdout) and ``err`` (progress, stderr).
    The default writes to this process's streams; the platform passes writers that stream back."""

    def __init__(self, out: Callable[[str], None] | None = None, err: Callable[[str], None] | None = None):
        self._out, self._err = out, err

    def out(self, text: str) -> None:
        if self._out:
            self._out(text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()

    def err(self, text: str) -> None:
        if self._err:
            self._err(text)
        else:
            print(text, end="", file=sys.stderr, flush=True)

    def print(self, *values) -> None:
        self.out(" ".join(map(str, values)) + "\n")

    def progress(self, message: str) -> None:
        """Progress lines on stderr; "[i/n] ..." lines get a bar."""
        self.err(progress_line(message) + "\n")


LOCAL = Console()


def open_store(cfg, dsn: str | None = None):
    """Connect to the configured store (or ``dsn``) and bring its schema up to date."""
    from ingest.schema import open_store as open_dsn

    return open_dsn(dsn or cfg.store_dsn(), cfg.store.raw_retention_days, cfg.store.cluster, cfg.store.cluster_http_port)


def beside(run: Callable, files: Callable | None = None) -> Callable:
    """The command ``run(args, cfg, store, con)``: here on a store this process can open, or
    through the running platform that holds the embedded store (see the module docstring).
    ``files(args)`` lists the files the command reads, as (path, name): they are sent to the
    platform, which runs ``run`` with ``args.uploads`` (its copies, with those names) and
    ``args.paths`` (the copies, and any s3:// URL) instead."""

    def command(args, cfg) -> int:
        from base.errors import StoreLocked
        from ingest.store import ensure_free, parse_dsn

        dsn = args.store or cfg.store_dsn()
        target = parse_dsn(dsn)
        try:
            if target.embedded:
                ensure_free(target.path)          # a cheap look first: opening a held store costs more
            store = open_store(cfg, dsn)
        except StoreLocked as locked:
            from gpuledger import link

            return link.run_through_platform(target.path, args, locked)
        return run(args, cfg, store, LOCAL)

    command.run = run          # what the platform runs (gpuledger.remote: only commands made here)
    command.files = files
    command.__name__ = command.__qualname__ = getattr(run, "__name__", "command")
    return command


def progress_line(message: str) -> str:
    if message.startswith("[") and "/" in message.split("]")[0]:
        try:
            done, total = (int(x) for x in message[1:].split("]")[0].split("/"))
        except ValueError:
            return message
        width = 24
        filled = width * done // max(total, 1)
        message = f"[{'#' * filled}{'.' * (width - filled)}] {100 * done // max(total, 1):3d}% {message}"
    return message


def progress(message: str) -> None:
    """Progress lines on stderr; "[i/n] ..." lines get a bar."""
    LOCAL.progress(message)
