"""The cluster shape without a cluster: KubeSpawner pods rendered (``get_pod_manifest``, what
KubeSpawner sends) for every profile of the hub settings, validated with kubernetes-validate,
and sent through the real kubernetes_asyncio client to kmock. No real cluster runs here."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes_validate
import kubespawner.spawner
import pytest
import yaml
from k8s_mock import api_server
from kubernetes_asyncio import client as k8s
from traitlets.config import Config

from cube_lab.hub import kubernetes as hubk8s
from cube_lab.hub.config import configure
from cube_lab.hub.ledger import Ledger
from cube_lab.hub.settings import DEFAULT_FILE, ENV_DATA_DIR, ENV_SETTINGS, load
from cube_lab.names import label_value, project_name

K8S_VERSION = "1.33"


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


VISION = Group(
    "vision",
    {
        "cube_lab": {
            "profiles": ["cpu", "gpu-1", "vgpu-8g", "mig-1g", "ascend-1"],
            "quota": {
                "accelerators": {
                    "nvidia.com/gpu": 4,
                    "nvidia.com/mig-1g.10gb": 2,
                    "huawei.com/Ascend910B": 1,
                }
            },
        }
    },
)


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """KubeSpawner reads a kubeconfig when it is built; there is none here, and nothing
    renders differently for it (its client is never called in these tests)."""
    monkeypatch.setattr(kubespawner.spawner, "load_config", lambda **kwargs: None)
    monkeypatch.setattr(kubespawner.spawner, "shared_client", lambda *args, **kwargs: None)


@pytest.fixture
def settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    raw = yaml.safe_load(DEFAULT_FILE.read_text())  # the shipped file, in the cluster shape
    raw.update({"shape": "kubernetes", "data_dir": str(tmp_path / "hub-data")})
    path = tmp_path / "cube_hub.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    monkeypatch.setenv(ENV_SETTINGS, str(path))
    monkeypatch.setenv(ENV_DATA_DIR, raw["data_dir"])  # configure() exports it; restored after
    return path


def spawner(settings_file: Path, user: User) -> hubk8s.CubeKubeSpawner:
    c = Config()
    configure(c, load(settings_file))
    assert c.JupyterHub.spawner_class == "cube_lab.hub.kubernetes.CubeKubeSpawner"
    return hubk8s.CubeKubeSpawner(config=c, user=user, _mock=True)


async def render(sp: hubk8s.CubeKubeSpawner, profile: str) -> dict[str, Any]:
    """What KubeSpawner.start would send for ``profile``, as a plain dict."""
    sp.user_options = {"profile": profile}
    await sp.run_pre_spawn_hook()  # admission + the project volumes
    await sp.load_user_options()  # the profile's overrides (what _start does first)
    pod = await sp.get_pod_manifest()
    await sp.run_post_stop_hook()  # give the reservation back
    return k8s.ApiClient().sanitize_for_serialization(pod)


def container(pod: dict[str, Any]) -> dict[str, Any]:
    return pod["spec"]["containers"][0]


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container(pod).get("env", [])}


@pytest.mark.parametrize("profile", ["cpu", "gpu-1", "vgpu-8g", "mig-1g", "ascend-1"])
def test_every_profile_renders_a_valid_pod(settings_file: Path, profile: str) -> None:
    settings = load(settings_file)
    pod = asyncio.run(render(spawner(settings_file, User("alice", [VISION])), profile))
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    kubernetes_validate.validate(pod, K8S_VERSION, strict=True)

    want = settings.profile(profile)
    limits = container(pod)["resources"]["limits"]
    for resource, amount in want.limits().items():
        assert limits[resource] == amount
    assert container(pod)["image"] == (want.image or settings.kubernetes.image)
    tolerated = {t["key"] for t in pod["spec"].get("tolerations") or []}
    if want.accelerator:
        assert tolerated == {t.key for t in want.accelerator.tolerations}
        for key, value in want.accelerator.node_selector:
            assert pod["spec"]["nodeSelector"][key] == value
    else:
        # a CPU profile explicitly asks for no device and hides the node's GPUs
        assert not [r for r in limits if "/" in r]
        assert env_of(pod)["NVIDIA_VISIBLE_DEVICES"] == "void"
        assert not tolerated
    # the user's own volume at /mnt/<username>, the project's shared one under /mnt/projects
    mounts = {m["mountPath"]: m["name"] for m in container(pod)["volumeMounts"]}
    assert "/mnt/alice" in mounts and mounts["/mnt/projects/vision"] == "cube-project-vision"
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]
              if "persistentVolumeClaim" in v}  # fmt: skip
    assert (
        claims[mounts["/mnt/alice"]] == "claim-alice" and "cube-project-vision" in claims.values()
    )
    assert env_of(pod)["CUBE_LAB_PROFILE"] == profile
    assert env_of(pod)["CUBE_LAB_PROJECT"] == "vision"
    # the pod-label vocabulary (DCGM's GPU series join on it); KubeSpawner's own labels stay
    labels = pod["metadata"]["labels"]
    assert {
        "cube-lab.io/project": "vision",
        "cube-lab.io/owner": "alice",
        "cube-lab.io/kind": "server",
        "cube-lab.io/server": "default",
    }.items() <= labels.items()
    assert labels["component"] == "singleuser-server"


def test_settings_do_not_leak_from_one_profile_to_the_next(settings_file: Path) -> None:
    sp = spawner(settings_file, User("alice", [VISION]))

    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        return await render(sp, "vgpu-8g"), await render(sp, "cpu")

    gpu, cpu = asyncio.run(both())
    assert container(gpu)["resources"]["limits"]["nvidia.com/gpumem"] == "8192"
    limits = container(cpu)["resources"]["limits"]
    assert not [r for r in limits if "/" in r], limits
    assert not cpu["spec"].get("tolerations")
    assert env_of(cpu)["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert "NVIDIA_VISIBLE_DEVICES" not in env_of(gpu)


def test_a_server_outside_any_group_is_labelled_with_the_personal_project(
    settings_file: Path,
) -> None:
    pod = asyncio.run(render(spawner(settings_file, User("张三")), "cpu"))
    labels = pod["metadata"]["labels"]
    assert labels["cube-lab.io/owner"] == "x---e5-bc-a0-e4-b8-89"
    # the personal project's name (itself escaped) as every other pod of the project has it
    assert project_name("张三") == "x---e5-bc-a0-e4-b8-89"
    assert labels["cube-lab.io/project"] == label_value(project_name("张三"))
    assert labels["cube-lab.io/kind"] == "server"


def test_only_allowed_profiles_are_offered(settings_file: Path) -> None:
    outsider = spawner(settings_file, User("bob"))
    assert [p["slug"] for p in outsider.cube_profile_list()] == ["cpu"]
    member = spawner(settings_file, User("alice", [VISION]))
    assert [p["slug"] for p in member.cube_profile_list()] == [
        "cpu", "gpu-1", "mig-1g", "vgpu-8g", "ascend-1"
    ]  # fmt: skip
    # every profile sets the same keys: nothing is left to merge from an earlier choice
    keys = {frozenset(p["kubespawner_override"]) for p in member.cube_profile_list()}
    assert keys == {frozenset(hubk8s.PROFILE_TRAITS)}
    # asking for a profile that is not offered is refused before anything is created
    outsider.user_options = {"profile": "gpu-1"}
    with pytest.raises(Exception, match="not available to you"):
        asyncio.run(outsider.run_pre_spawn_hook())


def test_quota_is_enforced_before_the_pod_exists(settings_file: Path) -> None:
    small = Group(
        "tiny",
        {"cube_lab": {"profiles": ["gpu-1"], "quota": {"accelerators": {"nvidia.com/gpu": 1}}}},
    )
    first = spawner(settings_file, User("alice", [small]))
    first.user_options = {"profile": "gpu-1"}
    asyncio.run(first.run_pre_spawn_hook())
    second = spawner(settings_file, User("carol", [small]))
    second.user_options = {"profile": "gpu-1"}
    with pytest.raises(Exception, match=r"project tiny uses 1 of 1 GPUs \(nvidia.com/gpu\)"):
        asyncio.run(second.run_pre_spawn_hook())
    asyncio.run(first.run_post_stop_hook())
    asyncio.run(second.run_pre_spawn_hook())
    ledger = Ledger(load(settings_file).ledger_path)
    assert [r.username for r in ledger.reservations("tiny")] == ["carol"]


def test_project_namespaces_point_the_labs_jobs_at_the_project(
    settings_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = yaml.safe_load(settings_file.read_text())
    raw["kubernetes"]["project_namespaces"] = True
    on = settings_file.with_name("on.yaml")
    on.write_text(yaml.safe_dump(raw, sort_keys=False))
    monkeypatch.setenv(ENV_SETTINGS, str(on))
    pod = asyncio.run(render(spawner(on, User("alice", [VISION])), "cpu"))
    assert env_of(pod)["CUBE_LAB_K8S_NAMESPACE"] == "cube-vision"
    monkeypatch.setenv(ENV_SETTINGS, str(settings_file))
    pod = asyncio.run(render(spawner(settings_file, User("alice", [VISION])), "cpu"))
    assert "CUBE_LAB_K8S_NAMESPACE" not in env_of(pod)


def test_project_volume_claim_is_valid(settings_file: Path) -> None:
    pvc = hubk8s.project_pvc(load(settings_file), "Vision_2025")
    kubernetes_validate.validate(pvc, K8S_VERSION, strict=True)
    # escaped (cube_lab.names), so it is not the claim of a group named "vision-2025"
    assert pvc["metadata"]["name"] == "cube-project-x---56ision-5f2025"
    assert hubk8s.project_claim("vision-2025") == "cube-project-vision-2025"
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]


def test_round_trip_through_the_real_client_and_kmock(settings_file: Path) -> None:
    async def go() -> tuple[Any, Any]:
        pod = await render(spawner(settings_file, User("alice", [VISION])), "vgpu-8g")
        pvc = hubk8s.project_pvc(load(settings_file), "vision")
        async with api_server() as km:
            km.resources["v1/persistentvolumeclaims"] = {}
            conf = k8s.Configuration(host=str(km.url).rstrip("/"))
            async with k8s.ApiClient(conf) as api_client:
                core = k8s.CoreV1Api(api_client)
                await core.create_namespaced_persistent_volume_claim("cube-lab", pvc)
                await core.create_namespaced_pod("cube-lab", pod)
                read = await core.read_namespaced_pod(pod["metadata"]["name"], "cube-lab")
                claim = await core.read_namespaced_persistent_volume_claim(
                    "cube-project-vision", "cube-lab"
                )
                return read, claim

    read, claim = asyncio.run(go())
    assert read.metadata.labels["cube-lab.io/kind"] == "server"
    assert read.metadata.labels["cube-lab.io/project"] == "vision"
    limits = read.spec.containers[0].resources.limits
    assert limits["nvidia.com/gpu"] == "1" and limits["nvidia.com/gpucores"] == "30"
    assert claim.spec.access_modes == ["ReadWriteMany"]


def test_z2jh_values_example_holds_a_valid_settings_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = yaml.safe_load((DEFAULT_FILE.parent / "z2jh-values.yaml").read_text())
    embedded = values["hub"]["extraFiles"]["cube-hub-settings"]["stringData"]
    path = tmp_path / "cube_hub.yaml"
    path.write_text(embedded)
    monkeypatch.setenv(ENV_SETTINGS, str(path))
    monkeypatch.setenv(ENV_DATA_DIR, str(tmp_path / "data"))
    c = Config()
    c.JupyterHub.services = [{"name": "cull-idle"}]  # what the chart sets before extraConfig
    configure(c, load(path), helm=True)
    assert [s["name"] for s in c.JupyterHub.services] == ["cull-idle", "cube-admin", "cube-lab"]
    assert "bind_url" not in c.JupyterHub and "db_url" not in c.JupyterHub  # the chart's
    assert c.JupyterHub.spawner_class == "cube_lab.hub.kubernetes.CubeKubeSpawner"
    assert "configure(c, load(), helm=True)" in values["hub"]["extraConfig"]["cube-lab"]
