"""deploy/prometheus/gpuledger-rules.yml: gpuledger's alerting rules about itself.

Debian's ``promtool`` checks the rules and runs their unit tests (series that fire, with their
labels and rendered annotations, and healthy series that do not); every rule links a runbook
section of docs/operations.md that exists; the rules read only the metric names of the
self-metrics contract (issue 19), which docs/operations.md lists; the compose Prometheus loads
the file and scrapes the platform with the receiver token.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import PurePosixPath
from urllib.parse import urlparse

import yaml

from tests.helpers import ROOT

RULES = ROOT / "deploy" / "prometheus" / "gpuledger-rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "gpuledger-rules.test.yml"
OPERATIONS = ROOT / "docs" / "operations.md"
RUNBOOK_BASE = "https://github.com/gpuledger/gpuledger/blob/main/docs/operations.md"
ALERTS = {"GpuledgerPlatformDown", "GpuledgerIngestStalled", "GpuledgerAgentSilent", "GpuledgerSpoolGrowing",
          "GpuledgerDerivationLate", "GpuledgerDerivationFailing", "GpuledgerNotificationsFailing",
          "GpuledgerStoreDiskNearlyFull"}
SEVERITIES = {"warning", "critical"}

# What the code exposes: the names the platform's /metrics (gpuledger/selfmetrics.py) and the
# agent's (collector/) register, as Prometheus shows them (a counter gets _total), and what
# Prometheus and prometheus_client add.
def exposed() -> set[str]:
    sources = [ROOT / "gpuledger" / "selfmetrics.py", *sorted((ROOT / "collector").glob("*.py"))]
    names = {n for path in sources for n in re.findall(r'"(gpuledger_[a-z_]+)"', path.read_text())}
    return names | {f"{n}_total" for n in names} | {"up", "process_start_time_seconds"}

PROMQL_WORDS = {"and", "or", "unless", "on", "ignoring", "by", "without", "group_left", "group_right",
                "bool", "offset", "inf", "nan"}


def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool (Debian package prometheus, installed by scripts/test.sh) is needed"
    return found


def rules() -> list[dict]:
    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are neither functions,
    keywords, label names (inside {} or the lists of by/on/…) nor durations."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)                     # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)                                # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)                               # ranges
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", expr):
        word, call = match.groups()
        if not call and word.lower() not in PROMQL_WORDS:
            names.add(word)
    return names


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of ``markdown``: the text lower-cased, punctuation
    except - and _ dropped, spaces made -, repeats numbered -1, -2, …; code blocks skipped."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def test_promtool_checks_the_rules():
    out = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(rules())} rules found" in out.stdout


def test_promtool_unit_tests_pass_and_cover_every_alert_firing_and_not():
    out = subprocess.run([promtool(), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True,
                         timeout=300, cwd=RULE_TESTS.parent)
    assert out.returncode == 0, out.stdout + out.stderr
    cases = [case for test in yaml.safe_load(RULE_TESTS.read_text())["tests"] for case in test["alert_rule_test"]]
    fired = {c["alertname"] for c in cases if c.get("exp_alerts")}
    quiet = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    assert fired == ALERTS, f"no test where these fire: {ALERTS - fired}"
    assert quiet >= ALERTS - {"GpuledgerStoreDiskNearlyFull"}, f"no test where these stay quiet: {ALERTS - quiet}"
    for severity in SEVERITIES:      # the disk's healthy instance is quiet beside the two that fire
        assert any(a["exp_labels"].get("severity") == severity for c in cases for a in c.get("exp_alerts") or [])


def test_every_rule_is_labelled_annotated_and_held():
    assert {rule["alert"] for rule in rules()} == ALERTS
    for rule in rules():
        name = rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, name
        assert re.fullmatch(r"\d+[smh]", rule.get("for", "")), f"{name} has no for: duration"
        assert {"summary", "description", "runbook_url"} <= set(rule["annotations"]), name


def test_every_runbook_url_resolves_to_a_section_of_docs_operations():
    anchors = github_anchors(OPERATIONS.read_text())
    assert "ingest-stalled" in anchors and "store-disk-nearly-full" in anchors      # the slugger works
    for rule in rules():
        url = urlparse(rule["annotations"]["runbook_url"])
        assert url._replace(fragment="").geturl() == RUNBOOK_BASE, rule["alert"]
        assert url.fragment in anchors, f"{rule['alert']}: no heading #{url.fragment} in docs/operations.md"
        section = OPERATIONS.read_text().split("\n## ")                               # the section names the alert
        assert any(s.lower().startswith(url.fragment.replace("-", " ")) and f"**{rule['alert']}**" in s
                   for s in section), rule["alert"]


def test_github_anchors_follow_githubs_rules():
    doc = "# Operating gpuledger\n## Agent silent\n```sh\n# not a heading\n```\n## `gpuledger up` (the platform)\n## Agent silent\n"
    assert github_anchors(doc) == {"operating-gpuledger", "agent-silent", "gpuledger-up-the-platform", "agent-silent-1"}


def test_rules_read_only_metrics_the_code_exposes_and_docs_list_them():
    assert metric_names('sum by (job) (rate(a_total{x="y"}[5m])) > 0 and on (job, instance) b unless c offset 5m') \
        == {"a_total", "b", "c"}
    used = set().union(*(metric_names(rule["expr"]) for rule in rules()))
    assert used - exposed() == set(), f"metrics no code exposes: {used - exposed()}"
    documented = set(re.findall(r"`([a-z_:]+)(?:\{[^`]*\})?`", OPERATIONS.read_text()))
    assert used - documented == set(), f"docs/operations.md does not list {used - documented}"


def test_compose_prometheus_loads_the_rules_and_scrapes_the_platform(tmp_path):
    from gpuledger import config as configuration
    from tests.deploy.test_compose import SERVICES, mounted, service_env

    config_path = mounted("prometheus", "/etc/prometheus/prometheus.yml")
    doc = yaml.safe_load(config_path.read_text())
    [rule_glob] = doc["rule_files"]                 # a glob: promtool accepts it before the mount exists
    targets = [v.split(":")[1] for v in SERVICES["prometheus"]["volumes"] if fnmatch(v.split(":")[1], rule_glob)]
    assert [mounted("prometheus", t) for t in targets] == [RULES]
    platform = configuration.load(str(mounted("platform", "/etc/gpuledger/gpuledger.toml")), env=service_env("platform"))
    [job] = [j for j in doc["scrape_configs"] if j["job_name"] == "gpuledger"]          # the rules' up{job=…}
    assert job["static_configs"][0]["targets"] == [f"platform:{platform.server.port}"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    token_file = job["authorization"]["credentials_file"]
    assert token_file in " ".join(SERVICES["prometheus"]["entrypoint"])                 # written at start
    assert platform.receiver.token.get()                                                  # which /metrics wants
    (tmp_path / "token").write_text("t")
    local = tmp_path / "prometheus.yml"
    (tmp_path / "rules").mkdir()
    shutil.copy(RULES, tmp_path / "rules" / RULES.name)
    local.write_text(config_path.read_text().replace(token_file, str(tmp_path / "token"))
                     .replace(str(PurePosixPath(rule_glob).parent), str(tmp_path / "rules")))
    out = subprocess.run([promtool(), "check", "config", str(local)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 9 rules found" in out.stdout        # promtool followed rule_files to our rules
