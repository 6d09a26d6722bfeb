"""The ``[alerts]`` section of gpuledger's config: rules, the built-in pack, channels, routes.

Field names are the TOML keys (see ``docs/alerts.md`` and ``gpuledger.example.toml``). Durations
are strings like ``30s``, ``15m``, ``4h``, ``1h30m``, ``7d``. Secrets (webhook URLs, SMTP
passwords, header values) are ``Secret`` references: ``{ env = "VAR" }`` or ``{ file = "/path" }``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from alerts.builtin import BUILTIN_RULES
from alerts.durations import parse_duration
from base.settings import Secret

Severity = Literal["critical", "warning", "info"]
SEVERITIES = ("info", "warning", "critical")          # lowest to highest
CHANNEL_TYPES = ("slack", "email", "webhook", "alertmanager")
RUNBOOK_BASE_URL = "https://github.com/gpuledger/gpuledger/blob/main/docs/runbooks.md"


def _bad_duration(value) -> bool:
    try:
        parse_duration(value)
    except ValueError:
        return True
    return False


_DURATION = "a duration like 30s, 15m, 4h or 7d"


def url_problem(url: str) -> str:
    """What is wrong with a channel's URL ("" if nothing), never quoting it (it may be a secret)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        return f"has scheme {parts.scheme!r}" if parts.scheme else "has no scheme"
    if not parts.hostname:
        return "names no host"
    try:
        port = parts.port
    except ValueError:
        return "has a port that is not a number from 1 to 65535"
    if port == 0:
        return "has port 0"
    return ""


@dataclass
class RuleConfig:
    """A rule of your own: SQL returning one row per alert instance."""

    name: str
    query: str = ""                         # the SQL itself, or
    query_file: str = ""                    # a .sql file holding it
    for_duration: str = "0s"                # how long an instance must stay active before firing
    severity: Severity = "warning"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)   # summary/description templates
    channels: list[str] = field(default_factory=list)
    group_by: list[str] = field(default_factory=lambda: ["alertname"])
    repeat_interval: str = "4h"
    params: dict[str, float] = field(default_factory=dict)      # {name:Float64} query parameters
    page: str = "alerts"                    # dashboard page notifications link to
    unit: str = ""                          # what value counts, shown with it: "h", "%", "USD", "GPUs"
    enabled: bool = True

    def validate(self):
        if not self.name.replace("_", "").replace("-", "").isalnum():
            return "name", "a rule name of letters, digits, '_' and '-'"
        if bool(self.query.strip()) == bool(self.query_file):
            return "query", "exactly one of query (SQL) or query_file (path to a .sql file)"
        for key in ("for_duration", "repeat_interval"):
            if _bad_duration(getattr(self, key)):
                return key, _DURATION
        return None


@dataclass
class BuiltinRuleConfig:
    """Overrides for one rule of the built-in pack; unset keys keep the pack's defaults."""

    enabled: bool = True
    severity: Severity | None = None
    for_duration: str | None = None
    repeat_interval: str | None = None
    group_by: list[str] | None = None
    channels: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    params: dict[str, float] = field(default_factory=dict)

    def validate(self):
        for key in ("for_duration", "repeat_interval"):
            value = getattr(self, key)
            if value is not None and _bad_duration(value):
                return key, _DURATION
        return None


@dataclass
class ChannelConfig:
    """Where notifications go. ``type`` picks which keys matter (see docs/alerts.md)."""

    name: str
    type: Literal["slack", "email", "webhook", "alertmanager"]
    url: Secret | None = None               # slack / webhook: the (secret) URL
    endpoint: str = ""                      # alertmanager (or a webhook whose URL is no secret)
    headers: dict[str, Secret] = field(default_factory=dict)   # e.g. Authorization for a webhook
    send_resolved: bool = True
    timeout_s: float = 10.0
    smtp_host: str = ""
    smtp_port: int = 0                      # 0: 587 for starttls, 465 for ssl, 25 for none
    smtp_security: Literal["starttls", "ssl", "none"] = "starttls"
    smtp_user: str = ""
    smtp_password: Secret | None = None
    smtp_ca_file: str = ""                  # CA bundle for a server with a private certificate
    email_from: str = ""
    email_to: list[str] = field(default_factory=list)

    def validate(self):
        for key in ("url", "endpoint"):
            value = getattr(self, key)
            problem = url_problem(value.get() if isinstance(value, Secret) else value) if value else ""
            if problem:
                return key, f"an http(s)://host[:port]/path URL; this one {problem}"
        if not 0 <= self.smtp_port <= 65535:
            return "smtp_port", "a TCP port from 1 to 65535 (0: the default for smtp_security)"
        if self.type == "slack" and not self.url:
            return "url", 'the Slack incoming-webhook URL as a secret, { env = "SLACK_WEBHOOK_URL" }'
        if self.type == "webhook" and not (self.url or self.endpoint):
            return "url", 'the webhook URL: url = { env = "VAR" } (secret) or endpoint = "https://..."'
        if self.type == "alertmanager" and not (self.endpoint or self.url):
            return "endpoint", 'the Alertmanager base URL, e.g. "http://alertmanager:9093"'
        if self.type == "email":
            if not self.smtp_host:
                return "smtp_host", "the SMTP server's host name"
            if not self.email_from or not self.email_to:
                return "email_to" if self.email_from else "email_from", "sender and recipient addresses"
            if self.smtp_password and not self.smtp_user:
                return "smtp_user", "a user name to go with smtp_password"
        if self.timeout_s <= 0:
            return "timeout_s", "a number of seconds > 0"
        return None


