"""In-process announcements between packages that may not import each other.

    listen(ROLLUP_FINISHED, reader.on_rollup)      # the dashboard (a bound method, held weakly)
    announce(ROLLUP_FINISHED, store.target)        # ingest.rollup.run, whenever a rollup ends

A listener is held weakly, so an object that is dropped stops listening; one that raises is
logged and the others still hear the announcement.
"""
from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable

log = logging.getLogger(__name__)

ROLLUP_FINISHED = "rollup-finished"     # argument: the store's target; sent even when the rollup failed

_listeners: dict[str, list[weakref.WeakMethod]] = {}
_lock = threading.Lock()


def listen(name: str, method: Callable) -> None:
    """Call the bound ``method`` with the announcement's arguments while its object lives."""
    with _lock:
        _listeners.setdefault(name, []).append(weakref.WeakMethod(method))


def announce(name: str, *args) -> None:
    with _lock:
        alive = [m for m in _listeners.get(name, []) if m() is not None]
        _listeners[name] = alive
    for ref in alive:
        method = ref()
        if method is None:
            continue
        try:
            method(*args)
        except Exception:
            log.exception("a listener of %s failed", name)
