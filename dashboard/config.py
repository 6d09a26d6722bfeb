"""The ``[dashboard]`` section of gpuledger's config: who may read the dashboard, and how.

Authentication is on by default. Two ways in, either or both:

* HTTP basic with hashed passwords: ``[[dashboard.users]]`` entries, each with a name and a
  password hash (``python3 -m dashboard.auth hash`` prints one), written in the file as
  ``password_hash = "scrypt:..."`` or read from a secret, ``password_hash_secret = { env = "VAR" }``;
* a trusted header set by an authenticating proxy (oauth2-proxy, an ingress with SSO):
  ``trusted_header = "X-Forwarded-User"``, believed only from ``trusted_proxies``.

With neither configured, every dashboard request gets 401 and a page saying what to configure;
``--no-auth`` (local demo only) turns authentication off. ``/healthz`` and the ingest endpoints
are never behind this (ingest has its own bearer token).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from base.settings import Secret
from dashboard.filters import PRESETS as RANGES  # 1d, 7d, 30d, 90d, mtd, month, last-month

HASH_METHODS = ("scrypt:", "pbkdf2:")


@dataclass
class DashboardUser:
    name: str
    password_hash: str = ""                     # a werkzeug password hash (scrypt:... or pbkdf2:...)
    password_hash_secret: Secret | None = None  # the same hash, read from { env = ... } or { file = ... }

    def hash(self) -> str:
        return self.password_hash_secret.get() if self.password_hash_secret else self.password_hash

    def validate(self):
        if not self.name or ":" in self.name:
            return "name", "a user name without ':'"
        if bool(self.password_hash) == bool(self.password_hash_secret):
            return "password_hash", "exactly one of password_hash or password_hash_secret"
        if not self.hash().startswith(HASH_METHODS):
            return ("password_hash_secret" if self.password_hash_secret else "password_hash",
                    "a password hash (scrypt:... or pbkdf2:...), never the password itself; "
                    "`python3 -m dashboard.auth hash` prints one")
        return None


@dataclass
class DashboardConfig:
    auth: bool = True                          # false only for a local demo (same as --no-auth)
    users: list[DashboardUser] = field(default_factory=list)
    trusted_header: str = ""                   # e.g. "X-Forwarded-User", set by an authenticating proxy
    trusted_proxies: list[str] = field(default_factory=lambda: ["127.0.0.1", "::1"])
    realm: str = "gpuledger"
    default_range: str = "30d"                 # time range when a link names none: 1d, 7d, 30d, 90d, mtd, month, last-month

    def validate(self):
        if self.default_range not in RANGES:
            return "default_range", f"one of {', '.join(RANGES)}"
        names = [u.name for u in self.users]
        if len(names) != len(set(names)):
            return "users", "distinct user names"
        if '"' in self.realm:
            return "realm", "a realm without double quotes"
        return None

    @property
    def can_sign_in(self) -> bool:
        return bool(self.users or self.trusted_header)
