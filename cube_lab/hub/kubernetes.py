"""The cluster shape: KubeSpawner settings generated from the same settings file.

- ``profile_list`` comes from the resource profiles; a user is offered only the profiles their
  project groups allow (plus the open ones).
- Each profile sets *every* profile-controlled trait, and the spawner puts the configured
  values back before applying a profile, so nothing leaks from the profile a user chose last
  time: KubeSpawner merges dict overrides into the live spawner (KubeSpawner issues #546 and
  #691). A CPU-only profile therefore has no accelerator limits at all and sets
  ``NVIDIA_VISIBLE_DEVICES=void``: on a GPU node whose default runtime is NVIDIA's, a pod
  from a CUDA image otherwise sees every GPU of the node.
- A per-user volume at ``/mnt/<username>`` (a PVC KubeSpawner creates) and, for each of the
  user's project groups, the group's shared ReadWriteMany PVC at ``/mnt/projects/<group>``
  (``project_pvc`` makes its manifest; an admin applies it once per group).
- Names: the project volumes and namespaces are ``cube-project-<slug>`` and ``cube-<slug>``
  with the group's slug from ``cube_lab.names`` (distinct groups, distinct objects; plain
  names such as ``vision`` are themselves). KubeSpawner names the user's pod and volume
  itself (``jupyter-{user_server}``, ``claim-{user_server}``, ``/mnt/{username}``) with its
  ``safe`` slug scheme, which is collision-free too (a hash for any name not already safe).
- ``project_namespaces: true``: the lab's jobs go to the project's namespace ``cube-<group>``.
- The trust boundary: a user's pod holds no key to the store. No database URL, data dir,
  Kubernetes token or reference to the store's Secret reaches it (``keyless`` takes out what a
  chart setting such as ``singleuser.extraEnv`` might add), and the service-account token is
  never mounted (``automount_service_account_token = False``: a token of even a no-rights
  account authenticates to the API server; the lab needs none, as the cube-lab service creates
  the jobs). The pod gets ``CUBE_LAB_SERVICE_URL``, the service's address in the hub pod.
  The service's own side (its Role, RoleBinding and Secret) is ``service_manifests``.

Nothing here has run against a real cluster: tests render and validate the manifests.
"""

from __future__ import annotations

import copy
import ipaddress
import logging
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from kubespawner import KubeSpawner

from ..config import ENV_DATA_DIR, ENV_DB_URL, ENV_USER
from ..errors import InvalidInput
from ..k8s import pod_labels
from ..k8s.names import identity_name, project_claim, user_claim
from ..locale.messages import _t
from ..names import folder_name, project_name
from . import policy
from .config import STORE_SERVICE
from .quotas import GroupPolicy
from .settings import HubSettings, Profile
from .spawner import CubeSpawnerMixin

PROFILE_TRAITS = (
    "image",
    "cpu_limit",
    "cpu_guarantee",
    "mem_limit",
    "mem_guarantee",
    "extra_resource_limits",
    "extra_resource_guarantees",
    "node_selector",
    "tolerations",
    "scheduler_name",
    "environment",
)
ENV_K8S_NAMESPACE = "CUBE_LAB_K8S_NAMESPACE"  # cube_lab.k8s.client.ENV_NAMESPACE
NO_GPU_ENV = {"NVIDIA_VISIBLE_DEVICES": "void", "CUDA_VISIBLE_DEVICES": ""}
# the Secret holding the store's database URL; only the hub pod reads it (hub.extraEnv)
STORE_SECRET = "cube-lab-store"
STORE_SECRET_KEY = "db-url"
# never in a user's pod: the store's keys, and identities that mean nothing under the hub
KEY_ENV = (
    ENV_DB_URL,
    ENV_DATA_DIR,
    ENV_USER,
    "CUBE_LAB_K8S_TOKEN",  # cube_lab.k8s.client.ENV_TOKEN
    "CUBE_LAB_K8S_HOST",
    "KUBECONFIG",
)
# what the cube-lab service needs from the hub pod's environment (the hub starts it with only
# what its service entry lists): the store's database URL, and the API server's address for
# the in-cluster client (the pod's service-account token is read from its file)
STORE_ENV = (ENV_DB_URL, "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")
log = logging.getLogger(__name__)


def k8s_name(value: str, prefix: str = "") -> str:
    """A DNS-1123 label for a group or user name: ``prefix`` and the name's slug
    (``cube_lab.names``), at most 63 characters. Distinct names get distinct labels; plain
    names (``vision``, ``cv-2025``) are themselves, as they were before."""
    if not value:
        raise InvalidInput(_t("cannot make a Kubernetes name from an empty name"))
    return identity_name(value, prefix)


def project_namespace(group: str) -> str:
    """The namespace of a project group's jobs when ``project_namespaces`` is on."""
    return k8s_name(group, "cube-")


def project_mount(group: str) -> str:
    """Where a project group's shared volume is mounted in its members' pods (the same
    folder name as the local shape's ``projects/<folder>``)."""
    return f"/mnt/projects/{folder_name(group)}"


