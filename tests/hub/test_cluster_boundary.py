"""The trust boundary in the cluster shape, without a cluster: user pods as KubeSpawner renders
them (``get_pod_manifest``) hold no key to the store; the cube-lab service's Role, RoleBinding
and Secret validate (kubernetes-validate) and grant exactly what the backends create; the
Zero to JupyterHub values wire the service's port, Secret and network policy. Nothing here ran
on a cluster, and the values are checked key by key against the chart's documented schema (the
schema itself is not shipped on PyPI or npm)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes_validate
import kubespawner.spawner
import pytest
import yaml
from kubernetes_asyncio import client as k8s
from traitlets.config import Config

from cube_lab.hub import kubernetes as hubk8s
from cube_lab.hub import service_manifests as sm
from cube_lab.hub.config import STORE_SERVICE, configure
from cube_lab.hub.settings import DEFAULT_FILE, ENV_DATA_DIR, ENV_SETTINGS, load
from cube_lab.k8s import Resource
from cube_lab.serving import kserve, kserve_cluster
from cube_lab.training import kubernetes as training_k8s
from cube_lab.training.spec import CLUSTER_KINDS, JobSpec
from cube_lab.tuning import cluster as tuning_cluster
from cube_lab.tuning import katib, on_cluster
from cube_lab.tuning.spec import parse as parse_experiment

K8S_VERSION = "1.33"
PASSWORD = "s3cret-Pw-7781"
DB_URL = f"postgresql+psycopg://cube:{PASSWORD}@cube-postgres:5432/cube"
VALUES = DEFAULT_FILE.parent / "z2jh-values.yaml"


@dataclass
class Group:
    name: str
    properties: dict[str, Any]


@dataclass
class User:
    name: str
    groups: list[Group] = field(default_factory=list)
    id: int = 7
    url: str = "/user/x/"

    @property
    def escaped_name(self) -> str:
        return self.name


VISION = Group("vision", {"cube_lab": {"profiles": ["cpu"]}})


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubespawner.spawner, "load_config", lambda **kwargs: None)
    monkeypatch.setattr(kubespawner.spawner, "shared_client", lambda *args, **kwargs: None)


def write_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> Path:
    """The shipped settings in the cluster shape, with a password-bearing database URL and the
    service where pods reach it; the hub's own environment holds the store's keys as well."""
    raw = yaml.safe_load(DEFAULT_FILE.read_text())
    raw.update(
        {
            "shape": "kubernetes",
            "data_dir": str(tmp_path / "hub-data"),
            "cube_db_url": DB_URL,
            "service_url": "http://hub:8020",
            **extra,
        }
    )
    path = tmp_path / "cube_hub.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    monkeypatch.setenv(ENV_SETTINGS, str(path))
    monkeypatch.setenv(ENV_DATA_DIR, raw["data_dir"])
    monkeypatch.setenv("CUBE_LAB_DB_URL", DB_URL)  # what hub.extraEnv gives the hub pod
    monkeypatch.setenv("CUBE_LAB_DATA_DIR", str(tmp_path / "store"))
    return path


def make_config(path: Path) -> Config:
    c = Config()
    configure(c, load(path), helm=True)
    return c


async def render_pod(c: Config, user: User) -> dict[str, Any]:
    sp = hubk8s.CubeKubeSpawner(config=c, user=user, _mock=True)
    sp.user_options = {"profile": "cpu"}
    await sp.run_pre_spawn_hook()
    await sp.load_user_options()
    pod = await sp.get_pod_manifest()
    await sp.run_post_stop_hook()
    out = k8s.ApiClient().sanitize_for_serialization(pod)
    out.setdefault("apiVersion", "v1")
    out.setdefault("kind", "Pod")
    return out


def env_of(pod: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e for c in pod["spec"]["containers"] for e in c.get("env", [])}


def test_user_pods_hold_no_keys_to_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = make_config(write_settings(tmp_path, monkeypatch))

    async def both() -> list[dict[str, Any]]:
        return [
            await render_pod(c, User("张三", [VISION], id=1)),
            await render_pod(c, User("Alice.Smith", [VISION], id=2)),
        ]

    pods = asyncio.run(both())
    for pod in pods:
        kubernetes_validate.validate(pod, K8S_VERSION, strict=True)
        text = json.dumps(pod, ensure_ascii=False)
        for secret in (PASSWORD, DB_URL, "postgresql", str(tmp_path / "store"), "hub-data"):
            assert secret not in text, secret
        assert hubk8s.STORE_SECRET not in text  # never references the store's Secret
        env = env_of(pod)
        assert not set(env) & set(hubk8s.KEY_ENV), sorted(env)
        assert env["CUBE_LAB_SERVICE_URL"]["value"] == f"http://hub:8020/services/{STORE_SERVICE}/"
        spec = pod["spec"]
        assert spec["automountServiceAccountToken"] is False
        for volume in spec.get("volumes", []):
            assert "secret" not in volume
            sources = (volume.get("projected") or {}).get("sources") or []
            assert not [s for s in sources if "serviceAccountToken" in s]
        mounts = [m["mountPath"] for m in spec["containers"][0]["volumeMounts"]]
        assert not [m for m in mounts if m.startswith("/var/run/secrets")]
        # project-scoped storage stays: the user's claim and the project's
        assert "/mnt/projects/vision" in mounts
    # distinct pods and claims for a Chinese and a dotted, mixed-case name
    names = [p["metadata"]["name"] for p in pods]
    claims = [
        next(v["persistentVolumeClaim"]["claimName"] for v in p["spec"]["volumes"]
             if v["name"] == "user-volume")
        for p in pods
    ]  # fmt: skip
    assert len(set(names)) == 2 and len(set(claims)) == 2
    assert all(n.isascii() for n in names + claims), names + claims


def test_chart_settings_cannot_hand_a_pod_the_stores_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an admin might add through singleuser.* (extraEnv, a service account, a Secret
    volume) is taken out of the pod, and the token stays unmounted."""
    c = make_config(write_settings(tmp_path, monkeypatch))
    k = c.KubeSpawner
    k.service_account = "hub"
    k.automount_service_account_token = True
    k.environment = {"CUBE_LAB_DB_URL": DB_URL, "CUBE_LAB_USER": "root"}
    k.extra_container_config = {
        "envFrom": [{"secretRef": {"name": hubk8s.STORE_SECRET}}],
        "env": [
            {
                "name": "DB",
                "valueFrom": {"secretKeyRef": {"name": hubk8s.STORE_SECRET, "key": "db-url"}},
            }
        ],
    }
    k.volumes = [
        *k.volumes,
        {"name": "store", "secret": {"secretName": hubk8s.STORE_SECRET}},
        {
            "name": "token",
            "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
        },
    ]
    k.volume_mounts = [
        *k.volume_mounts,
        {"name": "store", "mountPath": "/etc/store"},
        {"name": "token", "mountPath": "/var/run/secrets/tokens"},
    ]
    pod = asyncio.run(render_pod(c, User("alice", [VISION])))
    kubernetes_validate.validate(pod, K8S_VERSION, strict=True)
    text = json.dumps(pod)
    assert PASSWORD not in text and hubk8s.STORE_SECRET not in text
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert {v["name"] for v in pod["spec"]["volumes"]} & {"store", "token"} == set()
    box = pod["spec"]["containers"][0]
    assert not box.get("envFrom")
    assert {"DB", "CUBE_LAB_DB_URL", "CUBE_LAB_USER"} & set(env_of(pod)) == set()
    assert {m["name"] for m in box["volumeMounts"]} & {"store", "token"} == set()


