"""Who may log in: NativeAuthenticator for the embedded hub, an OIDC example for SSO.

NativeAuthenticator keeps bcrypt hashes in the hub database; sign-ups wait for an admin's
approval (/hub/authorize). Its trap: a name listed in ``admin_users`` is approved on sign-up,
so whoever signs up first as "admin" becomes admin. ``CubeNativeAuthenticator`` closes it by
creating every configured admin at first start with a generated one-time password, printed
once and stored only as its hash; the admin changes it at /hub/change-password.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import LoginHandler as NativeLoginHandler
from nativeauthenticator.orm import UserInfo
from tornado.escape import url_escape
from tornado.httputil import url_concat

from .settings import ADMIN_GROUP


class _NoTimer:
    def timer(self, *args: Any) -> _NoTimer:
        return self

    def start(self) -> _NoTimer:
        return self

    def stop(self, *args: Any, **kwargs: Any) -> None:
        return None


class CubeLoginHandler(NativeLoginHandler):
    """NativeAuthenticator 1.3's login page on JupyterHub 6: JupyterHub 6 dropped the handlers'
    ``statsd`` (its POST used it), and renders a failed login's error page synchronously
    through ``_render(sync=True, ...)``, which 1.3's ``_render`` does not accept."""

    statsd = _NoTimer()

    def _render(
        self, login_error: str | None = None, username: str | None = None, **ns: Any
    ) -> Any:
        return self.render_template(
            "native-login.html",
            sync=bool(ns.get("sync")),
            next=url_escape(self.get_argument("next", default="")),
            username=username,
            login_error=login_error,
            custom_html=self.authenticator.custom_html,
            login_url=self.settings["login_url"],
            enable_signup=self.authenticator.enable_signup,
            two_factor_auth=self.authenticator.allow_2fa,
            authenticator_login_url=url_concat(
                self.authenticator.login_url(self.hub.base_url),
                {"next": self.get_argument("next", "")},
            ),
        )


def _with_xsrf(handler: type) -> type:
    """NativeAuthenticator's forms (login, sign-up, change password) post ``{{ xsrf }}``, a
    name JupyterHub 6 no longer puts in every page's namespace; without it a browser's form
    is refused ("Login form invalid or expired")."""

    class WithXsrf(handler):  # type: ignore[misc, valid-type]
        @property
        def template_namespace(self) -> dict[str, Any]:
            ns = dict(super().template_namespace)
            ns.setdefault("xsrf", self.xsrf_token.decode("ascii"))
            return ns

    WithXsrf.__name__ = WithXsrf.__qualname__ = handler.__name__
    return WithXsrf


class CubeNativeAuthenticator(NativeAuthenticator):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in sorted(self.admin_users):
            self.create_first_admin(name)

    def get_handlers(self, app: Any) -> list[tuple[str, Any]]:
        return [
            (path, _with_xsrf(CubeLoginHandler if handler is NativeLoginHandler else handler))
            for path, handler in super().get_handlers(app)
        ] + [(r"/api/cube/accounts", _accounts_handler())]

    def create_first_admin(self, username: str) -> str | None:
        """Give a configured admin with no password a generated one; None if they have one."""
        import bcrypt

        username = self.normalize_username(username)
        if UserInfo.find(self.db, username) is not None:
            return None
        password = secrets.token_urlsafe(15)
        info = UserInfo(
            username=username,
            password=bcrypt.hashpw(password.encode(), bcrypt.gensalt()),
            is_authorized=True,
        )
        self.db.add(info)
        self.db.commit()
        banner = (
            f"\n{'=' * 72}\n cube-lab hub: first start. Admin {username!r}, one-time password:\n"
            f"     {password}\n Log in and change it at /hub/change-password. It is shown only"
            f" now\n (only its bcrypt hash is stored).\n{'=' * 72}\n"
        )
        print(banner, file=sys.stderr, flush=True)
        return password


# -- SSO: identity-provider groups -> project groups ----------------------------------------


def map_idp_groups(
    idp_groups: Iterable[str],
    group_map: Mapping[str, str | Iterable[str]],
    *,
    admin_idp_groups: Iterable[str] = (),
) -> set[str]:
    """Project groups for a user's identity-provider groups.

    ``group_map`` maps an IdP group - or a shell pattern such as ``"/cube/*"`` - to one or more
    project groups; ``"*"`` in the target stands for what the pattern's ``*`` matched, so
    ``{"/cube/*": "*"}`` turns ``/cube/vision`` into ``vision``. IdP groups that map to
    nothing are dropped: the IdP's other groups never become project groups by accident.
    Members of ``admin_idp_groups`` land in the admin page's group (cube-admins).
    """
    found: set[str] = set()
    admin_patterns = list(admin_idp_groups)
    for idp in idp_groups:
        if not isinstance(idp, str):
            continue
        for pattern, targets in group_map.items():
            if not fnmatchcase(idp, pattern):
                continue
            wildcard = _wildcard_part(pattern, idp)
            for target in [targets] if isinstance(targets, str) else targets:
                name = target.replace("*", wildcard) if "*" in target else target
                if name and name != ADMIN_GROUP:
                    found.add(name)
        if any(fnmatchcase(idp, p) for p in admin_patterns):
            found.add(ADMIN_GROUP)
    return found


def _wildcard_part(pattern: str, value: str) -> str:
    if pattern.count("*") != 1:
        return value
    head, tail = pattern.split("*")
    return value[len(head) : len(value) - len(tail) if tail else None]