def profile_override(settings: HubSettings, profile: Profile) -> dict[str, Any]:
    """KubeSpawner overrides for one profile; every profile sets the same keys."""
    acc = profile.accelerator
    limits = profile.limits()
    node_selector = dict(acc.node_selector_dict() if acc else {})
    node_selector.update(profile.node_selector)
    tolerations = [t.to_k8s() for t in acc.tolerations] if acc else []
    tolerations += [dict(t) for t in profile.tolerations]
    return {
        "image": profile.image or settings.kubernetes.image,
        "cpu_limit": profile.cpu,
        "cpu_guarantee": profile.cpu_guarantee
        if profile.cpu_guarantee is not None
        else (profile.cpu / 4 if profile.cpu else None),
        "mem_limit": profile.memory,  # bytes (KubeSpawner's ByteSpecification)
        "mem_guarantee": (profile.memory_guarantee or profile.memory // 2)
        if profile.memory
        else None,
        "extra_resource_limits": limits,
        "extra_resource_guarantees": {},  # extended resources: the request defaults to the limit
        "node_selector": node_selector,
        "tolerations": tolerations,
        "scheduler_name": (acc.scheduler if acc and acc.scheduler else None),
        "environment": {} if profile.count else dict(NO_GPU_ENV),
    }


def profile_list(settings: HubSettings, groups: dict[str, GroupPolicy]) -> list[dict[str, Any]]:
    """KubeSpawner's profile_list for a user in ``groups``: only the profiles they may use."""
    out = []
    for profile in policy.offered(settings, groups):
        out.append(
            {
                "slug": profile.name,
                "display_name": profile.display_name,
                "description": profile.description,
                "default": profile.default,
                "kubespawner_override": profile_override(settings, profile),
            }
        )
    return out


def project_pvc(settings: HubSettings, group: str) -> dict[str, Any]:
    """The shared volume claim of a project group (applied once by an admin)."""
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": settings.kubernetes.project_storage_size}},
    }
    if settings.kubernetes.project_storage_class:
        spec["storageClassName"] = settings.kubernetes.project_storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": project_claim(group),
            "namespace": settings.kubernetes.namespace,
            "labels": {
                "app.kubernetes.io/part-of": "cube-lab",
                "cube-lab/project": project_claim(group),
            },
        },
        "spec": spec,
    }


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _field(obj: Any, name: str) -> Any:
    """A field of a Kubernetes model object or of a plain dict (camelCase in dicts)."""
    if isinstance(obj, Mapping):
        camel = name.split("_")[0] + "".join(w.title() for w in name.split("_")[1:])
        return obj.get(camel, obj.get(name))
    return getattr(obj, name, None)


def _names_secret(ref: Any, secret: str) -> bool:
    return ref is not None and _field(ref, "name") == secret


def _keyed_env(entry: Any, secret: str) -> bool:
    if _field(entry, "name") in KEY_ENV:
        return True
    source = _field(entry, "value_from")
    return source is not None and _names_secret(_field(source, "secret_key_ref"), secret)


def _keyed_volume(volume: Any, secret: str) -> bool:
    ref = _field(volume, "secret")
    if ref is not None and _field(ref, "secret_name") == secret:
        return True
    projected = _field(volume, "projected")
    for source in (_field(projected, "sources") or []) if projected is not None else []:
        if _field(source, "service_account_token") is not None:
            return True
        if _names_secret(_field(source, "secret"), secret):
            return True
    return False


def keyless(pod: Any, secret: str = STORE_SECRET) -> list[str]:
    """Take every key to the store out of a user's pod (a ``V1Pod``), in place: the
    service-account token mount, the variables of ``KEY_ENV``, anything that reads the store's
    Secret (env, envFrom, volumes and their mounts). Returns what was taken out, for the log:
    each is a chart or spawner setting an admin should remove."""
    removed: list[str] = []
    spec = pod.spec
    spec.automount_service_account_token = False
    dropped = {_field(v, "name") for v in spec.volumes or [] if _keyed_volume(v, secret)}
    if dropped:
        spec.volumes = [v for v in spec.volumes if _field(v, "name") not in dropped]
        removed += [f"volume {name}" for name in sorted(dropped)]
    for box in [*(spec.containers or []), *(spec.init_containers or [])]:
        kept = [e for e in box.env or [] if not _keyed_env(e, secret)]
        removed += [
            f"env {_field(e, 'name')} of {box.name}" for e in box.env or [] if e not in kept
        ]
        box.env = kept
        if box.env_from:
            sources = [
                s for s in box.env_from if not _names_secret(_field(s, "secret_ref"), secret)
            ]
            if len(sources) != len(box.env_from):
                removed.append(f"envFrom secret {secret} of {box.name}")
            box.env_from = sources
        if box.volume_mounts:
            box.volume_mounts = [m for m in box.volume_mounts if _field(m, "name") not in dropped]
    return removed


