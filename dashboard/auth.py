"""Who is reading the dashboard: HTTP basic against hashed passwords, or a proxy's trusted header.

``Authenticator.user(request)`` returns the user's name or None. ``protect(server, auth, endpoints)``
makes the Flask app answer 401 for those endpoints (the dashboard's own) until a request carries
good credentials; every other route (``/healthz``, ingest) is left as it is. The signed-in name is
kept in ``flask.g.dashboard_user`` (the author of silences created from the page).

Print a password hash for the config with ``python3 -m dashboard.auth hash``.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import os
import sys
import threading

from flask import Response, g, request
from werkzeug.security import check_password_hash, generate_password_hash

from dashboard.config import DashboardConfig

log = logging.getLogger(__name__)
MAX_HEADER = 4096
CACHE_SIZE = 256


class Authenticator:
    def __init__(self, cfg: DashboardConfig):
        self.cfg = cfg
        self.hashes = {u.name: u.hash() for u in cfg.users}
        self._key = os.urandom(32)              # keys the cache of verified credentials
        self._verified: dict[bytes, str] = {}
        self._lock = threading.Lock()

    def user(self, req) -> str | None:
        header = self.cfg.trusted_header
        if header and req.remote_addr in self.cfg.trusted_proxies:
            name = (req.headers.get(header) or "").strip()
            if name and len(name) <= 256:
                return name
        return self.basic(req.headers.get("Authorization") or "")

    def basic(self, value: str) -> str | None:
        if not self.hashes or len(value) > MAX_HEADER or not value[:6].lower() == "basic ":
            return None
        try:
            name, _, password = base64.b64decode(value[6:].strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        stored = self.hashes.get(name)
        if stored is None:
            return None
        # Password hashes are slow on purpose; remember credentials that verified (never failures).
        digest = hmac.new(self._key, f"{name}\0{password}".encode(), hashlib.sha256).digest()
        if self._verified.get(digest) == name:
            return name
        if not check_password_hash(stored, password):
            return None
        with self._lock:
            if len(self._verified) >= CACHE_SIZE:
                self._verified.clear()
            self._verified[digest] = name
        return name


def challenge(cfg: DashboardConfig) -> Response:
    if cfg.can_sign_in:
        text = "Sign in to the gpuledger dashboard.\n"
    else:
        text = ("The gpuledger dashboard has no users configured, so nobody can sign in.\n"
                "Add [[dashboard.users]] (name, password_hash from `python3 -m dashboard.auth hash`) or\n"
                "dashboard.trusted_header to the config, or run the local demo with --no-auth.\n")
    return Response(text, 401, {"WWW-Authenticate": f'Basic realm="{cfg.realm}", charset="UTF-8"',
                                "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"})


def protect(server, auth: Authenticator, endpoints: set[str]) -> None:
    """Require a signed-in user for requests routed to ``endpoints`` on the Flask ``server``."""
    if not auth.cfg.can_sign_in:
        log.warning("dashboard: authentication is on but no users or trusted header are configured; "
                    "every dashboard request gets 401 (configure [[dashboard.users]] or use --no-auth locally)")

    @server.before_request
    def _require_user():
        if request.endpoint not in endpoints:
            return None
        name = auth.user(request)
        if name is None:
            return challenge(auth.cfg)
        g.dashboard_user = name
        return None


def current_user(default: str = "") -> str:
    return getattr(g, "dashboard_user", "") or default


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["hash"]:
        print("usage: python3 -m dashboard.auth hash   (reads the password from stdin or a prompt)", file=sys.stderr)
        return 2
    if sys.stdin.isatty():
        import getpass

        password = getpass.getpass("password: ")
    else:
        password = sys.stdin.readline().rstrip("\n")
    if len(password) < 8:
        print("refusing a password shorter than 8 characters", file=sys.stderr)
        return 2
    print(generate_password_hash(password))
    return 0


if __name__ == "__main__":
    sys.exit(main())