# -- the service's side ---------------------------------------------------------------------


def created_resources(tmp_path: Path) -> set[tuple[str, str]]:
    """(group, plural) of every object the backends build or follow, from their own code."""
    made: list[dict[str, Any]] = []
    for kind in CLUSTER_KINDS:
        framework = {"tfjob": "tensorflow", "mpijob": "mpi"}.get(kind, "pytorch")
        spec = JobSpec.from_dict({"script": "t.py", "image": "i:1", "framework": framework})
        made += training_k8s.manifests(spec, "j", kind=kind)
    (tmp_path / "trial.py").write_text("import nni\n")
    experiment = parse_experiment(
        {
            "searchSpace": {"C": {"_type": "uniform", "_value": [0.1, 1]}},
            "trialCommand": "python3 trial.py",
            "tuner": {"name": "TPE"},
        },
        tmp_path,
    )
    made.append(katib.experiment(experiment, image="i:1"))
    made.append(kserve.inference_service("m", "sklearn", "s3://m/1"))
    found = {(r.group, r.plural) for r in map(Resource.of, made)}
    # the Resource constants the tuning and serving backends watch, get and patch with
    found |= {(r.group, r.plural) for r in (tuning_cluster.EXPERIMENT, kserve_cluster.ISVC)}
    return found


