"""deploy/kubernetes/ holds together and is valid Kubernetes.

There is no cluster here. Every manifest is validated against the Kubernetes OpenAPI schemas of
each version in ``VERSIONS`` with ``kubernetes-validate`` (schemas bundled, offline; strict: an
unknown or misspelt field fails). The ServiceMonitor is a Prometheus Operator CRD, not in those
schemas, so it is checked structurally: its required fields, its selector against the Service's
labels, its port name against the Service's ports. ``kubectl kustomize`` builds the kustomization
where kubectl is installed. Then every reference is followed: the agent's arguments parse with the
real ``gpuledger collect`` parser and, with the ConfigMap's TOML and the Secret's keys, give the
node's name as host, a push URL that reaches the platform's Service, and the spool on its volume;
the platform's config loads with the real loader and points at the ClickHouse Service; Secret keys
exist in secret.example.yaml (which ships no values) and match the compose env files; images match
the Dockerfile's and docker-compose.yml's; selectors, labels, ports and ConfigMap keys agree.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import all_versions

from tests.helpers import ROOT

KUBE = ROOT / "deploy" / "kubernetes"
VERSIONS = ("1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35")      # docs/deploy.md, "Kubernetes"
NAMESPACE = "gpuledger"
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def kustomization(folder: Path) -> dict:
    return yaml.safe_load((folder / "kustomization.yaml").read_text())


BASE = [d for name in kustomization(KUBE)["resources"] for d in docs(KUBE / name)]
MONITORING = [d for name in kustomization(KUBE / "monitoring")["resources"] for d in docs(KUBE / "monitoring" / name)]
SECRETS = docs(KUBE / "secret.example.yaml")


def one(kind: str, name: str, objects=BASE) -> dict:
    found = [d for d in objects if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def container(workload: dict, name: str) -> dict:
    return next(c for c in workload["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def secret_keys() -> dict[str, dict[str, str]]:
    return {s["metadata"]["name"]: s["stringData"] for s in SECRETS}


def env_of(c: dict, node_name: str = "gpu-node-7", fill: str = "s3cret", host_ip: str = "10.20.3.17") -> dict[str, str]:
    """The container's environment as the kubelet builds it: envFrom Secrets, then env (secret
    values and the downward API filled in)."""
    secrets = secret_keys()
    env = {}
    for source in c.get("envFrom", []):
        ref = source["secretRef"]["name"]
        assert ref in secrets, f"{c['name']} reads Secret {ref}, which secret.example.yaml lacks"
        env.update({k: v or fill for k, v in secrets[ref].items()})
    for var in c.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        elif "secretKeyRef" in var["valueFrom"]:
            ref = var["valueFrom"]["secretKeyRef"]
            assert ref["key"] in secrets.get(ref["name"], {}), f"{c['name']}: Secret {ref['name']} has no key {ref['key']}"
            env[var["name"]] = secrets[ref["name"]][ref["key"]] or fill
        else:
            field = var["valueFrom"]["fieldRef"]["fieldPath"]
            assert field in ("spec.nodeName", "status.hostIP"), var
            env[var["name"]] = node_name if field == "spec.nodeName" else host_ip
    return env


def expand(args: list[str], env: dict[str, str]) -> list[str]:
    """Kubernetes' $(VAR) expansion in args; an unknown variable would stay literal, so fail."""
    def sub(m):
        assert m.group(1) in env, f"$({m.group(1)}) in args is not in the container's env"
        return env[m.group(1)]
    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, a) for a in args]


def configmap_file(workload: dict, c: dict, mount_path: str, tmp_path: Path) -> Path:
    """Write the ConfigMap file the container sees at ``mount_path`` into tmp_path."""
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
    for mount in c["volumeMounts"]:
        folder = mount["mountPath"]
        if mount_path.startswith(folder + "/") and "configMap" in volumes[mount["name"]]:
            cm = one("ConfigMap", volumes[mount["name"]]["configMap"]["name"])
            key = mount_path[len(folder) + 1:]
            assert key in cm["data"], f"ConfigMap {cm['metadata']['name']} has no {key}"
            out = tmp_path / key
            out.write_text(cm["data"][key])
            return out
    raise AssertionError(f"{c['name']} mounts no ConfigMap at {mount_path}")


