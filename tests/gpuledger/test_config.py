import pytest

from base.errors import ConfigError
from gpuledger.config import DEFAULT_DSN, load


def write(tmp_path, text):
    path = tmp_path / "gpuledger.toml"
    path.write_text(text)
    return str(path)


def test_defaults_without_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = load(env={})
    assert cfg.store.dsn == DEFAULT_DSN and cfg.server.port == 8050 and cfg.source == "defaults"


def test_environment_overrides_file(tmp_path):
    path = write(tmp_path, '[store]\ndsn = "chdb:///from/file"\n[server]\nport = 9000\n')
    cfg = load(path, env={"GPULEDGER_STORE_DSN": "http://ch:8123/x", "GPULEDGER_SERVER_PORT": "9100"})
    assert (cfg.store.dsn, cfg.server.port) == ("http://ch:8123/x", 9100)


@pytest.mark.parametrize("text, message", [
    ('[store]\ndsnn = "x"\n', "unknown key 'store.dsnn'; keys allowed in store: cluster, cluster_http_port, dsn, insert_batch_rows, password, raw_retention_days"),
    ('[server]\nport = "eighty"\n', "key 'server.port': expected a whole number, got 'eighty'"),
    ('[server]\nport = 70000\n', "key 'server.port': expected a TCP port between 1 and 65535"),
    ('[[teams]]\nbudget_usd_month = 5\n', "key 'teams[0].name': expected a value (str); this key is required"),
    ('[store]\npassword = "hunter2"\n', "key 'store.password': expected a secret reference"),
    ('[store\n', "not valid TOML"),
    ('[[teams]]\nname = "a"\n[[teams]]\nname = "vision"\ncontact = "#vision-oncall"\n',
     "key 'teams[1].contact': expected the name of a channel under [[alerts.channels]] (none is configured yet) "
     "for team vision's alerts, got '#vision-oncall'"),
    ('[[teams]]\nname = "vision"\ncontact = "vision-slak"\n[[alerts.channels]]\nname = "vision-slack"\n'
     'type = "webhook"\nendpoint = "http://hooks.invalid/x"\n',
     "key 'teams[0].contact': expected the name of a channel under [[alerts.channels]] (one of vision-slack)"),
    ('[analytics]\ninterval_minutes = 30\n', "key 'alerts.builtin_rules.gpu_idle_window.params.stale_minutes': "
     "expected more than analytics.interval_minutes + analytics.idle_max_gap_minutes (32 minutes), got 30"),
])
def test_bad_config_names_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load(path, env={})
    assert str(info.value).startswith(path)
    assert message in str(info.value)
    assert "hunter2" not in str(info.value)


def test_secret_from_env_and_file_never_shown(tmp_path):
    secret_file = tmp_path / "pw"
    secret_file.write_text("from-file\n")
    path = write(tmp_path, f'[store]\ndsn = "http://reader@ch:8123/db"\npassword = {{ file = "{secret_file}" }}\n')
    cfg = load(path, env={})
    assert cfg.store.password.get() == "from-file"
    assert "from-file" not in repr(cfg)
    assert cfg.store_dsn() == "http://reader:from-file@ch:8123/db"
    missing = write(tmp_path, '[store]\npassword = { env = "NOPE" }\n')
    with pytest.raises(ConfigError, match="environment variable NOPE, which is not set"):
        load(missing, env={})


def test_example_config_is_valid_and_complete():
    """The shipped example loads, and documents every key the schema has."""
    import tomllib

    from gpuledger.config import Config
    from tests.helpers import ROOT, config_keys

    example = ROOT / "gpuledger.example.toml"
    load(str(example), env={"SLACK_WEBHOOK_URL": "https://hooks.invalid/x", "SMTP_PASSWORD": "x",
                            "GPULEDGER_DASHBOARD_PASSWORD": "x", "CLICKHOUSE_PASSWORD": "x",
                            "AZURE_CLIENT_SECRET": "x"})
    text = example.read_text()
    undocumented = sorted({k for k in config_keys(Config, skip=("source",)) if f"{k} =" not in text and f"[{k}]" not in text
                           and f"[[{k}]]" not in text and f".{k}]" not in text})
    assert undocumented == []
    tomllib.loads(text)
