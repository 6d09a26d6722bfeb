"""The ``[sql]`` section of gpuledger's config: the platform's ClickHouse-compatible SQL port.

In ``gpuledger.toml``::

    [sql]                            # ClickHouse's HTTP interface on the store (ingest/sql_http.py)
    enabled = true                   # on by default; it serves only once a user is configured
    port = 8123                      # on server.host (or `up --host`)
    max_execution_time_s = 60        # reader limits; a reader cannot lift them
    max_memory_mb = 2048
    max_result_rows = 1000000

    [[sql.users]]
    name = "finance"
    password = { env = "GPULEDGER_SQL_FINANCE_PASSWORD" }   # a secret reference, never a literal
    role = "reader"                  # reader: SELECT / SHOW / DESCRIBE / EXISTS / EXPLAIN; admin: also writes

    [[sql.users]]
    name = "ops"
    password_hash = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"  # sha256 hex
    role = "admin"

``password_hash`` is the SHA-256 of the password in hex, ClickHouse's ``password_sha256_hex``:
``printf '%s' "$PASSWORD" | sha256sum | cut -d' ' -f1``. With no ``[[sql.users]]`` the port is
not opened: there is never an anonymous SQL port.
"""
from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass, field
from typing import Literal

from base.settings import Secret

_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass
class SqlUser:
    name: str
    password: Secret | None = None             # { env = "VAR" } or { file = "/path" }
    password_hash: str = ""                    # sha256 hex of the password (ClickHouse's password_sha256_hex)
    role: Literal["reader", "admin"] = "reader"

    def validate(self):
        if not self.name or ":" in self.name or not self.name.isprintable():
            return "name", "a user name without ':'"
        if (self.password is not None) == bool(self.password_hash):
            return "password", "exactly one of password (a secret reference) or password_hash (sha256 hex)"
        if self.password_hash and not _HEX64.fullmatch(self.password_hash.lower()):
            return "password_hash", ("the SHA-256 of the password in hex (64 characters), never the password "
                                     "itself: printf '%s' \"$PASSWORD\" | sha256sum | cut -d' ' -f1")
        if self.password is not None and not self.password.get():
            return "password", "a non-empty password"
        return None

    def accepts(self, password: str) -> bool:
        """Whether ``password`` is this user's (compared in constant time)."""
        given = hashlib.sha256(password.encode("utf-8")).hexdigest()
        wanted = self.password_hash.lower() if self.password_hash else \
            hashlib.sha256(self.password.get().encode("utf-8")).hexdigest()
        return hmac.compare_digest(given, wanted)


@dataclass
class SqlConfig:
    enabled: bool = True                       # serve SQL in `up` and the demo (only with users)
    port: int = 8123                           # ClickHouse's HTTP port; same host as the web server
    max_execution_time_s: int = 60             # reader limits (ClickHouse max_execution_time,
    max_memory_mb: int = 2048                  # max_memory_usage, max_result_rows); a reader may
    max_result_rows: int = 1_000_000           # lower them per query, never lift them
    max_body_mb: float = 64.0                  # larger request bodies are refused with 413
    users: list[SqlUser] = field(default_factory=list)

    def validate(self):
        if not 0 < self.port < 65536:
            return "port", "a TCP port between 1 and 65535"
        if self.max_execution_time_s < 1:
            return "max_execution_time_s", "a number of seconds >= 1"
        if self.max_memory_mb < 16:
            return "max_memory_mb", "a size in MB >= 16"
        if self.max_result_rows < 1:
            return "max_result_rows", "a number of rows >= 1"
        if not self.max_body_mb > 0:
            return "max_body_mb", "a size in MB > 0"
        names = [u.name for u in self.users]
        if len(names) != len(set(names)):
            return "users", "distinct user names"
        return None

    @property
    def serves(self) -> bool:
        """Whether the SQL port opens: enabled, with at least one user."""
        return self.enabled and bool(self.users)

    def user(self, name: str) -> SqlUser | None:
        return next((u for u in self.users if u.name == name), None)
