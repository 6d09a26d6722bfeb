"""The [alerts] config section: typed, validated, secrets only by reference and never shown."""
import tomllib
from dataclasses import dataclass, field

import pytest

from alerts.config import AlertsConfig
from alerts.rules import rules_from_config
from base.errors import ConfigError
from base.settings import build

FULL = """
[alerts]
base_url = "https://gpuledger.example.org"
interval_s = 30
default_channels = ["ops"]

[alerts.builtin_rules.gpu_idle_window]
params = { min_hours = 4, stale_minutes = 20 }
severity = "critical"
channels = ["ops"]

[[alerts.rules]]
name = "hot_gpus"
query = "SELECT host, max(temperature_c) AS value FROM gpu_samples GROUP BY host HAVING value > {max_c:Float64}"
params = { max_c = 85 }
for_duration = "10m"
repeat_interval = "1h"
group_by = ["alertname", "host"]
annotations = { summary = "{host} at {value:.0f} C" }

[[alerts.channels]]
name = "ops"
type = "slack"
url = { env = "SLACK_URL" }

[[alerts.channels]]
name = "mail"
type = "email"
smtp_host = "smtp.example.org"
smtp_user = "alerts"
smtp_password = { file = "PASSWORD_FILE" }
email_from = "gpuledger@example.org"
email_to = ["oncall@example.org"]

[[alerts.channels]]
name = "am"
type = "alertmanager"
endpoint = "http://alertmanager:9093"

[[alerts.routes]]
match = { team = "vision" }
channels = ["mail"]

[[alerts.inhibit]]
source = ["alertname=team_budget_exceeded"]
target = ["alertname=team_budget_forecast"]
equal = ["team"]
"""


@dataclass
class Top:
    alerts: AlertsConfig = field(default_factory=AlertsConfig)


def load(text: str, env=None) -> AlertsConfig:
    return build(Top, tomllib.loads(text), "", "gpuledger.toml", env or {}).alerts


def test_full_section_loads_with_secrets_from_env_and_file(tmp_path):
    secret_file = tmp_path / "smtp"
    secret_file.write_text("mail-pass\n")
    cfg = load(FULL.replace("PASSWORD_FILE", str(secret_file)),
               {"SLACK_URL": "https://hooks.slack.com/services/T/B/xyz"})
    ops, mail, am = cfg.channels
    assert ops.url.get().endswith("/xyz") and mail.smtp_password.get() == "mail-pass"
    assert "xyz" not in repr(cfg) and "mail-pass" not in repr(cfg)
    rules = {r.name: r for r in rules_from_config(cfg)}
    assert rules["gpu_idle_window"].params == {"min_hours": 4.0, "stale_minutes": 20.0}
    assert rules["gpu_idle_window"].severity == "critical" and rules["gpu_idle_window"].channels == ("ops",)
    assert rules["hot_gpus"].for_s == 600 and rules["hot_gpus"].repeat_interval_s == 3600
    assert rules["hot_gpus"].params == {"max_c": 85.0}
    assert len(rules) == 10


def test_defaults_turn_the_builtin_pack_on():
    cfg = AlertsConfig()
    assert cfg.enabled and cfg.builtin and cfg.interval_s == 60
    assert [r.name for r in rules_from_config(cfg)][:2] == ["gpu_idle_window", "team_utilization_low"]
    assert rules_from_config(AlertsConfig(builtin=False)) == []


def test_query_file_is_read_relative_to_the_config(tmp_path):
    (tmp_path / "rule.sql").write_text("SELECT 1 AS value")
    cfg = load('[alerts]\nbuiltin = false\n[[alerts.rules]]\nname = "x"\nquery_file = "rule.sql"\n')
    assert rules_from_config(cfg, tmp_path)[0].sql == "SELECT 1 AS value"


