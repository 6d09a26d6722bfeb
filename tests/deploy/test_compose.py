"""docker-compose.yml, the Dockerfile and deploy/ hold together.

There is no Docker engine here (and often no compose plugin), so the compose file is checked
structurally against the compose specification's essentials — known keys, restart policies,
health checks, depends_on conditions, declared volumes, existing bind-mount sources — and every
reference inside it is followed: the gpuledger commands parse with the real CLI, the config
files load with the real config loader using the env files' variables, the URLs between services
match the ports and paths the code serves, Prometheus' config passes Debian's ``promtool``, the
ClickHouse XML parses. ``docker compose config`` runs too where the plugin is installed.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlparse

import yaml

from tests.helpers import ROOT

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]

TOP_LEVEL = {"name", "services", "volumes", "networks", "configs", "secrets", "include", "x-gpuledger"}
SERVICE_KEYS = {
    "build", "command", "container_name", "depends_on", "deploy", "entrypoint", "env_file", "environment",
    "expose", "healthcheck", "image", "labels", "logging", "networks", "pid", "ports", "profiles", "restart",
    "secrets", "configs", "stop_grace_period", "stop_signal", "tmpfs", "ulimits", "user", "volumes", "working_dir",
}
HEALTHCHECK_KEYS = {"test", "interval", "timeout", "retries", "start_period", "start_interval", "disable"}
DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$")
RESTART = {"no", "always", "unless-stopped", "on-failure"}
CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
GPULEDGER_IMAGE = "gpuledger:local"


def env_example(path: str) -> dict[str, str]:
    example = ROOT / f"{path}.example"
    assert example.exists(), f"{path} is named in docker-compose.yml but {example.name} is missing"
    out = {}
    for line in example.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f"{example}: {line!r} is not KEY=VALUE"
            out[key.strip()] = value.strip()
    return out


def service_env(name: str, fill: str = "x") -> dict[str, str]:
    """What the container's environment will hold: env files (secrets filled in) + environment."""
    service = SERVICES[name]
    env = {}
    for path in service.get("env_file", []):
        env.update({k: v or fill for k, v in env_example(path if isinstance(path, str) else path["path"]).items()})
    env.update({k: str(v) for k, v in (service.get("environment") or {}).items()})
    return env


def mounted(name: str, container_path: str) -> Path:
    for volume in SERVICES[name].get("volumes", []):
        source, target = volume.split(":")[:2]
        if target == container_path:
            return ROOT / source
    raise AssertionError(f"{name} mounts nothing at {container_path}")


def test_compose_file_has_only_known_keys_and_sane_services():
    assert set(COMPOSE) <= TOP_LEVEL, set(COMPOSE) - TOP_LEVEL
    assert {"clickhouse", "platform", "collector", "prometheus"} <= set(SERVICES)
    for name, service in SERVICES.items():
        assert set(service) <= SERVICE_KEYS, f"{name}: unknown keys {set(service) - SERVICE_KEYS}"
        assert "image" in service or "build" in service, name
        assert service.get("restart", "").split(":")[0] in RESTART, f"{name}: restart policy {service.get('restart')!r}"
        check = service.get("healthcheck")
        assert check and set(check) <= HEALTHCHECK_KEYS, f"{name}: health check missing or malformed"
        assert isinstance(check["test"], list) and check["test"][0] in ("CMD", "CMD-SHELL"), name
        for key in ("interval", "timeout", "start_period"):
            assert DURATION.match(str(check.get(key, "30s"))), f"{name}: healthcheck.{key}"
        assert isinstance(check.get("retries", 3), int)
        for port in service.get("ports", []):
            assert re.fullmatch(r"(\d+\.\d+\.\d+\.\d+:)?\d+:\d+", str(port)), f"{name}: port {port!r}"
        image = service.get("image", "")
        if image and image != GPULEDGER_IMAGE:
            assert re.fullmatch(r"[\w./-]+:[\w.-]+", image) and not image.endswith(":latest"), f"{name}: pin {image!r}"


