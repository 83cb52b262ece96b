"""The cube-lab service: under the hub, the one process that owns cube-lab's store.

Users run arbitrary code in their lab servers, so those servers hold no database URL, no
data dir and no compute credentials. This service, managed by the hub beside cube-admin, holds
them: it serves the same REST API as the lab extension (``cube_lab.handlers.routes``) at
``/services/cube-lab/cube/api/v1/...``, and a lab server forwards its users' requests here
(``cube_lab/handlers/forward.py``) with its own hub token.

Who calls is decided here and only here: every request must carry a hub token that grants
``access:services!service=cube-lab``, either in the header (``Authorization: token ...``: lab
servers, kernels, the CLI; URL tokens are not read) or, from a browser, in the OAuth cookie
this service set (``browser_session.py``: the panels call here straight through the hub's
proxy, one hop less than through the user's server) with its XSRF token in ``X-XSRFToken``.
The hub says whose the token is, and that user's groups and admin flag come from the hub, not
from anything the caller sends. Paths a user gives resolve in that user's home
(``users/<folder>``). A job this service started for a user (a pipeline run, a training job,
a tuning experiment, run as the user's OS account) calls with the token the service gave it
(``cube_lab.job_credentials``): it acts as its owner, never as an admin, and only while the
job is active. Run by the hub (see ``config.py``): ``python -m cube_lab.hub.store_service``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from jupyter_server.auth.identity import IdentityProvider, User
from jupyterhub.services.auth import HubAuth, HubOAuth, HubOAuthCallbackHandler
from tornado import web

from .. import accounts, job_credentials, startup
from ..config import Settings
from ..errors import CubeError
from ..handlers import routes
from ..handlers.base import LOCAL_USER, ROOT_DIR, SHARED_ROOTS, WORKSPACE
from ..identity import Caller
from ..locale.messages import _t
from ..names import folder_name
from ..workspace import Workspace
from . import client, course_material_api
from .browser_session import BrowserSessionHandler
from .config import STORE_SERVICE, secret_file, service_base
from .hubapi import HubAPI
from .request_log import log_request
from .service_main import run_service
from .settings import ADMIN_GROUP, HubSettings, load

log = logging.getLogger("cube-lab-service")
USER_TTL_S = 2.0  # how long a user's groups and admin flag are taken as the hub last said


@dataclass
class HubCaller(User):
    """The identity of a request: a hub user, as the hub describes them."""

    hub_user: dict[str, Any] = field(default_factory=dict)


class HubUsers:
    """Each user's hub record (groups, admin), fetched with the service's own token. A record
    older than ``USER_TTL_S`` is still used for the request at hand while a fresh one is
    fetched beside it, so no request but a user's first waits for the hub; a change of groups
    or of the admin flag takes effect within that time. Joining the user's project groups as
    team projects happens here too, once per change of their groups."""

    def __init__(self, hub: HubAPI, workspace: Workspace) -> None:
        self.hub = hub
        self.workspace = workspace
        self._users: dict[str, tuple[float, dict[str, Any]]] = {}
        self._joined: dict[str, tuple[str, ...]] = {}
        self._refreshing: dict[str, asyncio.Task[dict[str, Any]]] = {}

    async def get(self, name: str) -> dict[str, Any]:
        cached = self._users.get(name)
        if cached is None:
            return await self._refresh(name)
        if time.monotonic() - cached[0] >= USER_TTL_S and name not in self._refreshing:
            task = asyncio.get_running_loop().create_task(self._refresh(name))
            self._refreshing[name] = task
            task.add_done_callback(lambda t: self._done(name, t))
        return cached[1]

    def _done(self, name: str, task: asyncio.Task[dict[str, Any]]) -> None:
        self._refreshing.pop(name, None)
        if not task.cancelled() and task.exception() is not None:
            log.warning("cannot refresh %s from the hub: %s", name, task.exception())

    async def _refresh(self, name: str) -> dict[str, Any]:
        model = await self.hub.user(name)
        record = {
            "name": model["name"],
            "admin": bool(model.get("admin")),
            "groups": [g for g in model.get("groups") or () if g != ADMIN_GROUP],
        }
        groups = tuple(sorted(record["groups"]))
        if self._joined.get(name) != groups:
            joined = await asyncio.to_thread(
                self.workspace.projects.join_groups, name, list(groups)
            )
            if joined:
                log.info("%s joined project(s) %s from the hub", name, joined)
            self._joined[name] = groups
        self._users[name] = (time.monotonic(), record)
        return record


class HubTokenIdentity(IdentityProvider):
    """jupyter-server's identity hook, answered by the hub: the token's owner, or nobody."""

    hub_auth: HubAuth | None = None
    users: HubUsers | None = None

    workspace: Workspace | None = None  # where a job token's job is looked up
    jobs: job_credentials.Issuer | None = None

    async def get_user(self, handler: web.RequestHandler) -> HubCaller | None:  # type: ignore[override]
        assert self.hub_auth is not None and self.users is not None
        token = self.hub_auth.get_token(handler, in_cookie=False)
        if token and job_credentials.is_job_token(token):
            return await self._job_caller(handler, token)
        if token:
            model = await self.hub_auth.user_for_token(token, sync=False)
            handler._token_authenticated = True  # type: ignore[attr-defined]  # no xsrf check
        elif isinstance(self.hub_auth, HubOAuth):
            # a browser's OAuth cookie, taken only with its XSRF token where one is due (every
            # fetch from a page, writes or reads; HubOAuth checks it and else returns None)
            model = await self.hub_auth.get_user(handler, sync=False)
        else:
            return None
        if not model or model.get("kind", "user") != "user":
            return None  # unknown or revoked tokens, and services' own tokens
        if not self.hub_auth.check_scopes(self.hub_auth.access_scopes, model):
            log.info("token of %s lacks %s", model.get("name"), self.hub_auth.access_scopes)
            return None
        try:
            record = await self.users.get(model["name"])
        except CubeError as exc:
            log.warning("cannot read %s from the hub: %s", model.get("name"), exc.error)
            return None
        # admission, asked for by jobs started in this request, is charged to this user
        client.ON_BEHALF_OF.set(record["name"])
        return HubCaller(username=record["name"], hub_user=record)

    async def _job_caller(self, handler: web.RequestHandler, token: str) -> HubCaller:
        """The owner of the job a job token names, while that job is active; never an admin.
        A token this service did not make, changed, or of a job that ended: a 401."""
        assert self.users is not None
        if self.jobs is None or self.workspace is None:
            raise job_credentials.InvalidJobToken(
                _t("this cube-lab service takes no job tokens"),
                _t("Use a hub token of yours (Authorization: token $JUPYTERHUB_API_TOKEN)."),
            )
        claims = self.jobs.verify(token)
        if not await asyncio.to_thread(job_credentials.active, self.workspace.store, claims):
            raise job_credentials.ended(claims)
        handler._token_authenticated = True  # type: ignore[attr-defined]
        try:
            record = await self.users.get(claims.owner)
        except CubeError as exc:
            log.warning("cannot read %s from the hub: %s", claims.owner, exc.error)
            raise job_credentials.InvalidJobToken(
                _t("the hub does not answer for {owner}, the job's owner", owner=claims.owner),
                exc.error,
            ) from None
        record = {**record, "admin": False, "job": {"kind": claims.kind, "id": claims.id}}
        client.ON_BEHALF_OF.set(record["name"])
        return HubCaller(username=record["name"], hub_user=record)


def job_issuer(settings: HubSettings, data_dir: Path) -> job_credentials.Issuer:
    """The issuer of the tokens of jobs this service starts: its secret in ``data_dir``, the
    service's address as user servers (and so jobs) reach it, owners' homes as path roots."""
    return job_credentials.Issuer(
        job_credentials.load_secret(data_dir),
        service_base(settings),
        home=lambda owner: settings.users_dir / folder_name(owner),
    )


def user_home(settings: HubSettings) -> Any:
    """The root user-given paths resolve in, per caller: their home under ``users/``."""

    def home(caller: Caller) -> Path:
        return settings.users_dir / folder_name(caller.username)

    return home


def shared_folders(settings: HubSettings) -> Any:
    """The project groups' folders a caller shares (``<data_dir>/projects/<group>``, linked
    from their home as ``projects/<group>``): user-given paths may lead there too."""

    def folders(caller: Caller) -> list[Path]:
        found = (settings.projects_dir / folder_name(group) for group in caller.groups)
        return [folder for folder in found if folder.is_dir()]

    return folders


def store_settings(settings: HubSettings) -> Settings:
    """The store the service opens: ``<data_dir>/cube-lab`` (or ``cube_db_url``), closed to
    other accounts (passable only, when jobs run as their owners' accounts beneath it)."""
    data_dir = settings.cube_data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    backend = "kubernetes" if settings.shape == "kubernetes" else "local"
    # jobs run as their owner's OS account (local shape, service run as root)
    os_accounts = settings.shape == "local" and accounts.enabled()
    if os_accounts:
        accounts.secure_store(data_dir)
    else:
        os.chmod(data_dir, 0o700)
    resolved = Settings.resolve(data_dir, settings.cube_db_url, backend)
    return replace(resolved, os_accounts=os_accounts)


def make_app(
    workspace: Workspace, settings: HubSettings, identity: HubTokenIdentity, prefix: str
) -> web.Application:
    base = prefix.rstrip("/")
    handlers: list[Any] = [(base + pattern, handler) for pattern, handler in routes()]
    handlers += course_material_api.routes(base)  # cube-admin's alone
    handlers += [
        (f"{base}/browser-session", BrowserSessionHandler),
        (f"{base}/oauth_callback", HubOAuthCallbackHandler),
    ]
    return web.Application(
        handlers,
        base_url=prefix,
        identity_provider=identity,
        cookie_secret=secret_file(settings.hub_dir / f"{STORE_SERVICE}-cookie-secret"),
        allow_remote_access=True,  # callers are lab servers and browsers; tokens decide
        log_function=log_request,  # ?token=... never reaches the log
        # HubOAuth checks the XSRF token of every cookie request (get_user above); token
        # requests need none
        xsrf_cookies=False,
        **{
            WORKSPACE: workspace,
            ROOT_DIR: user_home(settings),
            SHARED_ROOTS: shared_folders(settings),
            LOCAL_USER: None,
        },
    )


async def _serve() -> None:
    settings = load()
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{STORE_SERVICE}/")
    # the service's own token leaves the environment, which every job started here inherits
    token = os.environ.pop("JUPYTERHUB_API_TOKEN")
    client.hold_token(token)
    workspace = startup.open_workspace(store_settings(settings), log)
    # jobs started here reach the service as their owners, with tokens of their own
    jobs = job_issuer(settings, workspace.settings.data_dir)
    job_credentials.configure(jobs)
    identity = HubTokenIdentity()
    identity.workspace, identity.jobs = workspace, jobs
    # HubOAuth: header tokens as HubAuth, and browsers' cookies; the one instance, which the
    # OAuth callback handler uses too
    identity.hub_auth = HubOAuth.instance(api_token=token, cache_max_age=60)
    identity.users = HubUsers(HubAPI(token=token), workspace)
    app = make_app(workspace, settings, identity, prefix)
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", settings.service_url))
    host = url.hostname or "127.0.0.1"
    # under the chart the name is the hub pod's Service, reached from user pods
    app.listen(url.port or 8020, host if host in ("127.0.0.1", "localhost", "::1") else "0.0.0.0")
    log.info(
        "cube-lab service on %s%s: data in %s, store %s",
        url.geturl().rstrip("/"),
        prefix,
        workspace.settings.data_dir,
        workspace.settings.store_label,
    )
    scheduler = startup.start_background(workspace)
    try:
        await asyncio.Event().wait()
    finally:
        scheduler.cancel()
        workspace.close()


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    logging.basicConfig(level=logging.INFO, format="[cube-lab-service %(levelname)s] %(message)s")
    run_service(_serve(), log)


if __name__ == "__main__":
    main()