@pytest.mark.parametrize("text, message", [
    ('[[alerts.channels]]\nname = "s"\ntype = "slack"\nurl = "https://hooks.slack.com/services/T/B/leak"\n',
     "key 'alerts.channels[0].url': expected a secret reference"),
    ('[[alerts.channels]]\nname = "s"\ntype = "slack"\n', "key 'alerts.channels[0].url': expected the Slack incoming-webhook URL"),
    ('[[alerts.channels]]\nname = "s"\ntype = "pager"\n', "key 'alerts.channels[0].type': expected one of 'slack'"),
    ('[alerts]\ndefault_channels = ["nope"]\n', "key 'alerts.default_channels': expected names of channels"),
    ('[alerts.builtin_rules.gpu_idle]\nenabled = false\n', "key 'alerts.builtin_rules.gpu_idle': expected one of the built-in rules"),
    ('[alerts.builtin_rules.gpu_idle_window]\nparams = { min_hourz = 3 }\n',
     "key 'alerts.builtin_rules.gpu_idle_window.params.min_hourz': expected one of min_hours, stale_minutes"),
    ('[[alerts.rules]]\nname = "x"\nquery = "SELECT 1"\nfor_duration = "ten minutes"\n',
     "key 'alerts.rules[0].for_duration': expected a duration like 30s"),
    ('[[alerts.rules]]\nname = "x"\n', "key 'alerts.rules[0].query': expected exactly one of query"),
    ('[[alerts.rules]]\nname = "gpu_idle_window"\nquery = "SELECT 1"\n', "key 'alerts.rules': expected unique rule names"),
    ('[[alerts.inhibit]]\nsource = ["severity"]\ntarget = ["x=y"]\n', "key 'alerts.inhibit[0].source': expected matcher 'severity'"),
    ('[alerts]\nbase_url = "dash:8050"\n', "key 'alerts.base_url': expected the dashboard's URL"),
])
def test_bad_alerts_config_names_the_key(text, message):
    with pytest.raises(ConfigError) as info:
        load(text)
    assert message in str(info.value)
    assert "leak" not in str(info.value)


def test_missing_secret_variable_is_named_not_shown():
    with pytest.raises(ConfigError, match="environment variable SLACK_URL, which is not set"):
        load('[[alerts.channels]]\nname = "s"\ntype = "slack"\nurl = { env = "SLACK_URL" }\n')


@pytest.mark.parametrize("channel, env, message", [
    ('type = "webhook"\nurl = { env = "HOOK" }', {"HOOK": "https://hooks.example:99999/T0/s3cret"},
     "key 'alerts.channels[0].url': expected an http(s)://host[:port]/path URL; this one has a port that is not a number"),
    ('type = "slack"\nurl = { env = "HOOK" }', {"HOOK": "https://hooks.example:abc/services/s3cret"},
     "key 'alerts.channels[0].url': expected an http(s)://host[:port]/path URL; this one has a port"),
    ('type = "slack"\nurl = { env = "HOOK" }', {"HOOK": "hooks.slack.com/services/s3cret"},
     "key 'alerts.channels[0].url': expected an http(s)://host[:port]/path URL; this one has no scheme"),
    ('type = "webhook"\nendpoint = "https://hooks.example:0/x"', {}, "key 'alerts.channels[0].endpoint': expected an http(s)"),
    ('type = "alertmanager"\nendpoint = "http://alertmanager:90930"', {}, "key 'alerts.channels[0].endpoint': expected an http(s)"),
    ('type = "alertmanager"\nendpoint = "ftp://alertmanager:9093"', {}, "this one has scheme 'ftp'"),
    ('type = "email"\nsmtp_host = "smtp.example"\nsmtp_port = 70000\nemail_from = "a@x"\nemail_to = ["b@x"]', {},
     "key 'alerts.channels[0].smtp_port': expected a TCP port from 1 to 65535"),
])
def test_a_channel_url_that_cannot_work_is_a_config_error(channel, env, message):
    with pytest.raises(ConfigError) as info:
        load(f'[[alerts.channels]]\nname = "c"\n{channel}\n', env)
    assert message in str(info.value) and "s3cret" not in str(info.value)
    assert "\n" not in str(info.value)


def test_good_channel_urls_load():
    cfg = load('[[alerts.channels]]\nname = "am"\ntype = "alertmanager"\nendpoint = "http://[::1]:9093"\n'
               '[[alerts.channels]]\nname = "h"\ntype = "webhook"\nurl = { env = "HOOK" }\n',
               {"HOOK": "https://hooks.example:8443/x?token=1"})
    assert [c.name for c in cfg.channels] == ["am", "h"]
