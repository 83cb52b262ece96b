"""The one settings file of the hub (``hub/cube_hub.yaml``), read the same way by the hub
config, the spawners, the cube-admin service and the tests.

Every relative path in the file is relative to the file's folder; ``$CUBE_HUB_DATA_DIR``
overrides ``data_dir`` (the tests point it at a temporary folder).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from .. import accelerators
from ..errors import InvalidInput
from ..identity import check_name
from ..locale.messages import _t
from .quotas import GroupPolicy, Quota, demand
from .units import parse_cpu, parse_memory

log = logging.getLogger("cube-lab.hub")

ENV_SETTINGS = "CUBE_HUB_SETTINGS"
ENV_DATA_DIR = "CUBE_HUB_DATA_DIR"
DEFAULT_FILE = Path(__file__).resolve().parents[2] / "hub" / "cube_hub.yaml"
ADMIN_GROUP = "cube-admins"  # members may use the admin page; never a project group
SHAPES = ("local", "kubernetes")
# outside every project group: one server, no GPUs (a quota grants no device it does not name)
DEFAULT_PERSONAL_QUOTA = Quota(servers=1)


@dataclass(frozen=True)
class Profile:
    """A resource profile a user picks when starting a server."""

    name: str
    display_name: str
    description: str = ""
    cpu: float | None = None  # cores (limit; the guarantee is cpu_guarantee or this)
    memory: int | None = None  # bytes
    cpu_guarantee: float | None = None
    memory_guarantee: int | None = None
    accelerator: accelerators.Accelerator | None = None
    count: int = 0
    memory_mib: int | None = None  # per-device share (HAMi vGPU, Ascend slices)
    cores_percent: int | None = None
    image: str | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()
    default: bool = False

    @classmethod
    def parse(cls, name: str, raw: Mapping[str, Any]) -> Profile:
        check_name(name, "profile name")
        known = {
            "display_name", "description", "cpu", "memory", "cpu_guarantee",
            "memory_guarantee", "accelerator", "count", "memory_mib", "cores_percent",
            "image", "node_selector", "tolerations", "default",
        }  # fmt: skip
        unknown = set(raw) - known
        if unknown:
            raise InvalidInput(
                _t("profile {name}: unknown field(s) {value}", name=name, value=sorted(unknown)),
                _t("Use {value}.", value=sorted(known)),
            )
        acc = accelerators.get(raw["accelerator"]) if raw.get("accelerator") else None
        count = int(raw.get("count", 1 if acc else 0))
        profile = cls(
            name=name,
            display_name=str(raw.get("display_name") or name),
            description=str(raw.get("description") or ""),
            cpu=parse_cpu(raw["cpu"], f"profile {name} cpu") if "cpu" in raw else None,
            memory=parse_memory(raw["memory"], f"profile {name} memory")
            if "memory" in raw
            else None,
            cpu_guarantee=parse_cpu(raw["cpu_guarantee"]) if "cpu_guarantee" in raw else None,
            memory_guarantee=parse_memory(raw["memory_guarantee"])
            if "memory_guarantee" in raw
            else None,
            accelerator=acc,
            count=count,
            memory_mib=raw.get("memory_mib"),
            cores_percent=raw.get("cores_percent"),
            image=raw.get("image"),
            node_selector=dict(raw.get("node_selector") or {}),
            tolerations=tuple(raw.get("tolerations") or ()),
            default=bool(raw.get("default", False)),
        )
        profile.limits()  # validates the accelerator amounts against the table
        return profile

    def limits(self) -> dict[str, str]:
        """Accelerator container limits, named by the one table."""
        if self.accelerator is None:
            return {}
        return accelerators.resources_for(
            self.accelerator.key, self.count, self.memory_mib, self.cores_percent
        )

    def demand(self) -> dict[str, float]:
        """What one server of this profile takes from its project's quota."""
        return demand(servers=1, cpu=self.cpu, memory=self.memory, limits=self.limits())

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "display_name": self.display_name,
            "description": self.description,
            "cpu": self.cpu,
            "memory": self.memory,
            "accelerator": self.accelerator.key if self.accelerator else None,
            "limits": self.limits(),
            "image": self.image,
        }


@dataclass(frozen=True)
class KubernetesSettings:
    namespace: str = "cube-lab"
    image: str = "quay.io/jupyter/scipy-notebook:latest"
    user_storage_size: str = "10Gi"
    user_storage_class: str | None = None
    project_storage_size: str = "100Gi"
    project_storage_class: str | None = None
    project_namespaces: bool = False  # one namespace per project group for its jobs

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> KubernetesSettings:
        raw = raw or {}
        user = raw.get("user_storage") or {}
        project = raw.get("project_storage") or {}
        return cls(
            namespace=str(raw.get("namespace", cls.namespace)),
            image=str(raw.get("image", cls.image)),
            user_storage_size=str(user.get("size", cls.user_storage_size)),
            user_storage_class=user.get("storage_class"),
            project_storage_size=str(project.get("size", cls.project_storage_size)),
            project_storage_class=project.get("storage_class"),
            project_namespaces=bool(raw.get("project_namespaces", False)),
        )


