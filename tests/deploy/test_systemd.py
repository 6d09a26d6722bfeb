"""deploy/systemd/ holds: the units pass `systemd-analyze verify` and a sandbox check, their
ExecStart= lines parse with gpuledger's own parser, their users come from the sysusers file,
the sandbox keeps what owner discovery needs, and the environment files hold exactly the
variables the agent and the platform read."""
from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuledger import config as configuration
from gpuledger.cli import collect as collect_cli
from gpuledger.cli import parser
from tests.helpers import ROOT

SYSTEMD = ROOT / "deploy" / "systemd"
UNITS = ("gpuledger-collect.service", "gpuledger-up.service")
INSTALLED = "/opt/gpuledger/venv/bin/gpuledger"        # where docs/deploy.md installs the venv
ANALYZE = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
ENTRY_POINT = Path(sys.executable).parent / "gpuledger"   # the venv's own `gpuledger`


def directives(unit: str) -> dict[str, list[str]]:
    """``Key -> [values]`` of a unit file (every section; comments and blanks skipped)."""
    found: dict[str, list[str]] = {}
    for line in (SYSTEMD / unit).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def env_file(name: str) -> dict[str, str]:
    """The variables an EnvironmentFile= sets, with systemd's quoting of a whole value."""
    values = {}
    for line in (SYSTEMD / name).read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            values[key.strip()] = value
    return values


def commented_env(name: str) -> set[str]:
    """Variables shown commented out (``#NAME=``) in an environment file."""
    return {line[1:].partition("=")[0] for line in (SYSTEMD / name).read_text().splitlines()
            if line.startswith("#") and "=" in line and line[1:].partition("=")[0].isupper()}


def exec_args(unit: str) -> list[str]:
    (line,) = directives(unit)["ExecStart"]
    argv = shlex.split(line)
    assert argv[0] == INSTALLED, f"{unit}: ExecStart= should run {INSTALLED}"
    return argv[1:]


@pytest.fixture(scope="module")
def unit_dir(tmp_path_factory) -> Path:
    """The units, with ExecStart= pointing at this venv's `gpuledger` (verify checks it exists)."""
    assert Path(ANALYZE).exists(), "systemd-analyze is needed: apt-get install systemd"
    assert ENTRY_POINT.exists(), f"no {ENTRY_POINT}: install the package into the venv (scripts/venv.sh)"
    out = tmp_path_factory.mktemp("units")
    for unit in UNITS:
        text = (SYSTEMD / unit).read_text()
        assert INSTALLED in text
        (out / unit).write_text(text.replace(INSTALLED, str(ENTRY_POINT)))
    return out


