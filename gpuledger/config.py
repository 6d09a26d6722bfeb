"""gpuledger's one configuration: a TOML file, environment overrides, defaults.

Precedence: environment > file > default. The file is ``--config PATH``, else
``$GPULEDGER_CONFIG``, else ``./gpuledger.toml`` when present, else built-in defaults.
Any scalar key of a section can be overridden as ``GPULEDGER_<SECTION>_<KEY>``
(e.g. ``GPULEDGER_STORE_DSN``); values are read as TOML literals, falling back to strings.
Secrets are references (``{ env = "VAR" }`` / ``{ file = "/path" }``), never literals.
``gpuledger.example.toml`` documents every key; a test checks it stays complete.
"""
from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from alerts.config import AlertsConfig
from base.errors import ConfigError
from base.settings import Secret, build
from collector.config import CollectorConfig
from dashboard.config import DashboardConfig
from ingest.billing.config import BillingConfig
from ingest.rollup.config import AnalyticsConfig, AttributionRule, ListPrice, PoliciesConfig, PoolConfig, default_rules
from ingest.sql_config import SqlConfig
from ingest.telemetry_config import QueuesConfig, ReceiverConfig, ScrapeTarget

DEFAULT_DSN = "chdb://~/.local/share/gpuledger/store"
ENV_PREFIX = "GPULEDGER_"


@dataclass
class StoreConfig:
    dsn: str = DEFAULT_DSN
    password: Secret | None = None          # for a server DSN written without its password
    raw_retention_days: int = 400           # TTL of gpu_samples; rollups are kept
    insert_batch_rows: int = 200_000        # rows per insert from the writer
    cluster: str = ""                       # a ClickHouse cluster (remote_servers name): run against it
    cluster_http_port: int = 0              # HTTP port of every node (0: the DSN's port)

    def validate(self):
        if self.cluster and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.cluster):
            return "cluster", f"a cluster name from the servers' remote_servers (letters, digits and _), got {self.cluster!r}"
        if not 0 <= self.cluster_http_port < 65536:
            return "cluster_http_port", "0 (the DSN's port) or a TCP port between 1 and 65535"
        if self.raw_retention_days < 1:
            return "raw_retention_days", "a number of days >= 1"
        if self.insert_batch_rows < 1:
            return "insert_batch_rows", "a number of rows >= 1"
        return None


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8050
    threads: int = 256                      # requests served at once (gpuledger.serving)

    def validate(self):
        if not 0 < self.port < 65536:
            return "port", "a TCP port between 1 and 65535"
        if not 1 <= self.threads <= 4096:
            return "threads", "a number of threads between 1 and 4096"
        return None


@dataclass
class TeamConfig:
    name: str
    budget_usd_month: float = 0.0           # 0: no budget
    contact: str = ""                       # the channel (under [[alerts.channels]]) for the team's alerts