# --- schemas -------------------------------------------------------------------------------


def test_the_bundled_schemas_cover_the_documented_versions():
    bundled = {v.rsplit(".", 1)[0] for v in all_versions()}
    assert set(VERSIONS) <= bundled, f"kubernetes-validate bundles {sorted(bundled)}; upgrade it or change VERSIONS"


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid_for_the_version(version):
    for doc in BASE + SECRETS:
        try:
            assert kubernetes_validate.validate(doc, version, strict=True) == version
        except kubernetes_validate.ValidationError as e:
            where = ".".join(str(p) for p in e.absolute_path)
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']} is not valid Kubernetes {version} at {where}: {e.message}",
                        pytrace=False)


def test_the_validation_refuses_a_misspelt_field():
    daemonset = yaml.safe_load(yaml.safe_dump(one("DaemonSet", "gpuledger-collector")))
    daemonset["spec"]["template"]["spec"]["hostPid"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, VERSIONS[-1], strict=True)


def test_the_kustomization_lists_every_manifest_and_builds():
    listed = set(kustomization(KUBE)["resources"])
    present = {p.name for p in KUBE.glob("*.yaml")} - {"kustomization.yaml", "secret.example.yaml"}
    assert listed == present, f"in the folder, not listed: {present - listed}; listed, missing: {listed - present}"
    assert set(kustomization(KUBE / "monitoring")["resources"]) == {p.name for p in (KUBE / "monitoring").glob("*.yaml")} - {"kustomization.yaml"}
    assert all(d["kind"] != "Secret" for d in BASE), "no Secret belongs in the kustomization (no values committed)"
    assert kustomization(KUBE)["namespace"] == kustomization(KUBE / "monitoring")["namespace"] == NAMESPACE
    assert one("Namespace", NAMESPACE)["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the kustomize build is not checked (the manifests are)")
    for folder, expected in ((KUBE, BASE), (KUBE / "monitoring", MONITORING)):
        out = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        built = [d for d in yaml.safe_load_all(out.stdout) if d]
        assert sorted((d["kind"], d["metadata"]["name"]) for d in built) == sorted((d["kind"], d["metadata"]["name"]) for d in expected)
        cluster_wide = ("Namespace", "ClusterRole", "ClusterRoleBinding")
        assert all(d["metadata"].get("namespace") == NAMESPACE for d in built if d["kind"] not in cluster_wide)


# --- the ServiceMonitor (a CRD: structure, not schema) ---------------------------------------


