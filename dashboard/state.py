"""What the callbacks of one mounted dashboard share: the reader (read-only handles + result cache),
the writable store (for silences only), the config and the clock. Kept on the Flask app (``mount`` puts it there), so the
page modules hold no global state and read it inside each request."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from flask import current_app

from dashboard.config import DashboardConfig
from dashboard.filters import Filters, parse

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
