"""The running gpuledger's version, and how agent and platform tell each other theirs.

``version()`` is the installed package's version (pyproject.toml is its one source), or
``0+unknown`` when run from a checkout that was never installed. The CLI's ``--version``, the
platform's ``gpuledger_build_info`` and both ends of the agent's push read it here.

On the wire (``POST /api/v1/ingest/batch``): the agent sends ``User-Agent:
gpuledger-collect/<version>``; the receiver answers every ingest request with
``X-Gpuledger-Version: <version>``. The two compare ``major_minor`` only: patch releases mix.
"""
from __future__ import annotations

import re
from functools import lru_cache

AGENT_PRODUCT = "gpuledger-collect"          # the agent's User-Agent product token
VERSION_HEADER = "X-Gpuledger-Version"       # the platform's answer header
UNKNOWN = "0+unknown"

_AGENT = re.compile(rf"^{AGENT_PRODUCT}/([0-9A-Za-z][0-9A-Za-z.+_-]{{0,63}})(?:\s|$)")
_MAJOR_MINOR = re.compile(r"^v?(\d+)\.(\d+)")


@lru_cache(maxsize=1)
def version() -> str:
    """The installed package's version, ``0+unknown`` when it is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gpuledger")
    except PackageNotFoundError:          # run from a checkout that was never installed
        return UNKNOWN


def user_agent(of: str | None = None) -> str:
    """The agent's User-Agent: ``gpuledger-collect/<version>``."""
    return f"{AGENT_PRODUCT}/{of or version()}"


def agent_version(user_agent_header: str | None) -> str | None:
    """The version in a ``gpuledger-collect/<version>`` User-Agent; None for any other sender."""
    m = _AGENT.match((user_agent_header or "").strip())
    return m.group(1) if m else None


def major_minor(v: str) -> str:
    """``1.4`` of ``1.4.2`` (or ``v1.4.0rc1``); a version without one is compared whole."""
    m = _MAJOR_MINOR.match(v.strip())
    return f"{m.group(1)}.{m.group(2)}" if m else v.strip()
