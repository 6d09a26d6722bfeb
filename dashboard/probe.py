"""Call a page's callbacks over HTTP exactly as the browser does after it renders the page
(``POST /_dash-update-component``), with a Flask test client or anything with ``.get``/``.post``.
Used by the benchmark (server-side time of every page's callbacks) and by tests."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

from dashboard import ids

DEFAULT_INPUTS = {ids.UTIL_ROWS: "pool", ids.UTIL_SEARCH: "", ids.SILENCE_CREATE: 0, ids.SILENCE_EXPIRE: 0}


@dataclass
class Call:
    page: str
    output: str
    status: int
    seconds: float
    response: dict | None


def page_callbacks(client, page: str) -> list[dict]:
    """The callbacks a page runs when it renders: those whose inputs include its filters store."""
    deps = client.get("/_dash-dependencies").get_json()
    return [d for d in deps if any(i["id"] == ids.filters(page) for i in d["inputs"])]


def call(client, page: str, dep: dict, filters_data: dict, overrides: dict | None = None) -> Call:
    values = {**DEFAULT_INPUTS, ids.filters(page): filters_data, **(overrides or {})}
    multi = dep["output"].startswith("..")
    outputs = [_split(o) for o in dep["output"].strip(".").split("...")] if multi else _split(dep["output"])
    body = {
        "output": dep["output"],
        "outputs": outputs,
        "inputs": [{**i, "value": values.get(i["id"])} for i in dep["inputs"]],
        "changedPropIds": [f"{ids.filters(page)}.data"],
        "state": [{**s, "value": values.get(s["id"])} for s in dep["state"]],
    }
    started = time.perf_counter()
    response = client.post("/_dash-update-component", data=json.dumps(body), content_type="application/json")
    seconds = time.perf_counter() - started
    payload = response.get_json(silent=True) if response.status_code == 200 else None
    return Call(page, dep["output"], response.status_code, seconds, payload)


def call_router(client, path: str, search: str) -> Call:
    """Dash Pages' router: renders the page layout for ``path`` + ``search`` (runs ``layout(**query)``)."""
    deps = client.get("/_dash-dependencies").get_json()
    dep = next(d for d in deps if "_pages_content.children" in d["output"])
    values = {"pathname": path, "search": search}
    body = {"output": dep["output"], "outputs": [_split(o) for o in dep["output"].strip(".").split("...")],
            "inputs": [{**i, "value": values.get(i["property"])} for i in dep["inputs"]],
            "changedPropIds": ["_pages_location.pathname"], "state": dep["state"]}
    started = time.perf_counter()
    response = client.post("/_dash-update-component", data=json.dumps(body), content_type="application/json")
    seconds = time.perf_counter() - started
    return Call(path, dep["output"], response.status_code, seconds,
                response.get_json(silent=True) if response.status_code == 200 else None)


def call_page(client, page: str, filters_data: dict) -> list[Call]:
    return [call(client, page, dep, filters_data) for dep in page_callbacks(client, page)]


def _split(output: str) -> dict:
    component, _, prop = output.rpartition(".")
    return {"id": component, "property": prop}
