"""HTTP for the channels: a transport is a function ``Request -> Response``.

``urllib_transport`` is the real one (standard library). Tests pass a loopback server's URL to
it, or a plain function. ``post_json`` turns an answer into success or a ``DeliveryError``:
2xx is success; 429 is ``RateLimited`` with the Retry-After header (seconds or an HTTP date);
408 and 5xx are retryable; other 4xx are not. Errors name the channel and the receiver's scheme
and host only; whatever else they quote (the receiver's answer, a urllib or http.client error)
goes through ``alerts.redact.redact`` with every part of the URL and of the secret headers.
"""
from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from alerts.redact import redact, secret_parts, where
from base.errors import DeliveryError, RateLimited

USER_AGENT = "gpuledger-alerts/0.1"


@dataclass(frozen=True)
class Request:
    method: str
    url: str = field(repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    body: bytes = b""
    timeout_s: float = 10.0


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)   # lower-case names
    body: bytes = b""


Transport = Callable[[Request], Response]


def urllib_transport(request: Request) -> Response:
    """Send with urllib; any HTTP status is a Response, a network failure a DeliveryError."""
    req = urllib.request.Request(request.url, data=request.body or None, method=request.method,
                                 headers={"User-Agent": USER_AGENT, **request.headers})
    try:
        with urllib.request.urlopen(req, timeout=request.timeout_s) as resp:
            return Response(resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read())
    except urllib.error.HTTPError as exc:
        body = exc.read() if exc.fp else b""
        return Response(exc.code, {k.lower(): v for k, v in (exc.headers or {}).items()}, body)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        text = redact(str(reason), secret_parts(request.url, request.headers))[:300]
        raise DeliveryError(f"{where(request.url)} did not answer: {type(reason).__name__}: {text}") from None


def retry_after(headers: dict[str, str], now: datetime | None = None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP date."""
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def post_json(transport: Transport, channel: str, url: str, payload, headers: dict[str, str] | None = None,
              timeout_s: float = 10.0, secrets: tuple[str, ...] | None = None) -> Response:
    """POST ``payload``; ``secrets`` (default: every part of ``url`` and ``headers``) are redacted from errors."""
    body = json.dumps(payload).encode()
    request = Request("POST", url, {"Content-Type": "application/json", **(headers or {})}, body, timeout_s)
    secrets = secret_parts(url, headers) if secrets is None else secrets
    try:
        response = transport(request)
    except DeliveryError as exc:
        raise DeliveryError(f"channel {channel}: {redact(str(exc), secrets)}", retryable=exc.retryable) from None
    check(response, channel, url, secrets)
    return response


def check(response: Response, channel: str, url: str, secrets: tuple[str, ...] = ()) -> None:
    if 200 <= response.status < 300:
        return
    # redacted before it is cut, so no piece of a secret survives at the cut
    detail = redact(response.body[:4096].decode("utf-8", "replace"), secrets or secret_parts(url))
    detail = " ".join(detail.split())[:200]
    message = f"channel {channel}: {where(url)} answered HTTP {response.status}" + (f": {detail}" if detail else "")
    if response.status == 429:
        raise RateLimited(message, status=429, retry_after=retry_after(response.headers))
    retryable = response.status >= 500 or response.status == 408
    raise DeliveryError(message, retryable=retryable, status=response.status,
                        retry_after=retry_after(response.headers) if retryable else None)