def analyze(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([ANALYZE, *args], capture_output=True, text=True, timeout=60)


def test_the_units_pass_systemd_analyze_verify(unit_dir):
    done = analyze("verify", "--man=no", *(str(unit_dir / u) for u in UNITS))
    said = (done.stdout + done.stderr).strip()
    assert done.returncode == 0 and said == "", said


def test_verify_would_see_a_broken_unit(unit_dir, tmp_path):
    broken = tmp_path / "gpuledger-collect.service"
    text = (unit_dir / UNITS[0]).read_text().replace(str(ENTRY_POINT), "/nonexistent/gpuledger")
    broken.write_text(text.replace("Type=exec", "Type=exec\nProtectProcess=yes"))
    done = analyze("verify", "--man=no", str(broken))
    said = done.stdout + done.stderr
    assert "Unknown key 'ProtectProcess'" in said and "/nonexistent/gpuledger is not executable" in said


@pytest.mark.parametrize("unit", UNITS)
def test_the_sandbox_rates_ok(unit_dir, unit):
    """`systemd-analyze security` rates exposure 0-10; both stay under 2.5 ("OK")."""
    done = analyze("security", "--offline=yes", "--threshold=25", "--no-pager", str(unit_dir / unit))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr


def test_execstart_flags_parse_with_gpuledgers_own_parser():
    agent = parser().parse_args(exec_args("gpuledger-collect.service"))
    assert agent.command == "collect" and agent.func is collect_cli.cmd_collect
    assert agent.spool_dir == "/var/lib/gpuledger/spool"
    up = parser().parse_args(exec_args("gpuledger-up.service"))
    assert up.command == "up" and up.config == "/etc/gpuledger/gpuledger.toml"


def test_a_flag_the_parser_does_not_know_is_refused():
    with pytest.raises(SystemExit):
        parser().parse_args(["collect", "--spool", "/var/lib/gpuledger/spool"])


def test_the_spool_and_the_store_are_the_units_state_directories():
    collect, up = directives(UNITS[0]), directives(UNITS[1])
    assert collect["StateDirectory"] == ["gpuledger/spool"]
    assert "--spool-dir /var/lib/gpuledger/spool" in collect["ExecStart"][0]
    assert up["StateDirectory"] == ["gpuledger/store"]
    cfg = configuration.load(str(SYSTEMD / "gpuledger.toml"), env=env_file("gpuledger-up.env.example"))
    assert cfg.store.dsn == "chdb:///var/lib/gpuledger/store"


def test_the_users_come_from_the_sysusers_file(tmp_path):
    """systemd-sysusers creates the units' users in a scratch root; they differ (one owner per
    state directory) and run with no capabilities."""
    (tmp_path / "etc").mkdir()
    sysusers = shutil.which("systemd-sysusers") or "/usr/bin/systemd-sysusers"
    done = subprocess.run([sysusers, f"--root={tmp_path}", str(SYSTEMD / "gpuledger.sysusers.conf")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    users = {line.split(":")[0] for line in (tmp_path / "etc" / "passwd").read_text().splitlines()}
    groups = {line.split(":")[0] for line in (tmp_path / "etc" / "group").read_text().splitlines()}
    for unit in UNITS:
        d = directives(unit)
        assert d["User"][0] in users and d["Group"][0] in groups, unit
        assert d["CapabilityBoundingSet"] == [""] and d["NoNewPrivileges"] == ["yes"], unit
    assert directives(UNITS[0])["User"] != directives(UNITS[1])["User"]


def test_the_agents_sandbox_keeps_what_owner_discovery_and_nvml_need():
    d = directives("gpuledger-collect.service")
    # other users' /proc/<pid>/status and cgroup stay visible, with their real uids
    assert d.get("ProtectProc", ["default"]) == ["default"]
    assert d.get("ProcSubset", ["all"]) == ["all"]
    assert d.get("PrivateUsers", ["no"]) == ["no"]
    assert d.get("DynamicUser", ["no"]) == ["no"]
    # /dev/nvidia* stays reachable: not hidden, and allowed by the closed device policy
    assert d.get("PrivateDevices", ["no"]) == ["no"]
    assert d["DevicePolicy"] == ["closed"] and d["DeviceAllow"] == ["char-nvidia* rw"]
    assert d["SupplementaryGroups"] == ["video"]
    assert "MemoryDenyWriteExecute" not in d
    assert d["Restart"] == ["always"] and d["EnvironmentFile"] == ["/etc/gpuledger/collect.env"]


def known_variables() -> set[str]:
    """Every GPULEDGER_<SECTION>_<KEY> override the config reads, and GPULEDGER_CONFIG."""
    names = {"GPULEDGER_CONFIG"}
    for section, fld in configuration.SECTIONS.items():
        cls = fld.default_factory
        if isinstance(cls, type) and hasattr(cls, "__dataclass_fields__"):
            names |= {f"{configuration.ENV_PREFIX}{section}_{name}".upper() for name in cls.__dataclass_fields__}
    return names


def test_the_agents_env_file_holds_variables_the_agent_reads():
    env = env_file("gpuledger-collect.env.example")
    assert set(env) | commented_env("gpuledger-collect.env.example") <= known_variables()
    assert {"GPULEDGER_COLLECTOR_PUSH_URL", "GPULEDGER_COLLECTOR_PUSH_TOKEN"} <= set(env)
    # what the agent would run with: no config file, the env file with a token, the unit's flags
    env = {**env, "GPULEDGER_COLLECTOR_PUSH_TOKEN": "node-token"}
    cfg = configuration.load(None, env=env)
    args = parser().parse_args(exec_args("gpuledger-collect.service"))
    c = collect_cli.settings(args, cfg)
    assert c.push_url == "http://gpuledger.example.internal:8050"
    assert c.push_token.get() == "node-token"
    assert c.labels == {"environment": "onprem", "cluster": "slurm-a", "pool": "h100"}
    assert c.spool_dir == "/var/lib/gpuledger/spool" and c.port == 9400 and c.interval_s == 10


def test_the_platforms_env_file_holds_the_secrets_its_config_names():
    env = {**env_file("gpuledger-up.env.example"), "GPULEDGER_INGEST_TOKEN": "platform-token"}
    named = set(env) | commented_env("gpuledger-up.env.example")
    toml = (SYSTEMD / "gpuledger.toml").read_text()
    for name in named:
        assert f'env = "{name}"' in toml or name in known_variables(), name
    cfg = configuration.load(str(SYSTEMD / "gpuledger.toml"), env=env)
    assert cfg.receiver.token.get() == "platform-token"
    assert (cfg.server.host, cfg.server.port) == ("0.0.0.0", 8050)
    assert cfg.collector.local_sampling is False
