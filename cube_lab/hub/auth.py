"""Who may log in: NativeAuthenticator for the embedded hub, an OIDC example for SSO.

NativeAuthenticator keeps bcrypt hashes in the hub database; sign-ups wait for an admin's
approval (/hub/authorize). Its trap: a name listed in ``admin_users`` is approved on sign-up,
so whoever signs up first as "admin" becomes admin. ``CubeNativeAuthenticator`` closes it by
creating every configured admin at first start with a generated one-time password, printed
once and stored only as its hash; the admin changes it at /hub/change-password. The initial
passwords of a course roster's accounts are one-time too (``roster_passwords_one_time``): every
hub page sends such a user to change theirs before anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import ChangePasswordHandler as NativeChangePasswordHandler
from nativeauthenticator.handlers import LoginHandler as NativeLoginHandler
from nativeauthenticator.handlers import SignUpHandler as NativeSignUpHandler
from nativeauthenticator.orm import UserInfo
from tornado import web
from tornado.escape import url_escape
from tornado.httputil import url_concat
from traitlets import Bool, Unicode

from ..locale import negotiate
from ..locale.messages import _t, localize
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


def password_problem(authenticator: Any, password: str) -> str | None:
    """What is wrong with ``password`` by the hub's rule (``sign_up:`` minimum_password_length,
    check_common_password), said so that the reader can fix it; None if it is fine."""
    minimum = int(authenticator.minimum_password_length)
    if len(password) < minimum:
        return _t(
            "The password is too short: it has {n} characters and needs at least {minimum}.",
            n=len(password),
            minimum=minimum,
        )
    if authenticator.check_common_password and authenticator.is_password_common(password):
        return _t(
            "The password is one of the most common passwords, which are guessed first. "
            "Choose a less usual one (a few unrelated words work well)."
        )
    return None


def password_rule(authenticator: Any) -> str:
    """The rule itself, for the pages that ask for a new password."""
    if authenticator.check_common_password:
        return _t(
            "Passwords need at least {minimum} characters and must not be a common password.",
            minimum=int(authenticator.minimum_password_length),
        )
    return _t(
        "Passwords need at least {minimum} characters.",
        minimum=int(authenticator.minimum_password_length),
    )


# NativeAuthenticator's own results, marked for translation (the pages show them localized)
NATIVE_MESSAGES = {
    m: m
    for m in (
        _t("Your password has been changed successfully!"),
        _t("Your current password was incorrect. Please try again."),
        _t("Your new password didn't match the confirmation. Please try again."),
        _t("Your password did not match the confirmation. Please try again."),
        _t("Your information has been sent to the admin."),
        _t("The signup was successful! You can now go to the home page and log in to the system."),
    )
}
TAKEN = _t("This user name is already in use. Please try again with a different one.")


class _Localized:
    """Sign-up and change-password pages: the rule, and native's results, in the reader's
    language (cube_lab/hub/templates/jupyterhub/signup.html, change-password.html)."""

    def in_reader_language(self, text: str) -> str:
        return str(localize(text, negotiate(self.request.headers.get("Accept-Language"))))

    def render_template(self, name: str, sync: bool = False, **ns: Any) -> Any:
        message = ns.get("result_message")
        if isinstance(message, str):
            if "already in use" in message:
                message = TAKEN
            ns["result_message"] = self.in_reader_language(NATIVE_MESSAGES.get(message, message))
        ns["password_rule"] = self.in_reader_language(password_rule(self.authenticator))
        user = self.current_user
        ns["one_time"] = bool(
            user is not None
            and getattr(self.authenticator, "is_one_time", None)
            and self.authenticator.is_one_time(user.name)
        )
        return super().render_template(name, sync=sync, **ns)  # type: ignore[misc]


class CubeSignUpHandler(_Localized, NativeSignUpHandler):
    """NativeAuthenticator's sign-up, with the reason a sign-up was refused (too short, too
    common, a bad user name) instead of "Something went wrong!", in the reader's language."""

    def get_result_message(self, user: Any, *args: Any) -> tuple[str, str]:
        alert, message = super().get_result_message(user, *args)
        refused = message.startswith("Something went wrong!") and "already in use" not in message
        if user is None and refused:
            username = self.get_body_argument("username", "", strip=False)
            password = self.get_body_argument("signup_password", "", strip=False)
            problem = password_problem(self.authenticator, password)
            if not self.authenticator.validate_username(username):
                problem = _t(
                    "The user name {name!r} cannot be used: use letters, digits, '-', '_' or"
                    " '.', without spaces, commas or slashes.",
                    name=username,
                )
            if problem:
                message = self.in_reader_language(problem)
        return alert, message


class CubeChangePasswordHandler(_Localized, NativeChangePasswordHandler):
    """NativeAuthenticator's change-password page: a refused new password says why."""

    async def post(self) -> None:
        new = self.get_body_argument("new_password", "", strip=False)
        problem = password_problem(self.authenticator, new)
        if problem and new == self.get_body_argument("new_password_confirmation", "", strip=False):
            user = await self.get_current_user()
            if self.authenticator.get_user(user.name).is_valid_password(
                self.get_body_argument("old_password", "", strip=False)
            ):
                html = await self.render_template(
                    "change-password.html",
                    user_name=user.name,
                    result_message=self.in_reader_language(problem),
                    alert="alert-danger",
                )
                self.finish(html)
                return
        await super().post()