def test_servicemonitor_selects_the_collector_service_and_its_port():
    [monitor] = MONITORING
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1" and monitor["kind"] == "ServiceMonitor"
    assert set(monitor) == {"apiVersion", "kind", "metadata", "spec"} and monitor["metadata"]["name"]
    spec = monitor["spec"]
    assert set(spec) <= {"selector", "namespaceSelector", "endpoints", "jobLabel", "targetLabels", "podTargetLabels"}
    service = one("Service", "gpuledger-collector")
    selector = spec["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items(), "the ServiceMonitor's selector misses the Service"
    assert spec["namespaceSelector"]["matchNames"] == [NAMESPACE]
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert spec["endpoints"], "a ServiceMonitor needs endpoints"
    for endpoint in spec["endpoints"]:
        assert set(endpoint) <= {"port", "path", "interval", "scrapeTimeout", "scheme", "relabelings", "metricRelabelings", "honorLabels"}
        assert endpoint["port"] in ports, f"port {endpoint['port']!r} is not a port name of the Service"
        assert endpoint["path"] == "/metrics"
        interval, timeout = (int(endpoint[k].rstrip("s")) for k in ("interval", "scrapeTimeout"))
        assert timeout <= interval
        for rule in endpoint.get("relabelings", []):
            assert rule.get("action", "replace") in {"replace", "keep", "drop", "labelmap", "labeldrop", "labelkeep"}
    agent = tomllib.loads(one("ConfigMap", "gpuledger-collector")["data"]["collector.toml"])["collector"]
    assert interval >= agent["interval_s"], "scraping faster than the agent samples reads one round twice"
    assert [r["targetLabel"] for r in spec["endpoints"][0]["relabelings"]] == ["node"]     # receiver.host_labels


# --- labels, selectors, ports, volumes ------------------------------------------------------


WORKLOADS = [d for d in BASE if d["kind"] in ("DaemonSet", "StatefulSet", "Deployment")]


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w["metadata"]["name"])
def test_selectors_labels_ports_and_volumes_agree(workload):
    name = workload["metadata"]["name"]
    template = workload["spec"]["template"]
    pod = template["spec"]
    assert workload["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    assert template["metadata"]["labels"] == workload["metadata"]["labels"]
    services = [s for s in BASE if s["kind"] == "Service"
                and s["spec"]["selector"].items() <= template["metadata"]["labels"].items()]
    assert len(services) == 1, f"{name}: {len(services)} Services select its pods"
    [service] = services
    if workload["kind"] == "StatefulSet":
        assert workload["spec"]["serviceName"] == service["metadata"]["name"]
        assert workload["spec"]["replicas"] == 1
    port_names = {p["name"]: p["containerPort"] for c in pod["containers"] for p in c.get("ports", [])}
    for port in service["spec"]["ports"]:
        assert port["targetPort"] in port_names and port_names[port["targetPort"]] == port["port"], f"{name}: {port}"
    volumes = {v["name"]: v for v in pod["volumes"]} | {t["metadata"]["name"]: t for t in workload["spec"].get("volumeClaimTemplates", [])}
    mounted = set()
    for c in pod.get("initContainers", []) + pod["containers"]:
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            if probe in c:
                action = c[probe].get("httpGet") or c[probe].get("tcpSocket")
                assert action["port"] in port_names, f"{name}/{c['name']}: {probe} on an unknown port"
        for mount in c.get("volumeMounts", []):
            assert mount["name"] in volumes, f"{name}/{c['name']}: mounts unknown volume {mount['name']}"
            mounted.add(mount["name"])
            source = volumes[mount["name"]].get("configMap")
            if source and "subPath" in mount:
                assert mount["subPath"] in one("ConfigMap", source["name"])["data"]
        assert c["image"] and c["imagePullPolicy"] == "IfNotPresent"
        assert "resources" in c and "memory" in c["resources"]["limits"], f"{name}/{c['name']}: no memory limit"
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
    assert mounted == set(volumes), f"{name}: volumes never mounted: {set(volumes) - mounted}"
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    # only the agent talks to Kubernetes (its kubelet's /pods): the others get no token
    assert pod["automountServiceAccountToken"] is (name == "gpuledger-collector")


def test_images_are_the_ones_compose_builds_and_runs():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["gpuledger"]' in dockerfile           # so `args` are gpuledger's arguments
    uid = re.search(r"useradd .*--uid (\d+)", dockerfile).group(1)
    ours = COMPOSE["platform"]["image"]
    assert COMPOSE["platform"]["build"] == "." and COMPOSE["collector"]["image"] == ours
    for name in ("gpuledger-collector", "gpuledger-platform"):
        workload = next(w for w in WORKLOADS if w["metadata"]["name"] == name)
        pod = workload["spec"]["template"]["spec"]
        for c in pod.get("initContainers", []) + pod["containers"]:
            assert c["image"] == ours, f"{name}/{c['name']}: image {c['image']} is not {ours}"
            assert "command" not in c or c["name"] == "spool-owner", "args only: the image's entrypoint is gpuledger"
        assert str(pod["securityContext"]["runAsUser"]) == uid
    assert container(one("StatefulSet", "clickhouse"), "clickhouse")["image"] == COMPOSE["clickhouse"]["image"]


# --- the agent ------------------------------------------------------------------------------


def test_collector_runs_on_gpu_nodes_with_host_pids_and_tight_permissions():
    daemonset = one("DaemonSet", "gpuledger-collector")
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}      # the GPU Operator's label
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["runtimeClassName"] == "nvidia" and pod["hostPID"] is True
    assert not pod.get("hostNetwork") and not pod.get("hostIPC")
    c = container(daemonset, "collector")
    env = env_of(c)
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert not any("nvidia.com/gpu" in section for section in c["resources"].values()), "monitoring must not take a GPU"
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["privileged"] is False and "add" not in sc["capabilities"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    for host_path in ("/proc", "/sys/fs/cgroup"):
        mount = mounts[f"/host{host_path}"]
        assert mount["readOnly"] is True and volumes[mount["name"]]["hostPath"]["path"] == host_path
    spool = next(m for m in c["volumeMounts"] if m["name"] == "spool")
    assert volumes["spool"]["hostPath"]["type"] == "DirectoryOrCreate"    # the default: docs/deploy.md
    init = next(i for i in pod["initContainers"] if i["name"] == "spool-owner")
    assert init["volumeMounts"] == [{"name": "spool", "mountPath": spool["mountPath"]}]
    assert f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}" in init["command"][-1]
    assert set(init["securityContext"]["capabilities"]["add"]) == {"CHOWN", "FOWNER"}
    account = one("ServiceAccount", pod["serviceAccountName"])
    assert account["automountServiceAccountToken"] is True
    # its one permission: `get nodes/pods` (the kubelet's /pods, fine-grained), bound to its service account only
    roles = [d for d in BASE if d["kind"] in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")]
    assert sorted(d["kind"] for d in roles) == ["ClusterRole", "ClusterRoleBinding"]
    role, binding = one("ClusterRole", "gpuledger-collector"), one("ClusterRoleBinding", "gpuledger-collector")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes/pods"], "verbs": ["get"]}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}]


def test_collector_arguments_parse_and_give_host_push_url_and_spool(tmp_path):
    from gpuledger import config as configuration
    from gpuledger.cli import collect, parser

    daemonset = one("DaemonSet", "gpuledger-collector")
    c = container(daemonset, "collector")
    env = env_of(c, node_name="gpu-node-7")
    args = parser().parse_args(expand(c["args"], env))        # SystemExit on a flag `collect` lacks
    assert args.func is collect.cmd_collect
    path = configmap_file(daemonset, c, env["GPULEDGER_CONFIG"], tmp_path)
    cfg = configuration.load(str(path), env=env)
    settings = collect.settings(args, cfg)
    assert settings.host == "gpu-node-7", "the node's name is the host on samples"
    assert settings.kubelet_url == "https://10.20.3.17:10250", "the node's own kubelet names its pods"
    assert settings.kubelet_token_file == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert settings.kubelet_insecure_tls and "team" in settings.team_labels
    assert settings.push_token.get() == env["GPULEDGER_INGEST_TOKEN"] == "s3cret"
    push = urlparse(settings.push_url)
    service = one("Service", push.hostname)
    assert push.port in [p["port"] for p in service["spec"]["ports"]]
    platform = next(w for w in WORKLOADS if service["spec"]["selector"].items() <= w["spec"]["template"]["metadata"]["labels"].items())
    assert platform["metadata"]["name"] == "gpuledger-platform"
    assert settings.spool_dir in {m["mountPath"] for m in c["volumeMounts"] if m["name"] == "spool"}
    [metrics] = c["ports"]
    assert metrics["containerPort"] == settings.port and settings.listen == "0.0.0.0"
    assert all(c[p]["httpGet"]["path"] == "/metrics" for p in ("startupProbe", "livenessProbe", "readinessProbe"))
    compose = tomllib.loads((ROOT / "deploy" / "collector.toml").read_text())["collector"]
    ours = tomllib.loads(path.read_text())["collector"]
    kubernetes_only = ("push_url", "labels", "kubelet_insecure_tls", "team_labels")
    assert {k: v for k, v in ours.items() if k not in kubernetes_only} == \
        {k: v for k, v in compose.items() if k not in kubernetes_only}, "keep the agent's settings as in compose"


# --- the platform and ClickHouse -------------------------------------------------------------


def test_platform_config_loads_and_points_at_the_clickhouse_service(tmp_path):
    from gpuledger import config as configuration
    from gpuledger.cli import parser

    statefulset = one("StatefulSet", "gpuledger-platform")
    c = container(statefulset, "platform")
    env = env_of(c)
    assert callable(parser().parse_args(c["args"]).func)
    cfg = configuration.load(str(configmap_file(statefulset, c, env["GPULEDGER_CONFIG"], tmp_path)), env=env)
    dsn = urlparse(cfg.store.dsn)
    clickhouse = one("Service", dsn.hostname)
    assert dsn.port in [p["port"] for p in clickhouse["spec"]["ports"] if p["name"] == "http"]
    assert dsn.username == env["CLICKHOUSE_USER"] and dsn.path.strip("/") == env["CLICKHOUSE_DB"]
    assert cfg.store.password.get() == env["CLICKHOUSE_PASSWORD"]
    assert cfg.receiver.token.get() == env["GPULEDGER_INGEST_TOKEN"]
    assert cfg.server.host == "0.0.0.0" and cfg.server.port == c["ports"][0]["containerPort"]
    assert cfg.collector.local_sampling is False
    compose_env = {k: "s3cret" if re.search("PASSWORD|TOKEN", k) else v for k, v in env.items()}
    compose = configuration.load(str(ROOT / "deploy" / "gpuledger.toml"), env=compose_env)
    for section in ("store", "server", "receiver", "collector"):
        assert getattr(cfg, section) == getattr(compose, section), f"[{section}] differs from deploy/gpuledger.toml"


def test_clickhouse_gets_the_compose_configuration_and_its_secret():
    statefulset = one("StatefulSet", "clickhouse")
    c = container(statefulset, "clickhouse")
    cm = one("ConfigMap", "clickhouse")
    for mount in c["volumeMounts"]:
        if mount["name"] == "config":
            copy = ROOT / "deploy" / "clickhouse" / Path(mount["mountPath"]).parent.name / mount["subPath"]
            assert cm["data"][mount["subPath"]] == copy.read_text(), f"{mount['subPath']} differs from {copy}"
            assert mount["mountPath"].startswith("/etc/clickhouse-server/") and mount["readOnly"] is True
    assert {m["mountPath"] for m in c["volumeMounts"] if m["name"] == "data"} == {"/var/lib/clickhouse"}
    env = env_of(c)
    reader = re.search(r'from_env="(\w+)"', cm["data"]["gpuledger-reader.xml"]).group(1)
    assert {"CLICKHOUSE_DB", "CLICKHOUSE_USER", "CLICKHOUSE_PASSWORD", reader} <= set(env)
    metrics = re.search(r"<port>(\d+)</port>", cm["data"]["gpuledger.xml"]).group(1)
    assert int(metrics) in [p["containerPort"] for p in c["ports"] if p["name"] == "metrics"]


# --- Secrets ---------------------------------------------------------------------------------


def test_secret_example_ships_no_values_and_matches_the_compose_env_files():
    secrets = secret_keys()
    assert all(s["metadata"]["namespace"] == NAMESPACE and s["type"] == "Opaque" for s in SECRETS)
    for name, data in secrets.items():
        for key, value in data.items():
            if re.search(r"PASSWORD|TOKEN|SECRET", key):
                assert value == "", f"secret.example.yaml ships a value for {name}.{key}"
    for name, env_file in (("gpuledger-clickhouse", "clickhouse.env"), ("gpuledger-ingest", "ingest.env")):
        example = {}
        for line in (ROOT / "deploy" / f"{env_file}.example").read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                key, _, value = line.partition("=")
                example[key] = value
        assert secrets[name] == example, f"{name} must have the keys and defaults of deploy/{env_file}.example"
        assert f"--from-env-file=deploy/{env_file}" in (KUBE / "secret.example.yaml").read_text()
    referenced = set()
    for workload in WORKLOADS:
        pod = workload["spec"]["template"]["spec"]
        for c in pod.get("initContainers", []) + pod["containers"]:
            env_of(c)                                          # fails on a Secret or key the example lacks
            referenced |= {s["secretRef"]["name"] for s in c.get("envFrom", [])}
            referenced |= {v["valueFrom"]["secretKeyRef"]["name"] for v in c.get("env", []) if "secretKeyRef" in v.get("valueFrom", {})}
    assert referenced == set(secrets)
    for path in list(KUBE.rglob("*.yaml")):
        text = path.read_text()
        assert not re.search(r"(PASSWORD|TOKEN)\s*[:=]\s*[\"']?[A-Za-z0-9+/]{8,}", text), f"{path}: a secret value"
