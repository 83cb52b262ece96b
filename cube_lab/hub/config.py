"""Apply the hub settings file to JupyterHub's config object; ``hub/jupyterhub_config.py``
is just ``configure(get_config(), load())``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

from ..k8s import client as cluster_env
from ..locale.messages import _t, env_locale
from .client import ENV_ADMIN_URL
from .notices import FILE_NAME as NOTICES_FILE
from .settings import ADMIN_GROUP, ENV_DATA_DIR, ENV_SETTINGS, HubSettings

ONE_TIME_FILE = "one-time-passwords.json"
ADMIN_SERVICE = "cube-admin"
ADMIN_SCOPE = "custom:cube-admin:write"
STORE_SERVICE = "cube-lab"  # owns cube-lab's store; see cube_lab/hub/store_service.py
CULLER = "idle-culler"
HUB_FOLDER = Path(__file__).resolve().parents[2] / "hub"


def proxy_command() -> list[str]:
    """configurable-http-proxy from hub/node_modules (make hub installs it), else PATH."""
    local = HUB_FOLDER / "node_modules" / ".bin" / "configurable-http-proxy"
    if local.exists():
        return [str(local)]
    found = shutil.which("configurable-http-proxy")
    if found:
        return [found]
    raise SystemExit(
        "configurable-http-proxy not found: run `make hub` (npm install in hub/) "
        "or `npm install -g configurable-http-proxy`"
    )


def service_base(settings: HubSettings) -> str:
    """Where user servers reach the cube-lab service (its own address, not through the proxy)."""
    return settings.service_url.rstrip("/") + f"/services/{STORE_SERVICE}/"


def secret_file(path: Path) -> bytes:
    """A cookie secret (the hub's, a service's): made 0600 if missing (JupyterHub refuses one
    readable by others), and read."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
    return path.read_text().strip().encode()


def configure_pages(c: Any, settings: HubSettings, *, native: bool) -> None:
    """The hub's pages as cube-lab shapes them (cube_lab/hub/pages.py): its templates first,
    ``_`` in the reader's language, the ``cube`` variable (notices, has a password), the
    Dismiss form's handler and the stop notice cleared when the user starts a server again."""
    from . import pages

    j = c.JupyterHub
    board = settings.hub_dir / NOTICES_FILE
    kept_paths = [p for p in j.get("template_paths", []) if p]
    j.template_paths = [str(pages.TEMPLATES), *kept_paths]
    options = dict(j.get("jinja_environment_options", {}))
    extension = f"{pages.__name__}.{pages.PageText.__name__}"
    options["extensions"] = [*options.get("extensions", []), extension]
    j.jinja_environment_options = options
    kept_vars = dict(j.get("template_vars", {}))
    j.template_vars = {**kept_vars, "cube": pages.page_vars(board, native=native)}
    kept_handlers = list(j.get("extra_handlers", []))
    j.extra_handlers = [
        *kept_handlers,
        (r"/cube/notices/(\d+)/dismiss", pages.dismiss_handler(), {"board_path": str(board)}),
    ]
    if "pre_spawn_hook" not in c.Spawner:
        c.Spawner.pre_spawn_hook = pages.clear_stop_on_spawn(board)


def warn_closed_folders(settings: HubSettings) -> list[Path]:
    """Where each user's server runs as their own account (the local shape, run as root), the
    folders on the way to the users' homes, this Python and cube-lab must let every account
    pass; otherwise each server fails to start after the start timeout ("didn't respond").
    Say so at start, with the chmod that fixes it; the folders found are returned."""
    from .. import accounts

    if not accounts.enabled():
        return []
    wanted = [settings.users_dir, Path(sys.executable), Path(__file__)]
    closed = list(dict.fromkeys(f for path in wanted for f in accounts.closed_folders(path)))
    if closed:
        names = " ".join(str(f) for f in closed)
        message = _t(
            "cube-lab hub: user accounts cannot pass {names} (no o+x), on the way to the users'"
            " homes, Python or cube-lab: every server would fail to start. Fix: chmod o+x"
            " {names} (nothing becomes listable or readable), or put the hub's data_dir and"
            " Python elsewhere.",
            names=names,
        )
        print(f"\n{'=' * 72}\n{message.translated(env_locale())}\n{'=' * 72}\n", file=sys.stderr)
    return closed


