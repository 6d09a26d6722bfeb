"""Every component id of the dashboard, in one place. Page-level ids carry the page's name so
no two pages share one (Dash checks callbacks against all pages' layouts at once)."""
from __future__ import annotations

URL = "gl-url"                      # dcc.Location with refresh="callback-nav": filters write here
NAV = "gl-nav"
SIGNED_IN = "gl-signed-in"

PAGES = ("overview", "utilization", "idle", "spend", "placement", "compliance", "alerts")


def filters(page: str) -> str:
    """dcc.Store holding the page's parsed filters (from its URL), the input of its callbacks."""
    return f"{page}-filters"


def filter_control(name: str, page: str) -> dict:
    """A filter-bar control (range, env, team); the URL callback matches them with ALL."""
    return {"type": "gl-filter", "name": name, "page": page}


def notes(page: str) -> str:
    return f"{page}-notes"


def part(page: str, name: str) -> str:
    """The container a callback fills: a chart, a table, a row of tiles."""
    return f"{page}-{name}"


def csv_button(page: str, name: str) -> dict:
    return {"type": "gl-csv", "page": page, "name": name}


def download(page: str) -> str:
    return f"{page}-download"


# Utilization
UTIL_ROWS = "utilization-rows"          # heatmap rows: pool or GPU

# Idle & waste: the focus on one GPU entity and idle window (dashboard/focus.py)
IDLE_FOCUS = "idle-focus-data"          # dcc.Store holding the parsed focus, beside the filters store
IDLE_FOCUS_BANNER = "idle-focus-banner"
IDLE_FOCUS_CLEAR = "idle-focus-clear"   # link to the page without the focus
IDLE_FOCUS_GPU = "idle-focus-gpu"       # in the focus card: the GPU, the window, the GPU's windows
IDLE_FOCUS_WINDOW = "idle-focus-window"
IDLE_FOCUS_WINDOWS = "idle-focus-windows"

# Alerts: silences
SILENCE_MATCHERS = "alerts-silence-matchers"
SILENCE_DURATION = "alerts-silence-duration"
SILENCE_COMMENT = "alerts-silence-comment"
SILENCE_CREATE = "alerts-silence-create"
SILENCE_EXPIRE_ID = "alerts-silence-expire-id"
SILENCE_EXPIRE = "alerts-silence-expire"
SILENCE_MESSAGE = "alerts-silence-message"
