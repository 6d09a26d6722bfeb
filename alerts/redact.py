"""Keeping channel secrets out of every text we write: errors, log lines, recorded attempts.

A channel's URL (Slack and webhook URLs carry their credential in the path or the query) and its
configured headers (``Authorization``, tokens) are secret. ``secret_parts`` lists every piece of
them a receiver or a library might echo back: the whole URL, its path and query, each path
segment and query value, user info, each header value and the token after ``Bearer``, raw,
percent-encoded, percent-decoded and JSON-escaped. ``redact`` replaces each with ``***``, longest
first, whatever the text's origin (a 4xx/5xx body, a urllib or http.client exception, a
traceback). Only the scheme, host and port of a URL are kept (``where``).

Channels expose their ``secret_parts`` as ``secrets``; ``alerts.channels.http`` redacts what it
raises and the deliverer redacts again before it logs or records anything.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, quote, unquote, urlsplit

MASK = "***"
MIN_PART = 6                        # shorter path segments and values ("hooks", "api") are not secret on their own
AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "apikey"})
PUBLIC_HEADERS = frozenset({"content-type", "user-agent", "accept", "idempotency-key"})


def where(url: str) -> str:
    """``https://hooks.slack.com`` — what may be shown of a URL."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{parts.scheme}://{parts.hostname}" + (f":{port}" if port else "")


def secret_parts(url: str = "", headers: Mapping[str, str] | None = None, *values: str) -> tuple[str, ...]:
    """Every piece of ``url`` (but its scheme and host), of the ``headers``' values (but public
    ones like Content-Type) and of ``values`` that gives a secret away, in the forms it may be
    echoed in; longest first."""
    whole: set[str] = set(values)          # redacted whatever their length
    pieces: set[str] = set()                # redacted when at least MIN_PART long
    if url:
        parts = urlsplit(url)
        whole |= {url, parts.query, parts.fragment, parts.password or "",
                  parts.path + (f"?{parts.query}" if parts.query else "")}
        if parts.path.strip("/"):
            whole |= {parts.path, parts.path.rstrip("/")}
        pieces |= {parts.username or "", *parts.path.split("/")}
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            pieces |= {value, f"{key}={value}"}
    for name, value in (headers or {}).items():
        if name.lower() not in PUBLIC_HEADERS and value:
            whole.add(value)
            pieces |= {w for w in value.split() if w.lower() not in AUTH_SCHEMES}
    out: set[str] = set()
    for piece in whole | {p for p in pieces if len(p) >= MIN_PART}:
        if piece:
            out |= {piece, unquote(piece), quote(piece, safe=""), quote(piece, safe="/"), json.dumps(piece)[1:-1],
                    piece.replace("/", "\\/")}
    return tuple(sorted((p for p in out if p), key=len, reverse=True))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every one of ``secrets`` (from ``secret_parts``) replaced by ``***``."""
    secrets = [s for s in secrets if s]
    if not text or not secrets:
        return text
    pattern = re.compile("|".join(re.escape(s) for s in sorted(secrets, key=len, reverse=True)), re.IGNORECASE)
    return pattern.sub(MASK, text)