def granted(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def test_the_role_grants_exactly_what_the_backends_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load(write_settings(tmp_path, monkeypatch))
    role = next(d for d in sm.manifests(settings) if d["kind"] == "Role")
    rights = granted(role)
    custom = {key for key in rights if key[0]}
    read_only = {(on_cluster.TRIAL.group, on_cluster.TRIAL.plural)}  # Katib makes the trials
    assert custom == created_resources(tmp_path) | read_only
    for key in custom - read_only:
        assert {"create", "get", "watch", "delete"} <= rights[key], key
    for key in read_only:
        assert rights[key] == {"get", "list"}, key
    assert "patch" in rights[("serving.kserve.io", "inferenceservices")]  # traffic splits
    # core: the training backend lists a job's pods and reads their logs, and jobs and
    # experiments get their token from a Secret made (and deleted) with them; nothing else
    assert {k: v for k, v in rights.items() if not k[0]} == {
        ("", "pods"): {"list"},
        ("", "pods/log"): {"get"},
        ("", "secrets"): {"create", "delete"},
    }
    assert not [v for verbs in rights.values() for v in verbs if v in ("*", "escalate", "bind")]


@pytest.mark.parametrize("project_namespaces", [False, True])
def test_service_manifests_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project_namespaces: bool
) -> None:
    raw = yaml.safe_load(DEFAULT_FILE.read_text())
    kube = {**(raw.get("kubernetes") or {}), "namespace": "cube-lab"}
    kube["project_namespaces"] = project_namespaces
    groups = {"vision": {"profiles": ["cpu"]}, "Vision_2025": {"profiles": ["cpu"]}}
    settings = load(write_settings(tmp_path, monkeypatch, kubernetes=kube, groups=groups))
    docs = sm.manifests(settings, db_url=DB_URL)
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    kinds = [d["kind"] for d in docs]
    spaces = {d["metadata"]["namespace"] for d in docs if d["kind"] == "Role"}
    if project_namespaces:
        expected = {"cube-lab", *(hubk8s.project_namespace(g) for g in groups)}
        assert spaces == expected and len(expected) == 3
        assert kinds.count("Namespace") == 2
    else:
        assert spaces == {"cube-lab"} and "Namespace" not in kinds
    for binding in (d for d in docs if d["kind"] == "RoleBinding"):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "hub", "namespace": "cube-lab"}
        ]
        assert binding["roleRef"]["name"] == sm.ROLE
    (secret,) = [d for d in docs if d["kind"] == "Secret"]
    assert secret["metadata"] == {
        "name": hubk8s.STORE_SECRET,
        "namespace": "cube-lab",
        "labels": sm.LABELS,
    }
    assert secret["stringData"] == {hubk8s.STORE_SECRET_KEY: DB_URL}
    assert "Secret" not in [d["kind"] for d in sm.manifests(settings)]


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cube_lab.hub.service_manifests", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_the_cli_prints_yaml_and_the_secret_only_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_settings(tmp_path, monkeypatch)
    env = {k: v for k, v in os.environ.items() if k != "CUBE_LAB_DB_URL"}
    out = run_cli(env, "--settings", str(path))
    assert out.returncode == 0, out.stderr
    docs = list(yaml.safe_load_all(out.stdout))
    assert [d["kind"] for d in docs] == ["Role", "RoleBinding"]
    assert PASSWORD not in out.stdout  # the settings' cube_db_url is never printed
    assert "kubectl -n cube-lab create secret generic cube-lab-store" in out.stderr

    out = run_cli({**env, "CUBE_LAB_DB_URL": DB_URL}, "--settings", str(path))
    docs = list(yaml.safe_load_all(out.stdout))
    assert docs[-1]["kind"] == "Secret" and docs[-1]["stringData"]["db-url"] == DB_URL

    out = run_cli(env, "--settings", str(tmp_path / "missing.yaml"))
    assert out.returncode == 2 and "not found" in out.stderr and not out.stdout


# -- the chart's values ---------------------------------------------------------------------

# keys the chart's values.schema.yaml (jupyterhub/zero-to-jupyterhub-k8s) allows where these
# values set them; the schema is additionalProperties: false at each of these levels
NETWORK_POLICY_KEYS = {
    "enabled", "ingress", "egress", "egressAllowRules", "interNamespaceAccessLabels",
    "allowedIngressPorts",
}  # fmt: skip
EGRESS_ALLOW_RULES = {
    "cloudMetadataServer", "dnsPortsCloudMetadataServer", "dnsPortsKubeSystemNamespace",
    "dnsPortsPrivateIPs", "nonPrivateIPs", "privateIPs",
}  # fmt: skip
HUB_SERVICE_KEYS = {"type", "ports", "annotations", "extraPorts", "loadBalancerIP"}


