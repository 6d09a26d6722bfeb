"""What every command group shares: opening the store and printing progress."""
from __future__ import annotations

import sys


def open_store(cfg, dsn: str | None = None):
    """Connect to the configured store (or ``dsn``) and bring its schema up to date."""
    from ingest.schema import open_store as open_dsn

    return open_dsn(dsn or cfg.store_dsn(), cfg.store.raw_retention_days)


def progress(message: str) -> None:
    """Progress lines on stderr; "[i/n] ..." lines get a bar."""
    if message.startswith("[") and "/" in message.split("]")[0]:
        done, total = (int(x) for x in message[1:].split("]")[0].split("/"))
        width = 24
        filled = width * done // max(total, 1)
        message = f"[{'#' * filled}{'.' * (width - filled)}] {100 * done // max(total, 1):3d}% {message}"
    print(message, file=sys.stderr, flush=True)