@dataclass(frozen=True)
class HubSettings:
    path: Path
    shape: str
    bind_url: str
    data_dir: Path
    admin_users: tuple[str, ...]
    idle_timeout: int
    open_profiles: tuple[str, ...]
    profiles: dict[str, Profile]
    groups: dict[str, GroupPolicy]
    group_members: dict[str, tuple[str, ...]]
    kubernetes: KubernetesSettings
    cube_db_url: str | None = None
    start_timeout: int = 120
    hub_bind_url: str = "http://127.0.0.1:8081"  # the hub's API, reached by servers and services
    proxy_api_url: str = "http://127.0.0.1:8001"
    admin_url: str = "http://127.0.0.1:8010"  # where the cube-admin service listens
    service_url: str = "http://127.0.0.1:8020"  # where the cube-lab service (the store) listens
    sso: dict[str, Any] | None = None  # OIDC instead of NativeAuthenticator (see auth.py)
    # NativeAuthenticator sign-up and lockout (the ``sign_up:`` section); a class of 60 mistyping
    # passwords in the first minutes must not be locked out for long.
    open_signup: bool = False  # False: every sign-up waits for an admin at /hub/authorize
    allowed_failed_logins: int = 10  # 0: never lock out
    seconds_before_next_try: int = 30
    minimum_password_length: int = 10  # the sign-up and change-password rule, said on refusal
    check_common_password: bool = True  # refuse NativeAuthenticator's list of common ones
    roster_passwords_one_time: bool = True  # a roster account changes its password at first login
    # what a user may hold outside every project group (the ``personal_quota:`` section), and
    # the admins' own (``admin_quota:``, else the personal one): no server runs unmetered
    personal_quota: Quota = field(default_factory=lambda: DEFAULT_PERSONAL_QUOTA)
    admin_quota: Quota = field(default_factory=lambda: DEFAULT_PERSONAL_QUOTA)

    # -- where things live ------------------------------------------------------------

    @property
    def hub_dir(self) -> Path:
        """The hub's own state: its database, cookie secret, the admission ledger."""
        return self.data_dir / "hub"

    @property
    def users_dir(self) -> Path:
        return self.data_dir / "users"

    @property
    def projects_dir(self) -> Path:
        return self.data_dir / "projects"

    @property
    def cube_data_dir(self) -> Path:
        """cube-lab's store: the cube-lab service's alone (user servers never see it)."""
        return self.data_dir / "cube-lab"

    @property
    def ledger_path(self) -> Path:
        return self.hub_dir / "admission.sqlite"

    @property
    def ip(self) -> str:
        return urlparse(self.bind_url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        return urlparse(self.bind_url).port or 8000

    def profile(self, name: str) -> Profile:
        found = self.profiles.get(name)
        if found is None:
            raise InvalidInput(
                _t("unknown profile {name!r}", name=name),
                _t("Known profiles: {value}.", value=", ".join(self.profiles)),
            )
        return found

    def is_admin(self, username: str, groups: Any = ()) -> bool:
        """An admin of the hub: in ``admin_users`` or a member of the admins' group."""
        return username in self.admin_users or ADMIN_GROUP in set(groups)

    def personal_quota_for(self, username: str, groups: Any = ()) -> Quota:
        """The quota of what ``username`` (a member of hub ``groups``) runs outside every
        project group: ``admin_quota`` for admins, ``personal_quota`` for everyone else."""
        return self.admin_quota if self.is_admin(username, groups) else self.personal_quota

    def default_profile(self) -> Profile:
        return next((p for p in self.profiles.values() if p.default), *self.profiles.values())


def load(path: str | Path | None = None) -> HubSettings:
    """Read the settings file ($CUBE_HUB_SETTINGS, else hub/cube_hub.yaml in the checkout)."""
    file = Path(path or os.environ.get(ENV_SETTINGS) or DEFAULT_FILE).expanduser().resolve()
    try:
        raw = yaml.safe_load(file.read_text()) or {}
    except FileNotFoundError:
        raise InvalidInput(
            _t("hub settings file {file} not found", file=file),
            _t("Set ${ENV_SETTINGS} or create it.", ENV_SETTINGS=ENV_SETTINGS),
        ) from None
    warn_if_exposed(file, raw)
    return parse(raw, file)


def warn_if_exposed(file: Path, raw: Mapping[str, Any]) -> bool:
    """Warn (and say True) when the settings hold the store's database password
    (``cube_db_url``) and other accounts may read the file: users' code runs on this machine."""
    url = raw.get("cube_db_url")
    if not isinstance(url, str) or not urlparse(url).password:
        return False
    mode = stat.S_IMODE(file.stat().st_mode)
    if not mode & (stat.S_IRGRP | stat.S_IROTH):
        return False
    log.warning(
        _t(
            "hub settings file {file} holds the password of cube_db_url and other accounts "
            "can read it (mode {mode}): run chmod 600 {file}",
            file=file,
            mode=f"{mode:04o}",
        )
    )
    return True


def parse(raw: Mapping[str, Any], path: Path) -> HubSettings:
    base = path.parent
    shape = str(raw.get("shape", "local"))
    if shape not in SHAPES:
        raise InvalidInput(
            _t("unknown hub shape {shape!r}", shape=shape),
            _t("Use one of {value}.", value=list(SHAPES)),
        )
    data_dir = Path(
        os.environ.get(ENV_DATA_DIR) or raw.get("data_dir") or "~/.local/share/cube-lab-hub"
    ).expanduser()
    if not data_dir.is_absolute():
        data_dir = base / data_dir
    raw_profiles = raw.get("profiles") or {"cpu": {"display_name": "CPU", "default": True}}
    profiles = {name: Profile.parse(name, spec or {}) for name, spec in raw_profiles.items()}
    open_profiles = tuple(raw.get("open_profiles", [n for n, p in profiles.items() if not p.count]))
    groups: dict[str, GroupPolicy] = {}
    members: dict[str, tuple[str, ...]] = {}
    for name, spec in (raw.get("groups") or {}).items():
        check_name(name, "group name")
        if name == ADMIN_GROUP:
            raise InvalidInput(
                _t(
                    "{ADMIN_GROUP} is reserved for the admins of the admin page",
                    ADMIN_GROUP=ADMIN_GROUP,
                )
            )
        spec = spec or {}
        groups[name] = GroupPolicy.from_properties(
            name, {"cube_lab": {"profiles": spec.get("profiles"), "quota": spec.get("quota")}}
        )
        members[name] = tuple(spec.get("users") or ())
    for name in [*open_profiles, *(p for g in groups.values() for p in g.profiles)]:
        if name not in profiles:
            raise InvalidInput(_t("unknown profile {name!r} in the hub settings", name=name))
    personal = _personal_quota(raw, "personal_quota", DEFAULT_PERSONAL_QUOTA)
    admin_quota = _personal_quota(raw, "admin_quota", personal)
    admins = tuple(raw.get("admin_users") or ())
    if not admins:
        raise InvalidInput(
            _t("the hub settings name no admin_users"),
            _t("Add admin_users: [your-name] to the file."),
        )
    return HubSettings(
        path=path,
        shape=shape,
        bind_url=str(raw.get("bind_url", "http://127.0.0.1:8000")),
        data_dir=data_dir.resolve(),
        admin_users=admins,
        idle_timeout=int(raw.get("idle_timeout", 3600)),
        open_profiles=open_profiles,
        profiles=profiles,
        groups=groups,
        group_members=members,
        kubernetes=KubernetesSettings.parse(raw.get("kubernetes")),
        cube_db_url=raw.get("cube_db_url"),
        start_timeout=int(raw.get("start_timeout", 120)),
        hub_bind_url=str(raw.get("hub_bind_url", HubSettings.hub_bind_url)),
        proxy_api_url=str(raw.get("proxy_api_url", HubSettings.proxy_api_url)),
        admin_url=str(raw.get("admin_url", HubSettings.admin_url)),
        service_url=str(raw.get("service_url", HubSettings.service_url)),
        sso=dict(raw["sso"]) if raw.get("sso") else None,
        personal_quota=personal,
        admin_quota=admin_quota,
        **_sign_up(raw.get("sign_up") or {}),
    )


def _personal_quota(raw: Mapping[str, Any], key: str, default: Quota) -> Quota:
    """``personal_quota:`` / ``admin_quota:``: a quota as a group's (gpu_hours is the user's
    own per month; gpu_hours_per_member means nothing there)."""
    if raw.get(key) is None:
        return default
    try:
        quota = Quota.parse(raw[key])
    except InvalidInput as exc:
        raise InvalidInput(
            _t("{key} in the hub settings: {error}", key=key, error=exc.error), exc.detail
        ) from None
    if quota.gpu_hours_per_member is not None or quota.per_member is not None:
        raise InvalidInput(
            _t(
                "{key} in the hub settings is one user's: it has no gpu_hours_per_member or"
                " per_member",
                key=key,
            ),
            _t("Give the user's own limits at its top level (gpu_hours for GPU-hours)."),
        )
    return quota


def _sign_up(raw: dict[str, Any]) -> dict[str, Any]:
    """The ``sign_up:`` section: open_signup, allowed_failed_logins, seconds_before_next_try,
    minimum_password_length, check_common_password, roster_passwords_one_time."""
    if not isinstance(raw, dict):
        raise InvalidInput(_t("sign_up in the hub settings must be a mapping"))
    out: dict[str, Any] = {"open_signup": bool(raw.get("open_signup", HubSettings.open_signup))}
    for key in ("check_common_password", "roster_passwords_one_time"):
        out[key] = bool(raw.get(key, getattr(HubSettings, key)))
    for key in ("allowed_failed_logins", "seconds_before_next_try", "minimum_password_length"):
        value = raw.get(key, getattr(HubSettings, key))
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInput(
                _t("sign_up.{key} in the hub settings must be a whole number >= 0", key=key)
            )
        out[key] = value
    return out