def pass_store_env(c: Any, environ: Mapping[str, str] | None = None) -> list[str]:
    """Under the chart (``hub.extraConfig``, after ``configure``): give the cube-lab service
    what it needs from the hub pod's environment (``STORE_ENV``: the database URL from the
    store's Secret, the API server's address). JupyterHub starts a service with only its
    entry's ``environment``; user servers get none of these. Returns the names passed."""
    environ = os.environ if environ is None else environ
    passed = [name for name in STORE_ENV if environ.get(name)]
    for service in c.JupyterHub.services:
        if service.get("name") == STORE_SERVICE:
            env = dict(service.get("environment") or {})
            env.update({name: environ[name] for name in passed})
            service["environment"] = env
            return passed
    raise InvalidInput(
        _t("no {STORE_SERVICE} service in c.JupyterHub.services", STORE_SERVICE=STORE_SERVICE),
        _t("Call cube_lab.hub.config.configure(c, settings, helm=True) first."),
    )


class CubeKubeSpawner(CubeSpawnerMixin, KubeSpawner):
    """KubeSpawner with cube-lab's profiles, project volumes and quota admission."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the configured values, put back before each profile is applied (no leaks)
        self._base_traits = {name: copy.deepcopy(getattr(self, name)) for name in PROFILE_TRAITS}
        self._base_volumes = copy.deepcopy(self.volumes)
        self._base_mounts = copy.deepcopy(self.volume_mounts)

    def cube_profile_list(self, spawner: Any = None) -> list[dict[str, Any]]:
        return profile_list(self.cube, self.group_policies())

    async def load_user_options(self) -> None:
        for name, value in self._base_traits.items():
            setattr(self, name, copy.deepcopy(value))
        await super().load_user_options()

    def apply_profile(self, profile: Profile, group: GroupPolicy | None) -> None:
        volumes = copy.deepcopy(self._base_volumes)
        mounts = copy.deepcopy(self._base_mounts)
        for name in self.group_policies():
            claim = project_claim(name)
            volumes.append({"name": claim, "persistentVolumeClaim": {"claimName": claim}})
            mounts.append({"name": claim, "mountPath": project_mount(name)})
        self.volumes = volumes
        self.volume_mounts = mounts

    def cube_pod_labels(self) -> dict[str, str]:
        """``cube_lab.k8s.pod_labels``' vocabulary for this server's pod: the project group it
        was admitted under (its quota's), else the user's personal project."""
        user: str = self.user.name  # type: ignore[attr-defined]
        project = self.cube_group.name if self.cube_group is not None else project_name(user)
        return pod_labels.server(project, user, self.name or "default")

    def get_env(self) -> dict[str, str]:
        env = super().get_env()
        env.update(self.cube_env())
        if self.cube.kubernetes.project_namespaces and self.cube_group is not None:
            # the lab's training, tuning and serving create their objects in the project's
            # namespace (cube_lab.k8s reads this); the namespace and RBAC are the admin's
            env[ENV_K8S_NAMESPACE] = project_namespace(self.cube_group.name)
        for name in KEY_ENV:
            env.pop(name, None)
        return env

    async def get_pod_manifest(self) -> Any:
        pod = await super().get_pod_manifest()
        pod.metadata.labels = {**(pod.metadata.labels or {}), **self.cube_pod_labels()}
        removed = keyless(pod)
        if removed:
            self.log.warning(
                "cube-lab: took out of %s's pod what holds keys to the store (remove it from "
                "the chart's singleuser settings): %s",
                self.user.name,
                ", ".join(removed),
            )
        return pod


def configure_kubernetes(c: Any, settings: HubSettings) -> None:
    """KubeSpawner settings from the hub settings file."""
    k = c.KubeSpawner
    c.JupyterHub.spawner_class = "cube_lab.hub.kubernetes.CubeKubeSpawner"
    kube = settings.kubernetes
    k.namespace = kube.namespace
    k.image = kube.image
    k.default_url = "/lab"
    # no Kubernetes credentials in user pods, even when singleuser.serviceAccountName is set
    k.automount_service_account_token = False
    k.env_keep = []  # nothing from the hub's environment (it holds the store's URL)
    if _is_loopback(settings.service_url):
        log.warning(
            "cube-lab: service_url %s is a loopback address: user pods cannot reach the "
            "cube-lab service there; set service_url to the hub Service (http://hub:8020) "
            "and expose the port (hub.service.extraPorts)",
            settings.service_url,
        )
    k.profile_list = lambda spawner: spawner.cube_profile_list()
    # the user's own volume at /mnt/<username>, created on first start
    k.storage_pvc_ensure = True
    k.pvc_name_template = user_claim("{user_server}")
    k.storage_capacity = kube.user_storage_size
    if kube.user_storage_class:
        k.storage_class = kube.user_storage_class
    k.volumes = [
        {"name": "user-volume", "persistentVolumeClaim": {"claimName": user_claim("{user_server}")}}
    ]
    k.volume_mounts = [{"name": "user-volume", "mountPath": "/mnt/{username}"}]
    k.notebook_dir = "/mnt/{username}"
    k.working_dir = "/mnt/{username}"
