"""What the callbacks of one mounted dashboard share: the reader (read-only handles + result cache),
the writable store (for silences only), the config and the clock. Kept on the Flask app (``mount`` puts it there), so the
page modules hold no global state and read it inside each request."""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from flask import current_app

from dashboard.config import DashboardConfig
from dashboard.filters import Filters, parse
from dashboard.reader import RENDERED_S

KEY = "gpuledger.dashboard"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class DashboardState:
    store: object                       # a Reader (dashboard/reader.py): pooled read-only handles + cache
    writer: object                      # the platform's store: silences are written here
    cfg: DashboardConfig
    baseline_quantile: float = 0.1
    saturated_pct: float = 85.0
    queue_burst_wait_hours: float = 1.0
    throughput: dict | None = None      # [analytics.throughput]: model factors over throughput.DEFAULT_THROUGHPUT
    clock: Callable[[], datetime] = utc_now


def get() -> DashboardState:
    return current_app.extensions[KEY]


def filters_from_url(query: dict) -> Filters:
    st = get()
    return parse(query, st.clock(), st.cfg.default_range)


def filters_from_data(data) -> Filters:
    st = get()
    return Filters.from_data(data, st.clock(), st.cfg.default_range)


def shared(max_age_s: float = RENDERED_S):
    """A page's callback (its first argument the filters store's data, the others its other inputs
    and states) built once for the same window, clock minute and arguments, and that output sent to
    every request that asks meanwhile, until the next derivation or ``max_age_s`` (the reader's
    ``rendered`` cache, dashboard/reader.py). Without it, 50 users opening a page after a
    derivation share its queries but each build its tables and figures, one Python thread at a
    time. Only for callbacks that write nothing and read no other request's state (``ctx``)."""
    def wrap(render):
        name = f"{render.__module__}.{render.__qualname__}"

        @functools.wraps(render)
        def render_shared(data, *args):
            rendered = getattr(get().store, "rendered", None)
            if rendered is None:                     # a store without a reader's caches
                return render(data, *args)
            f = filters_from_data(data)
            key = {"filters": f, "minute": f.now.replace(second=0, microsecond=0) if f.now else None, "args": args}
            return rendered.get(name, key, lambda: render(data, *args), max_age_s, share=True)
        return render_shared
    return wrap