@dataclass
class RouteConfig:
    """Alerts whose labels equal every ``match`` entry also go to ``channels``."""

    match: dict[str, str]
    channels: list[str]


@dataclass
class InhibitConfig:
    """While a firing alert matches ``source``, alerts matching ``target`` whose ``equal`` labels
    have the same values are not notified. Matchers: ``name=value``, ``!=``, ``=~``, ``!~``."""

    source: list[str]
    target: list[str]
    equal: list[str] = field(default_factory=list)


@dataclass
class DeliveryConfig:
    backoff_initial_s: float = 1.0          # wait after the first failure, doubled after each
    backoff_max_s: float = 600.0
    inline_wait_max_s: float = 5.0          # retry within the same pass when the wait is this short
    give_up_after: str = "24h"              # a notification undelivered this long is marked failed

    def validate(self):
        if self.backoff_initial_s <= 0 or self.backoff_max_s < self.backoff_initial_s:
            return "backoff_max_s", "backoff_initial_s > 0 and backoff_max_s >= backoff_initial_s"
        if _bad_duration(self.give_up_after):
            return "give_up_after", _DURATION
        return None


WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")          # the digest's weekday, as date.weekday()


@dataclass
class DigestConfig:
    """Each team's periodic digest of past waste (ended idle windows never page anyone; they go
    here): the period's top windows, waste by part and the trend against the period before, sent
    through the team's ``contact`` channel."""

    enabled: bool = True
    every: Literal["daily", "weekly"] = "daily"     # daily: yesterday (UTC); weekly: last Monday-Sunday
    at_hour_utc: int = 8                    # sent at the first round at or after this hour (UTC)
    weekday: Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"] = "mon"   # the day weekly ones go out
    top_windows: int = 5                    # idle windows listed

    def validate(self):
        if not 0 <= self.at_hour_utc <= 23:
            return "at_hour_utc", "an hour of the day from 0 to 23 (UTC)"
        if not 1 <= self.top_windows <= 50:
            return "top_windows", "a number of windows from 1 to 50"
        return None


def _default_inhibit() -> list[InhibitConfig]:
    same = ["category", "team", "host", "gpu_uuid"]
    return [InhibitConfig(["severity=critical"], ["severity=~warning|info"], same),
            InhibitConfig(["severity=warning"], ["severity=info"], same)]


@dataclass
class AlertsConfig:
    enabled: bool = True                    # evaluate in the scheduler of `gpuledger up`
    interval_s: int = 60                    # seconds between evaluation rounds
    base_url: str = "http://127.0.0.1:8050" # dashboard address used in links
    # where each alert's runbook_url points: {runbook_base_url}#{alertname}, or the base with
    # "{alertname}" replaced where it has that placeholder (a wiki page per rule)
    runbook_base_url: str = RUNBOOK_BASE_URL
    builtin: bool = True                    # the built-in rule pack
    builtin_rules: dict[str, BuiltinRuleConfig] = field(default_factory=dict)
    rules: list[RuleConfig] = field(default_factory=list)
    channels: list[ChannelConfig] = field(default_factory=list)
    routes: list[RouteConfig] = field(default_factory=list)
    default_channels: list[str] = field(default_factory=list)
    inhibit: list[InhibitConfig] = field(default_factory=_default_inhibit)
    keep_resolved: str = "24h"              # how long a resolved alert's state is kept
    delivery: DeliveryConfig = field(default_factory=DeliveryConfig)
    digest: DigestConfig = field(default_factory=DigestConfig)

    def validate(self):
        if self.interval_s < 1:
            return "interval_s", "a number of seconds >= 1"
        if not self.base_url.startswith(("http://", "https://")):
            return "base_url", "the dashboard's URL, http(s)://host:port"
        if not self.runbook_base_url.startswith(("http://", "https://")):
            return "runbook_base_url", "the runbooks' URL, http(s)://..."
        if _bad_duration(self.keep_resolved):
            return "keep_resolved", _DURATION
        names = [c.name for c in self.channels]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            return "channels", f"unique channel names; {dup[0]!r} is used twice"
        known = set(names)
        for name, over in self.builtin_rules.items():
            if name not in BUILTIN_RULES:
                return f"builtin_rules.{name}", f"one of the built-in rules: {', '.join(BUILTIN_RULES)}"
            allowed = BUILTIN_RULES[name].params
            for param in over.params:
                if param not in allowed:
                    return f"builtin_rules.{name}.params.{param}", f"one of {', '.join(allowed)}"
        rule_names = [r.name for r in self.rules]
        clash = sorted({n for n in rule_names if rule_names.count(n) > 1 or (self.builtin and n in BUILTIN_RULES)})
        if clash:
            return "rules", f"unique rule names; {clash[0]!r} is taken (built-in rules are overridden under builtin_rules)"
        places = [(f"rules[{i}].channels", r.channels) for i, r in enumerate(self.rules)]
        places += [(f"builtin_rules.{n}.channels", o.channels) for n, o in self.builtin_rules.items()]
        places += [(f"routes[{i}].channels", r.channels) for i, r in enumerate(self.routes)]
        places += [("default_channels", self.default_channels)]
        for key, channels in places:
            unknown = [c for c in channels if c not in known]
            if unknown:
                return key, f"names of channels defined under alerts.channels; {unknown[0]!r} is not one"
        from alerts.matchers import parse_matcher
        for i, rule in enumerate(self.inhibit):
            for side in ("source", "target"):
                for text in getattr(rule, side):
                    try:
                        parse_matcher(text)
                    except ValueError as exc:
                        return f"inhibit[{i}].{side}", str(exc)
        return None
