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
UTIL_SEARCH = "utilization-search"      # narrows the page's lists of GPUs (heatmap by GPU, MIG tree)

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

# Aggregate-by and drill-down (dashboard/drill.py)


def aggregate_by(page: str) -> str:
    """The "aggregate by" selector of a page's grouped card (written to the URL as ``by=``)."""
    return f"{page}-by"


def drill(page: str, name: str) -> dict:
    """A chart a click on opens the next level (its clickData's customdata says which)."""
    return {"type": "gl-drill", "page": page, "name": name}


def view(page: str) -> str:
    """dcc.Store of the page's own toggles as its URL gave them (``by``, ``rows``), for its callbacks."""
    return f"{page}-view"


# Alerts: the silence preview (which firing alerts the matchers being typed would match) and a
# store the silence callback bumps when a silence is created or expired (the alert tables re-read)
SILENCE_PREVIEW = "alerts-silence-preview"
SILENCE_PREVIEW_LIST = "alerts-silence-preview-list"
SILENCES_CHANGED = "alerts-silences-changed"

# The GPU page (/gpu?gpu_uuid=…&mig_instance=…)
GPU_PARAMS = ("gpu_uuid", "mig_instance")   # its own URL parameters, kept by the filter bar
GPU_ENTITY = "gpu-entity-data"         # dcc.Store: the GPU entity shown (host, gpu_uuid, mig_instance)
GPU_MESSAGE = "gpu-message"            # why there is nothing to show (an unknown GPU)
GPU_SEARCH = "gpu-search"              # without a GPU: the search box over the GPU list
GPU_PROFILE = "gpu-profile"            # in the title: the MIG profile, once the callback has read it