def oidc_groups_key(
    group_map: Mapping[str, str | Iterable[str]],
    *,
    claim: str = "groups",
    admin_idp_groups: Iterable[str] = (),
) -> Any:
    """A callable for ``GenericOAuthenticator.auth_state_groups_key``: reads the ``claim`` from
    the userinfo in the auth state and maps it with ``map_idp_groups``."""

    def groups_of(auth_state: Mapping[str, Any]) -> list[str]:
        userinfo = auth_state.get("oauth_user") or {}
        raw = userinfo.get(claim) or []
        if isinstance(raw, str):
            raw = [raw]
        return sorted(map_idp_groups(raw, group_map, admin_idp_groups=admin_idp_groups))

    return groups_of


def configure_oidc(c: Any, sso: Mapping[str, Any]) -> None:
    """Apply the ``sso:`` section of the settings file to GenericOAuthenticator (OIDC)."""
    g = c.GenericOAuthenticator
    c.JupyterHub.authenticator_class = "generic-oauth"
    g.client_id = sso["client_id"]
    if sso.get("client_secret"):  # else $OAUTH_CLIENT_SECRET, kept out of the file
        g.client_secret = sso["client_secret"]
    g.oauth_callback_url = sso["callback_url"]
    issuer = str(sso["issuer"]).rstrip("/")
    g.authorize_url = sso.get("authorize_url", f"{issuer}/protocol/openid-connect/auth")
    g.token_url = sso.get("token_url", f"{issuer}/protocol/openid-connect/token")
    g.userdata_url = sso.get("userdata_url", f"{issuer}/protocol/openid-connect/userinfo")
    g.scope = list(sso.get("scope", ["openid", "profile", "email", "groups"]))
    g.username_claim = sso.get("username_claim", "preferred_username")
    g.manage_groups = True
    g.auth_state_groups_key = oidc_groups_key(
        sso.get("group_map", {"*": "*"}),
        claim=sso.get("groups_claim", "groups"),
        admin_idp_groups=sso.get("admin_groups", []),
    )
    g.admin_groups = {ADMIN_GROUP}
    allowed = sso.get("allowed_groups")
    if allowed:
        g.allowed_groups = set(allowed)
    else:
        g.allow_all = True


# -- accounts made by the cube-admin service (a course's roster) --------------------------


def _accounts_handler() -> type:
    """``POST /hub/api/cube/accounts`` (the ``admin:users`` scope: the cube-admin service):
    ``{"accounts": [{"name", "email"?, "create"?: bool}]}``. For each name, in the hub's own
    database: a NativeAuthenticator account is made when ``create`` and none exists (approved,
    with a generated initial password, answered only here), an unapproved one is approved
    when ``create``, and the JupyterHub user is made when the account is approved. Answers
    ``{"accounts": [{"name", "status": created|approved|existed|missing|unapproved,
    "password"?}]}``."""
    import asyncio
    import json

    import bcrypt
    from jupyterhub.apihandlers.base import APIHandler
    from jupyterhub.scopes import needs_scope

    class CubeAccountsHandler(APIHandler):
        @needs_scope("admin:users")
        async def post(self) -> None:
            body = self.get_json_body() or {}
            wanted = body.get("accounts")
            if not isinstance(wanted, list):
                self.set_status(400)
                self.finish(json.dumps({"message": "accounts must be a list"}))
                return
            normalize = self.authenticator.normalize_username
            names = [normalize(str(i.get("name") or "")) for i in wanted]
            new = [
                n
                for n, i in zip(names, wanted, strict=True)
                if i.get("create") and not UserInfo.find(self.db, n)
            ]
            passwords = {n: secrets.token_urlsafe(9) for n in new}
            # bcrypt is slow on purpose: a class's worth in threads, off the hub's event loop;
            # 10 rounds (not 12) for these: a 72-bit random password needs no more stretching
            hashed_all = await asyncio.gather(
                *(asyncio.to_thread(bcrypt.hashpw, passwords[n].encode(), bcrypt.gensalt(10))
                  for n in new)
            )  # fmt: skip
            hashes = dict(zip(new, hashed_all, strict=True))
            out = []
            for name, item in zip(names, wanted, strict=True):
                info = UserInfo.find(self.db, name)
                result: dict[str, Any] = {"name": name}
                if info is None and name in hashes:
                    password, hashed = passwords[name], hashes[name]
                    info = UserInfo(username=name, password=hashed, is_authorized=True)
                    email = item.get("email")
                    if email:
                        # an e-mail NativeAuthenticator refuses is only not kept
                        with contextlib.suppress(AssertionError):
                            info.email = str(email)
                    self.db.add(info)
                    self.db.commit()
                    result.update(status="created", password=password)
                elif info is None and self.find_user(name) is not None:
                    result["status"] = "existed"  # a hub user made over the API (no password)
                elif info is None:
                    result["status"] = "missing"
                elif not info.is_authorized and item.get("create"):
                    info.is_authorized = True
                    self.db.commit()
                    result["status"] = "approved"
                elif not info.is_authorized:
                    result["status"] = "unapproved"
                else:
                    result["status"] = "existed"
                if result["status"] in ("created", "approved", "existed"):
                    self.user_from_username(name)  # the hub's user, before any login
                out.append(result)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"accounts": out}))

    return CubeAccountsHandler