class _OneTimePasswordGate:
    """Mixed into every hub page handler (``CubeNativeAuthenticator.get_handlers``): a user
    logged in (cookie) with a one-time password still unchanged is sent to
    /hub/change-password from any page; forms elsewhere are refused. Token requests (the
    REST API) are not pages and pass."""

    async def prepare(self) -> None:
        await super().prepare()  # type: ignore[misc]
        if self._finished:  # type: ignore[attr-defined]
            return
        user = self.current_user  # type: ignore[attr-defined]
        if user is None or getattr(self, "_token_authenticated", False):
            return
        is_one_time = getattr(self.authenticator, "is_one_time", None)  # type: ignore[attr-defined]
        if not hasattr(user, "spawner") or is_one_time is None or not is_one_time(user.name):
            return
        target = self.hub.base_url + "change-password"  # type: ignore[attr-defined]
        if self.request.method in ("GET", "HEAD"):  # type: ignore[attr-defined]
            self.redirect(target)  # type: ignore[attr-defined]
            return
        raise web.HTTPError(403, "Change your one-time password first, at /hub/change-password.")


def _gated(handler: type) -> type:
    class Gated(_OneTimePasswordGate, handler):  # type: ignore[misc, valid-type]
        pass

    Gated.__name__ = Gated.__qualname__ = handler.__name__
    return Gated


def _hub_pages() -> list[tuple[Any, ...]]:
    """JupyterHub's page routes (and the OAuth page services send a browser to), with their
    handlers gated; the login and logout pages as they are."""
    from jupyterhub import handlers
    from jupyterhub.apihandlers.auth import OAuthAuthorizeHandler
    from jupyterhub.handlers.base import BaseHandler
    from jupyterhub.handlers.login import LoginHandler, LogoutHandler

    routes = [*handlers.default_handlers, (r"/api/oauth2/authorize", OAuthAuthorizeHandler)]
    out = []
    for route in routes:
        cls = route[1]
        if (
            isinstance(cls, type)
            and issubclass(cls, BaseHandler)
            and not issubclass(cls, LoginHandler | LogoutHandler)
        ):
            out.append((route[0], _gated(cls), *route[2:]))
    return out


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


_REPLACED = {
    NativeLoginHandler: CubeLoginHandler,
    NativeSignUpHandler: CubeSignUpHandler,
    NativeChangePasswordHandler: CubeChangePasswordHandler,
}
_UNGATED = (CubeLoginHandler, CubeSignUpHandler, CubeChangePasswordHandler)


class CubeNativeAuthenticator(NativeAuthenticator):
    one_time_file = Unicode(
        "",
        config=True,
        help="A JSON file of {user: bcrypt hash} of the one-time passwords handed out; while a "
        "user's stored hash is still that one, every hub page sends them to change it.",
    )
    roster_passwords_one_time = Bool(
        True,
        config=True,
        help="Are the initial passwords of accounts made by a roster import one-time (each "
        "user changes theirs at first login)? The hub settings' sign_up.roster_passwords_one_time.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in sorted(self.admin_users):
            self.create_first_admin(name)

    def get_handlers(self, app: Any) -> list[tuple[str, Any]]:
        native = []
        for path, handler in super().get_handlers(app):
            handler = _REPLACED.get(handler, handler)
            native.append((path, _with_xsrf(handler if handler in _UNGATED else _gated(handler))))
        # the hub's own pages come after these routes: the gated copies are the ones served
        return [*native, (r"/api/cube/accounts", _accounts_handler()), *_hub_pages()]

    # -- one-time passwords ------------------------------------------------------------

    def _one_time(self) -> dict[str, str]:
        if not self.one_time_file:
            return {}
        try:
            found = json.loads(Path(self.one_time_file).read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def remember_one_time(self, hashes: Mapping[str, bytes]) -> None:
        """Record that these users' passwords are generated one-time ones (their hashes)."""
        if not self.one_time_file or not hashes:
            return
        found = self._one_time()
        found.update({name: hashed.decode("ascii") for name, hashed in hashes.items()})
        path = Path(self.one_time_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(found, out)
        partial.replace(path)

    def is_one_time(self, username: str) -> bool:
        """Is ``username``'s password still the one-time one handed out? (Any change - theirs
        at /hub/change-password, or an admin's - stores another hash.)"""
        recorded = self._one_time().get(username)
        if not recorded:
            return False
        info = UserInfo.find(self.db, username)
        if info is None:
            return False
        stored = info.password
        stored = stored.decode("ascii") if isinstance(stored, bytes) else str(stored)
        return stored == recorded

    def create_first_admin(self, username: str) -> str | None:
        """Give a configured admin with no password a generated one; None if they have one."""
        import bcrypt

        username = self.normalize_username(username)
        if UserInfo.find(self.db, username) is not None:
            return None
        password = secrets.token_urlsafe(15)
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt())
        info = UserInfo(username=username, password=hashed, is_authorized=True)
        self.db.add(info)
        self.db.commit()
        self.remember_one_time({username: hashed})
        banner = (
            f"\n{'=' * 72}\n cube-lab hub: first start. Admin {username!r}, one-time password:\n"
            f"     {password}\n Log in and change it (the hub asks for that at once). It is shown"
            f" only now\n (only its bcrypt hash is stored).\n{'=' * 72}\n"
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
    with a generated initial password, answered only here and one-time unless the setting
    ``roster_passwords_one_time`` is off), an unapproved one is approved when ``create``, and
    the JupyterHub user is made when the account is approved. Answers ``{"accounts": [{"name",
    "status": created|approved|existed|missing|unapproved, "password"?, "must_change"?}]}``."""
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
            one_time = bool(getattr(self.authenticator, "roster_passwords_one_time", False))
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
                    if one_time:
                        result["must_change"] = True
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
            if one_time:
                made = {r["name"] for r in out if r["status"] == "created"}
                self.authenticator.remember_one_time({n: hashes[n] for n in made})
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"accounts": out}))

    return CubeAccountsHandler