def network_policy(ingress: list[Any] | None = None, egress: list[Any] | None = None) -> Any:
    """The chart's extra rules inside a NetworkPolicy, so kubernetes-validate checks them."""
    spec: dict[str, Any] = {"podSelector": {}, "policyTypes": []}
    if ingress is not None:
        spec |= {"ingress": ingress}
        spec["policyTypes"].append("Ingress")
    if egress is not None:
        spec |= {"egress": egress}
        spec["policyTypes"].append("Egress")
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "x", "namespace": "cube-lab"},
        "spec": spec,
    }


def allows(rules: list[dict[str, Any]], peer: str, side: str, port: int) -> bool:
    return any(
        {"port": port, "protocol": "TCP"} in rule.get("ports", [])
        and {"podSelector": {"matchLabels": {"component": peer}}} in rule.get(side, [])
        for rule in rules
    )


def test_z2jh_values_wire_the_service_port_secret_and_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = VALUES.read_text()
    values = yaml.safe_load(text)
    hub, single = values["hub"], values["singleuser"]
    embedded = hub["extraFiles"]["cube-hub-settings"]["stringData"]
    assert "cube_db_url" not in embedded and "postgresql" not in yaml.safe_load(embedded)
    path = tmp_path / "cube_hub.yaml"
    path.write_text(embedded)
    monkeypatch.setenv(ENV_SETTINGS, str(path))
    monkeypatch.setenv(ENV_DATA_DIR, str(tmp_path / "data"))
    settings = load(path)
    port = int(settings.service_url.rsplit(":", 1)[1])

    # the database URL reaches the hub pod from the Secret, never as a literal
    ref = hub["extraEnv"]["CUBE_LAB_DB_URL"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": hubk8s.STORE_SECRET, "key": hubk8s.STORE_SECRET_KEY}
    literals = [v for v in hub["extraEnv"].values() if isinstance(v, str)]
    assert not [v for v in literals if "://" in v]
    # the hub Service exposes the service's port; user pods may reach it, and nothing else
    assert set(hub["service"]) <= HUB_SERVICE_KEYS
    assert {"name": "cube-lab", "port": port, "targetPort": port} in hub["service"]["extraPorts"]
    for section in (hub, single):
        assert set(section["networkPolicy"]) <= NETWORK_POLICY_KEYS
    assert set(single["networkPolicy"]["egressAllowRules"]) <= EGRESS_ALLOW_RULES
    assert single["networkPolicy"]["egressAllowRules"]["privateIPs"] is False
    ingress, egress = hub["networkPolicy"]["ingress"], single["networkPolicy"]["egress"]
    kubernetes_validate.validate(network_policy(ingress=ingress), K8S_VERSION, strict=True)
    kubernetes_validate.validate(network_policy(egress=egress), K8S_VERSION, strict=True)
    assert allows(ingress, "singleuser-server", "from", port)
    assert allows(egress, "hub", "to", port)
    assert single["serviceAccountName"] is None

    # hub.extraConfig as the chart runs it: the service alone gets the URL and the API server
    monkeypatch.setenv("CUBE_LAB_DB_URL", DB_URL)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    c = Config()
    c.JupyterHub.services = [{"name": "cull-idle"}]
    exec(hub["extraConfig"]["cube-lab"], {"c": c})  # the chart runs this snippet as it is
    services = {s["name"]: s for s in c.JupyterHub.services}
    store = services[STORE_SERVICE]["environment"]
    assert store["CUBE_LAB_DB_URL"] == DB_URL and store["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert "CUBE_LAB_DB_URL" not in services["cube-admin"]["environment"]
    assert services[STORE_SERVICE]["url"] == f"http://hub:{port}"
    # and a user's pod under those values: the service's address, no key
    pod = asyncio.run(render_pod(c, User("李四")))
    assert env_of(pod)["CUBE_LAB_SERVICE_URL"]["value"] == (
        f"http://hub:{port}/services/{STORE_SERVICE}/"
    )
    assert PASSWORD not in json.dumps(pod, ensure_ascii=False)


def test_pass_store_env_needs_the_service_configured() -> None:
    c = Config()
    c.JupyterHub.services = [{"name": "cube-admin"}]
    with pytest.raises(Exception, match="no cube-lab service"):
        hubk8s.pass_store_env(c, {"CUBE_LAB_DB_URL": DB_URL})