@dataclass
class Config:
    store: StoreConfig = field(default_factory=StoreConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    teams: list[TeamConfig] = field(default_factory=list)
    pools: list[PoolConfig] = field(default_factory=list)
    list_prices: list[ListPrice] = field(default_factory=list)
    attribution: list[AttributionRule] = field(default_factory=default_rules)
    policies: PoliciesConfig = field(default_factory=PoliciesConfig)
    analytics: AnalyticsConfig = field(default_factory=AnalyticsConfig)
    collector: CollectorConfig = field(default_factory=CollectorConfig)
    scrape: list[ScrapeTarget] = field(default_factory=list)
    receiver: ReceiverConfig = field(default_factory=ReceiverConfig)
    queues: QueuesConfig = field(default_factory=QueuesConfig)
    billing: BillingConfig = field(default_factory=BillingConfig)
    alerts: AlertsConfig = field(default_factory=AlertsConfig)
    dashboard: DashboardConfig = field(default_factory=DashboardConfig)
    sql: SqlConfig = field(default_factory=SqlConfig)
    source: str = "defaults"                # where this config was read from (not a key)

    def validate(self):
        """Cross-section checks: each team's contact names a configured alert channel."""
        channels = [c.name for c in self.alerts.channels]
        for i, team in enumerate(self.teams):
            if team.contact and team.contact not in channels:
                known = f"one of {', '.join(channels)}" if channels else "none is configured yet"
                return (f"teams[{i}].contact",
                        f"the name of a channel under [[alerts.channels]] ({known}) for team {team.name}'s alerts, "
                        f"got {team.contact!r}; define that channel (Slack webhook, email, webhook) or leave contact out")
        return self._idle_alert_outlives_derivation()

    def _idle_alert_outlives_derivation(self):
        """gpu_idle_window sees a window as open until its data is stale_minutes old; derivation
        refreshes it every interval_minutes, so a shorter stale_minutes resolves open windows."""
        from alerts.builtin import BUILTIN_RULES

        over = self.alerts.builtin_rules.get("gpu_idle_window")
        stale = (over.params if over else {}).get("stale_minutes", BUILTIN_RULES["gpu_idle_window"].params["stale_minutes"])
        needed = self.analytics.interval_minutes + self.analytics.idle_max_gap_minutes
        if self.alerts.enabled and (over is None or over.enabled) and stale <= needed:
            return ("alerts.builtin_rules.gpu_idle_window.params.stale_minutes",
                    f"more than analytics.interval_minutes + analytics.idle_max_gap_minutes ({needed} minutes), "
                    f"got {stale:g}: an idle GPU's alert would resolve between two derivations")
        return None

    def store_dsn(self) -> str:
        """The DSN with the password from its secret, if one is configured."""
        dsn = self.store.dsn
        if self.store.password and "://" in dsn and not dsn.startswith("chdb:"):
            scheme, rest = dsn.split("://", 1)
            user_host = rest.split("@", 1)
            user, hostpart = (user_host[0].split(":")[0], user_host[1]) if len(user_host) == 2 else ("default", rest)
            from urllib.parse import quote

            dsn = f"{scheme}://{user}:{quote(self.store.password.get(), safe='')}@{hostpart}"
        return dsn


def override_cluster(config: Config, cluster: str) -> None:
    """``--cluster NAME`` on the command line: checked like ``store.cluster``."""
    config.store.cluster = cluster
    problem = config.store.validate()
    if problem:
        raise ConfigError(f"--cluster (store.{problem[0]}): expected {problem[1]}")


SECTIONS = {f.name: f for f in dataclasses.fields(Config) if f.name != "source"}


def config_path(explicit: str | None, env: Mapping[str, str]) -> Path | None:
    if explicit:
        return Path(explicit)
    if env.get("GPULEDGER_CONFIG"):
        return Path(env["GPULEDGER_CONFIG"])
    local = Path("gpuledger.toml")
    return local if local.exists() else None


def load(explicit: str | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Read, override and validate the configuration; raise ConfigError naming file and key."""
    env = os.environ if env is None else env
    path = config_path(explicit, env)
    raw: dict = {}
    name = "defaults"
    if path is not None:
        name = str(path)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: config file not found") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    raw = apply_env_overrides(raw, env)
    if "source" in raw:
        raise ConfigError(f"{name}: unknown key 'source'")
    config = build(Config, raw, "", name, env)
    config.source = name
    return config


def apply_env_overrides(raw: dict, env: Mapping[str, str]) -> dict:
    """Fold ``GPULEDGER_<SECTION>_<KEY>`` variables into the raw document."""
    raw = dict(raw)
    for section, fld in SECTIONS.items():
        cls = fld.default_factory if fld.default_factory is not dataclasses.MISSING else None
        if cls is None or not dataclasses.is_dataclass(cls):
            continue
        for sub in dataclasses.fields(cls):
            var = f"{ENV_PREFIX}{section}_{sub.name}".upper()
            if var not in env:
                continue
            table = dict(raw.get(section) or {})
            if "Secret" in str(sub.type):
                table[sub.name] = {"env": var}
            else:
                table[sub.name] = _literal(env[var])
            raw[section] = table
    return raw


def _literal(text: str):
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