def configure(c: Any, settings: HubSettings, *, helm: bool = False) -> None:
    """Everything the settings file says. ``helm=True`` (inside Zero to JupyterHub's
    ``hub.extraConfig``) leaves what the chart runs alone: addresses, database, secrets, the
    proxy pod and its culler."""
    hub_dir = settings.hub_dir
    hub_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(hub_dir, 0o700)  # the hub database holds password hashes and tokens
    j = c.JupyterHub

    if not helm:
        settings.users_dir.mkdir(parents=True, exist_ok=True)
        j.bind_url = settings.bind_url
        j.hub_bind_url = settings.hub_bind_url
        j.db_url = f"sqlite:///{hub_dir / 'jupyterhub.sqlite'}"
        j.cookie_secret_file = str(hub_dir / "jupyterhub_cookie_secret")
        secret_file(hub_dir / "jupyterhub_cookie_secret")
        j.pid_file = str(hub_dir / "jupyterhub.pid")
        j.cleanup_servers = False  # servers survive a hub restart; the hub finds them by pid
        j.cleanup_proxy = True
        c.ConfigurableHTTPProxy.command = proxy_command()
        c.ConfigurableHTTPProxy.api_url = settings.proxy_api_url
        c.ConfigurableHTTPProxy.pid_file = str(hub_dir / "proxy.pid")

    # -- who may log in ----------------------------------------------------------------
    c.Authenticator.admin_users = set(settings.admin_users)
    if settings.sso:
        from .auth import configure_oidc

        configure_oidc(c, settings.sso)
    else:
        j.authenticator_class = "cube_lab.hub.auth.CubeNativeAuthenticator"
        n = c.NativeAuthenticator
        n.open_signup = settings.open_signup  # False: sign-ups wait for an admin at /hub/authorize
        n.minimum_password_length = settings.minimum_password_length
        n.check_common_password = settings.check_common_password
        n.allowed_failed_logins = settings.allowed_failed_logins
        n.seconds_before_next_try = settings.seconds_before_next_try
        c.Authenticator.allow_all = True  # approval is NativeAuthenticator's own gate
        # the one-time admin passwords' hashes: still one of them -> change it first (auth.py)
        c.CubeNativeAuthenticator.one_time_file = str(hub_dir / ONE_TIME_FILE)
        c.CubeNativeAuthenticator.roster_passwords_one_time = settings.roster_passwords_one_time
    configure_pages(c, settings, native=not settings.sso)

    # -- the servers -------------------------------------------------------------------
    if settings.shape == "kubernetes":
        from .kubernetes import configure_kubernetes

        configure_kubernetes(c, settings)
    else:
        j.spawner_class = "cube_lab.hub.spawner.CubeLocalSpawner"
        warn_closed_folders(settings)
    c.Spawner.start_timeout = settings.start_timeout
    c.Spawner.http_timeout = settings.start_timeout
    # the spawners (in this process) read the settings file; user servers are not told where
    # it is (it may hold the store's database URL)
    os.environ[ENV_SETTINGS] = str(settings.path)
    os.environ[ENV_DATA_DIR] = str(settings.data_dir)
    # what a server's own token may do: post activity, ask cube-admin for admission, reach the
    # cube-lab service as its user (the only way to the store), read its user's groups
    c.Spawner.server_token_scopes = [
        "users:activity!user",
        f"access:services!service={ADMIN_SERVICE}",
        f"access:services!service={STORE_SERVICE}",
        "read:users:groups!user",
    ]

    # -- roles and scopes --------------------------------------------------------------
    j.custom_scopes = {
        ADMIN_SCOPE: {"description": "Edit project groups, their members, quotas and profiles."}
    }
    j.extra_user_scopes = {
        f"access:services!service={ADMIN_SERVICE}",
        f"access:services!service={STORE_SERVICE}",
    }
    # under the chart, keep its roles and services (e.g. its culler's) and add ours
    kept_roles = list(j["load_roles"]) if helm and "load_roles" in j else []
    j.load_roles = [
        *kept_roles,
        {
            "name": "cube-admin",
            "description": "Uses the cube-admin page",
            "scopes": [ADMIN_SCOPE, f"access:services!service={ADMIN_SERVICE}"],
            "users": list(settings.admin_users),
            "groups": [ADMIN_GROUP],
        },
        {
            "name": "cube-admin-service",
            "scopes": [
                "admin:groups",
                "admin:users",  # a course's roster makes and approves accounts
                "list:users",
                "read:users",
                "read:servers",
                "delete:servers",  # an admin stops a student's server with a reason
                "read:roles",
            ],
            "services": [ADMIN_SERVICE],
        },
        {
            # who a token belongs to and their groups; admission on the user's behalf
            "name": "cube-lab-service",
            "scopes": [
                "read:users",
                "read:groups",
                ADMIN_SCOPE,
                f"access:services!service={ADMIN_SERVICE}",
            ],
            "services": [STORE_SERVICE],
        },
    ]
    env = {ENV_SETTINGS: str(settings.path), ENV_DATA_DIR: str(settings.data_dir)}
    if "CUBE_LAB_OS_ACCOUNTS" in os.environ:  # the admin's choice reaches the service too
        env["CUBE_LAB_OS_ACCOUNTS"] = os.environ["CUBE_LAB_OS_ACCOUNTS"]
    services: list[dict[str, Any]] = list(j["services"]) if helm and "services" in j else []
    services += [
        {
            "name": ADMIN_SERVICE,
            "url": settings.admin_url,
            "command": [sys.executable, "-m", "cube_lab.hub.admin"],
            "environment": env,
            "oauth_client_allowed_scopes": [ADMIN_SCOPE],
            "oauth_no_confirm": True,  # part of the hub: no consent page
            # not in the Services menu (a student would meet a 403 there): admins get their
            # own nav link (templates/jupyterhub/page.html)
            "display": False,
        },
        {
            "name": STORE_SERVICE,
            "url": settings.service_url,
            "command": [sys.executable, "-m", "cube_lab.hub.store_service"],
            "environment": {
                **env,
                ENV_ADMIN_URL: settings.admin_url.rstrip("/") + f"/services/{ADMIN_SERVICE}/",
                # the cluster credentials the hub was started with are the service's alone:
                # it creates the jobs, experiments and deployments users ask for there
                **{k: os.environ[k] for k in cluster_env.ENV_VARS if os.environ.get(k)},
            },
            # panels in the browser call it straight (OAuth cookie + XSRF): no consent page
            "oauth_no_confirm": True,
            "display": False,  # an API, not a page
        },
    ]
    if settings.idle_timeout > 0 and not helm:
        j.load_roles.append(
            {
                "name": CULLER,
                "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
                "services": [CULLER],
            }
        )
        services.append(
            {
                "name": CULLER,
                "command": [
                    sys.executable,
                    "-m",
                    "jupyterhub_idle_culler",
                    f"--timeout={settings.idle_timeout}",
                ],
            }
        )
    j.services = services