def test_depends_on_points_at_services_that_can_satisfy_the_condition():
    for name, service in SERVICES.items():
        for dep, spec in (service.get("depends_on") or {}).items():
            assert dep in SERVICES, f"{name} depends on unknown service {dep}"
            assert spec["condition"] in CONDITIONS
            if spec["condition"] == "service_healthy":
                assert "healthcheck" in SERVICES[dep], f"{name} waits for {dep} to be healthy, which has no health check"
            dep_profiles = set(SERVICES[dep].get("profiles", []))
            assert not dep_profiles or dep_profiles & set(service.get("profiles", [])), \
                f"{name} depends on {dep}, which only starts with profile {dep_profiles}"


def test_volumes_are_declared_and_bind_sources_exist():
    declared = set(COMPOSE.get("volumes") or {})
    used = set()
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            parts = volume.split(":")
            source = parts[0]
            if source.startswith((".", "/")):
                assert (ROOT / source).exists(), f"{name}: bind mount source {source} does not exist"
                assert parts[-1] == "ro", f"{name}: configuration {source} should be mounted read-only"
            else:
                assert source in declared, f"{name}: volume {source} is not declared at the top level"
                used.add(source)
    assert used == declared, f"declared but unused volumes: {declared - used}"
    assert "clickhouse-data" in used and "agent-spool" in used        # data and the spool persist


def test_images_and_commands_exist_in_the_project():
    from gpuledger.cli import parser

    builders = [s for s in SERVICES.values() if "build" in s]
    assert builders and all(s["image"] == GPULEDGER_IMAGE for s in builders)
    dockerfile = (ROOT / builders[0]["build"] / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", dockerfile, re.M)
    assert "python -m build --wheel" in dockerfile and re.search(r"pip install \S+/gpuledger-\*\.whl", dockerfile)
    assert "-e ." not in dockerfile                                 # the image installs the wheel, never the checkout
    assert 'ENTRYPOINT ["gpuledger"]' in dockerfile
    for name, service in SERVICES.items():
        if service.get("image") != GPULEDGER_IMAGE:
            continue
        command = service.get("command") or ["up", "--host", "0.0.0.0"]
        args = parser().parse_args(command)                   # SystemExit if the command does not exist
        assert callable(args.func), name
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = project["tool"]["setuptools"]["packages"]["find"]["include"]
    copied = [src for line in re.findall(r"^COPY (.+)$", dockerfile, re.M) for src in line.split()[:-1]]
    for package in [p.rstrip("*") for p in packages] + ["sql", "pyproject.toml", "README.md"]:
        assert package in copied, f"the image lacks {package}"
        assert (ROOT / package).exists()
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert not set(ignored) & set(copied), "the .dockerignore excludes something the Dockerfile copies"


def test_env_files_are_examples_without_secrets_and_git_ignored():
    ignore = (ROOT / "deploy" / ".gitignore").read_text().split()
    for service in SERVICES.values():
        for path in service.get("env_file", []):
            assert path.startswith("deploy/") and path.endswith(".env") and "*.env" in ignore
            for key, value in env_example(path).items():
                if re.search(r"PASSWORD|TOKEN|SECRET", key):
                    assert value == "", f"{path}.example ships a value for {key}"
    text = (ROOT / "docker-compose.yml").read_text()
    assert not re.search(r"(PASSWORD|TOKEN)\s*[:=]\s*\S", text.replace("$$", "")), "a secret written in the compose file"


def test_make_secrets_fills_every_secret(tmp_path):
    work = tmp_path / "deploy"
    shutil.copytree(ROOT / "deploy", work)
    for leftover in work.glob("*.env"):
        leftover.unlink()
    out = subprocess.run(["sh", str(work / "make-secrets.sh")], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    for env_file in ("clickhouse.env", "ingest.env"):
        values = dict(line.split("=", 1) for line in (work / env_file).read_text().splitlines()
                      if line and not line.startswith("#"))
        for key, value in values.items():
            if re.search(r"PASSWORD|TOKEN", key):
                assert re.fullmatch(r"[0-9a-f]{48}", value), (env_file, key)
        assert oct((work / env_file).stat().st_mode & 0o777) == "0o600"
    again = subprocess.run(["sh", str(work / "make-secrets.sh")], capture_output=True, text=True, timeout=30)
    assert "exists, kept" in again.stdout


def test_platform_config_loads_and_points_at_the_clickhouse_service():
    from gpuledger import config as configuration

    env = service_env("platform")
    cfg = configuration.load(str(mounted("platform", env["GPULEDGER_CONFIG"])), env=env)
    dsn = urlparse(cfg.store.dsn)
    assert dsn.scheme == "http" and dsn.hostname == "clickhouse" and dsn.port == 8123
    assert dsn.username == env["CLICKHOUSE_USER"] and dsn.path.strip("/") == env["CLICKHOUSE_DB"]
    assert cfg.store.password.get() == env["CLICKHOUSE_PASSWORD"]
    assert cfg.receiver.token.get() == env["GPULEDGER_INGEST_TOKEN"]
    assert cfg.server.host == "0.0.0.0"
    assert f"{cfg.server.port}:{cfg.server.port}" in SERVICES["platform"]["ports"]
    assert str(cfg.server.port) in " ".join(SERVICES["platform"]["healthcheck"]["test"])


def test_collector_config_pushes_to_the_platform_with_the_same_token():
    from gpuledger import config as configuration

    env = service_env("collector")
    cfg = configuration.load(str(mounted("collector", env["GPULEDGER_CONFIG"])), env=env)
    platform = configuration.load(str(mounted("platform", "/etc/gpuledger/gpuledger.toml")), env=service_env("platform"))
    push = urlparse(cfg.collector.push_url)
    assert push.hostname == "platform" and push.port == platform.server.port
    assert cfg.collector.push_token.get() == platform.receiver.token.get()
    spool_volume = [v for v in SERVICES["collector"]["volumes"] if v.startswith("agent-spool:")][0]
    assert spool_volume.split(":")[1] == cfg.collector.spool_dir
    assert str(cfg.collector.port) in " ".join(SERVICES["collector"]["healthcheck"]["test"])
    assert SERVICES["collector"]["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]


def test_prometheus_config_is_valid_and_writes_to_the_receiver(tmp_path):
    from gpuledger import config as configuration
    from ingest.receiver import WRITE_PATH

    source = mounted("prometheus", "/etc/prometheus/prometheus.yml")
    doc = yaml.safe_load(source.read_text())
    platform = configuration.load(str(mounted("platform", "/etc/gpuledger/gpuledger.toml")), env=service_env("platform"))
    collector = configuration.load(str(mounted("collector", "/etc/gpuledger/collector.toml")), env=service_env("collector"))
    [write] = doc["remote_write"]
    url = urlparse(write["url"])
    assert (url.hostname, url.port, url.path) == ("platform", platform.server.port, WRITE_PATH)
    token_file = write["authorization"]["credentials_file"]
    assert token_file in " ".join(SERVICES["prometheus"]["entrypoint"])
    targets = [t for job in doc["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    assert f"collector:{collector.collector.port}" in targets
    local = tmp_path / "prometheus.yml"                        # promtool wants the token file to exist
    (tmp_path / "token").write_text("t")
    local.write_text(source.read_text().replace(token_file, str(tmp_path / "token")))
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian package prometheus, installed by scripts/test.sh) is needed"
    out = subprocess.run([promtool, "check", "config", str(local)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_clickhouse_reader_user_gets_its_password_from_the_environment():
    env = service_env("clickhouse")
    users = ET.parse(mounted("clickhouse", "/etc/clickhouse-server/users.d/gpuledger-reader.xml")).getroot()
    reader = users.find("users/reader")
    assert reader.find("password").get("from_env") in env
    assert (reader.find("password").text or "").strip() == ""
    profile = users.find(f"profiles/{reader.findtext('profile')}")
    assert profile.findtext("readonly") in ("1", "2")
    grants = [q.text for q in reader.findall("grants/query")]      # the list: tests/gpuledger/test_reader_role.py
    assert grants and all(g.startswith(f"GRANT SELECT ON {env['CLICKHOUSE_DB']}.") for g in grants)
    ET.parse(mounted("clickhouse", "/etc/clickhouse-server/config.d/gpuledger.xml"))
    check = " ".join(SERVICES["clickhouse"]["healthcheck"]["test"])
    assert "$$CLICKHOUSE_USER" in check and "CLICKHOUSE_USER" in env and "CLICKHOUSE_PASSWORD" in env
