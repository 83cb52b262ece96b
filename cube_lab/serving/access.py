"""Who may call a deployment, and how often: API keys, rate limits, client address lists.

A deployment's access settings (stored on its record, edited from the Deployments panel, the
CLI and REST)::

    {"auth": "required" | "none",
     "rate_limit": {"rps": 20.0, "burst": 40, "per_key": false} | null,
     "allow": ["10.0.0.0/8", "192.168.1.7"],     # empty: any address
     "deny": ["10.0.0.13"]}

``auth`` defaults to ``required`` under the hub (many users share the host) and to ``none`` on
the embedded single-user shape; ``$CUBE_LAB_SERVING_AUTH`` sets another default for a site.

An API key is ``cube_`` and 43 URL-safe characters (256 random bits). It is shown once, when
it is made; the store keeps its SHA-256 (a fast hash is right for a random secret of that
size: there is nothing to guess) and its first characters to tell keys apart.

The router enforces all of it (``Gate``): the deployment service pushes the hashes of the
keys in force, the limits and the lists with the routing table (``POST /_cube/admin/config``),
and the router checks, in this order, every request but the admin routes and the health
probes (``/v2/health/live``, ``/v2/health/ready`` stay open so probes need no key; they tell
no more than whether the server is up):

1. the client's address against ``deny`` then ``allow`` -> 403;
2. the key (``Authorization: Bearer <key>``, or ``X-API-Key: <key>``), its hash compared with
   every key's in constant time, then its expiry -> 401 with ``WWW-Authenticate: Bearer``;
   the deployment's own router token (``X-Cube-Token``) also passes: that is how the lab
   server's test form and metrics reach a protected deployment;
3. the rate limit, a token bucket (``rps`` tokens a second, up to ``burst``) for the whole
   deployment, or one per key when ``per_key`` (requests without a key then get one bucket
   per client address) -> 429 with ``Retry-After``.

The address is the TCP peer's: the router is the front door, so a forwarded-for header (which
any client can write) is not believed.

This module is imported by the router process: standard library only (and ``..errors``).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

AUTH_MODES = ("required", "none")
ENV_DEFAULT_AUTH = "CUBE_LAB_SERVING_AUTH"
KEY_PREFIX = "cube_"
SHOWN_CHARS = 12  # "cube_" and 7 random characters: enough to tell keys apart, useless to guess
MAX_RPS = 1_000_000.0
MAX_BURST = 1_000_000
MAX_LIST = 256  # addresses or networks in one allow or deny list
MAX_BUCKETS = 10_000  # per-key / per-address buckets a router keeps
OPEN_PATHS = frozenset({"/v2/health/live", "/v2/health/ready"})

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


# -- keys ---------------------------------------------------------------------------------------


def new_key() -> str:
    """A fresh API key: ``cube_`` + 43 URL-safe characters (32 random bytes)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """What is stored and compared: the key's SHA-256, hex."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def shown_prefix(key: str) -> str:
    return key[:SHOWN_CHARS]


def presented_key(headers: dict[str, str]) -> str | None:
    """The key a request carries: ``Authorization: Bearer <key>`` (what the openai client and
    most HTTP clients send) or ``X-API-Key: <key>``; None when it carries none."""
    auth = headers.get("authorization", "")
    scheme, _, value = auth.strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    other = headers.get("x-api-key", "").strip()
    return other or None


# -- settings -----------------------------------------------------------------------------------


def default_auth() -> str:
    """``required`` under the hub, ``none`` on the embedded single-user shape (or what
    ``$CUBE_LAB_SERVING_AUTH`` says)."""
    site = os.environ.get(ENV_DEFAULT_AUTH, "").strip().lower()
    if site in AUTH_MODES:
        return site
    return "required" if under_hub() else "none"


def under_hub() -> bool:
    """True in a lab server the hub spawned (and in its kernels and terminals, which inherit
    its environment): the hub's admission service or the hub's API is configured."""
    if os.environ.get("CUBE_HUB_ADMIN_URL"):
        return True
    return bool(os.environ.get("JUPYTERHUB_API_URL") and os.environ.get("JUPYTERHUB_API_TOKEN"))


def default_settings(auth: str | None = None) -> dict[str, Any]:
    return {
        "auth": check_auth(auth) if auth is not None else default_auth(),
        "rate_limit": None,
        "allow": [],
        "deny": [],
    }


def check_auth(value: object) -> str:
    if value not in AUTH_MODES:
        raise InvalidInput(
            _t("auth must be one of {value}", value=list(AUTH_MODES)),
            _t(
                (
                    "got {value!r}; 'required' asks every caller for an API key, 'none' lets "
                    "anyone who can reach the port call the model."
                ),
                value=value,
            ),
        )
    return str(value)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_rate_limit(value: object) -> dict[str, Any] | None:
    """``{"rps": >0, "burst": >=1 (default: rps rounded up), "per_key": bool}`` or None (off)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidInput(
            _t("rate_limit must be an object or null"),
            _t('{{"rps": 20, "burst": 40}} allows 20 requests a second with bursts of 40.'),
        )
    unknown = sorted(set(value) - {"rps", "burst", "per_key"})
    if unknown:
        raise InvalidInput(
            _t("unknown rate_limit fields {unknown}", unknown=unknown),
            _t("Known: ['burst', 'per_key', 'rps']"),
        )
    rps = value.get("rps")
    if not _number(rps) or not 0 < rps <= MAX_RPS or not math.isfinite(rps):  # type: ignore[operator,arg-type]
        raise InvalidInput(
            _t(
                (
                    "rate_limit.rps must be a number of requests a second above 0 (at most "
                    "{MAX_RPS:g})"
                ),
                MAX_RPS=MAX_RPS,
            ),
            _t("got {rps!r}", rps=rps),
        )
    burst = value.get("burst")
    if burst is None:
        burst = max(1, math.ceil(rps))  # type: ignore[arg-type]
    if isinstance(burst, bool) or not isinstance(burst, int) or not 1 <= burst <= MAX_BURST:
        raise InvalidInput(
            _t(
                "rate_limit.burst must be a whole number of requests from 1 to {MAX_BURST}",
                MAX_BURST=MAX_BURST,
            ),
            _t(
                "got {burst!r}; it is how many requests may come at once before the rate applies.",
                burst=burst,
            ),
        )
    per_key = value.get("per_key", False)
    if not isinstance(per_key, bool):
        raise InvalidInput(
            _t("rate_limit.per_key must be true or false"), _t("got {per_key!r}", per_key=per_key)
        )
    return {"rps": float(rps), "burst": burst, "per_key": per_key}  # type: ignore[arg-type]


def check_addresses(value: object, what: str) -> list[str]:
    """A list of IP addresses and CIDR networks, normalized (``10.1.2.3/8`` is refused: the
    host bits are set, so it is ambiguous)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(
            _t("{what} must be a list of IP addresses or CIDR networks", what=what),
            _t('e.g. ["127.0.0.1", "10.0.0.0/8", "2001:db8::/32"]'),
        )
    if len(value) > MAX_LIST:
        raise InvalidInput(
            _t("{what} may hold at most {MAX_LIST} entries", what=what, MAX_LIST=MAX_LIST),
            _t("got {n_value}", n_value=len(value)),
        )
    out: list[str] = []
    for raw in value:
        text = raw.strip()
        try:
            net = ipaddress.ip_network(text, strict=True)
        except ValueError as exc:
            raise InvalidInput(
                _t("{what}: {raw!r} is not an IP address or CIDR network", what=what, raw=raw),
                _t(
                    "{exc}. Write an address (192.168.1.7, ::1) or a network (10.0.0.0/8).", exc=exc
                ),
            ) from None
        shown = str(net.network_address) if net.num_addresses == 1 else str(net)
        if shown not in out:
            out.append(shown)
    return out


ACCESS_FIELDS = ("auth", "rate_limit", "allow", "deny")


def check_settings(changes: object, current: dict[str, Any] | None = None) -> dict[str, Any]:
    """``current`` with ``changes`` applied (fields left out keep their value), validated."""
    if not isinstance(changes, dict):
        raise InvalidInput(
            _t("the access settings must be a JSON object"),
            _t("Fields: {ACCESS_FIELDS}", ACCESS_FIELDS=ACCESS_FIELDS),
        )
    unknown = sorted(set(changes) - set(ACCESS_FIELDS))
    if unknown:
        raise InvalidInput(
            _t("unknown fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=sorted(ACCESS_FIELDS)),
        )
    base = normalized(current)
    if "auth" in changes:
        base["auth"] = check_auth(changes["auth"])
    if "rate_limit" in changes:
        base["rate_limit"] = check_rate_limit(changes["rate_limit"])
    for key in ("allow", "deny"):
        if key in changes:
            base[key] = check_addresses(changes[key], key)
    return base


def normalized(stored: dict[str, Any] | None) -> dict[str, Any]:
    """A stored access record as the API shows it (a record from before access settings is
    what that deployment did then: no key asked)."""
    if not stored:
        return {"auth": "none", "rate_limit": None, "allow": [], "deny": []}
    return {
        "auth": stored.get("auth") if stored.get("auth") in AUTH_MODES else "required",
        "rate_limit": stored.get("rate_limit") or None,
        "allow": list(stored.get("allow") or []),
        "deny": list(stored.get("deny") or []),
    }


def check_expiry(expires_at: object, expires_in_days: object, now: datetime) -> datetime | None:
    """When a new key expires: an ISO 8601 time (with its zone; UTC when none), a number of
    days from now, or never (both None)."""
    if expires_at is not None and expires_in_days is not None:
        raise InvalidInput(_t("give expires_at or expires_in_days, not both"))
    if expires_in_days is not None:
        ok = _number(expires_in_days) and 0 < expires_in_days <= 3650  # type: ignore[operator]
        if not ok or not math.isfinite(expires_in_days):  # type: ignore[arg-type]
            raise InvalidInput(
                _t("expires_in_days must be a number of days above 0 (at most 3650)"),
                _t("got {expires_in_days!r}", expires_in_days=expires_in_days),
            )
        return now + timedelta(days=float(expires_in_days))  # type: ignore[arg-type]
    if expires_at is None:
        return None
    if not isinstance(expires_at, str):
        raise InvalidInput(
            _t("expires_at must be an ISO 8601 time"), _t('e.g. "2030-01-31T00:00:00Z"')
        )
    try:
        when = datetime.fromisoformat(expires_at.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            _t("expires_at {expires_at!r} is not an ISO 8601 time", expires_at=expires_at),
            _t('e.g. "2030-01-31T00:00:00Z"'),
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=now.tzinfo)
    if when <= now:
        raise InvalidInput(
            _t("expires_at {expires_at!r} is in the past", expires_at=expires_at),
            _t("A key must be valid for a while."),
        )
    return when


# -- the router's gate ----------------------------------------------------------------------------


@dataclass(slots=True)
class Bucket:
    """A token bucket: ``rate`` tokens a second, holding at most ``burst``."""

    rate: float
    burst: float
    tokens: float
    at: float

    def take(self, now: float) -> float:
        """0 when a request may pass (a token is taken), else the seconds until one may."""
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate

    def full(self, now: float) -> bool:
        return self.tokens + (now - self.at) * self.rate >= self.burst


@dataclass(slots=True)
class KeyEntry:
    id: str
    hash: bytes
    expires_at: float | None  # epoch seconds


@dataclass(slots=True)
class Refusal:
    status: int
    error: str
    detail: str
    headers: list[tuple[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class Passed:
    principal: str | None  # the key's id, "console" for the router token, None: no key


class Gate:
    """The router's access check for one deployment; configured with ``configure``."""

    def __init__(self, deployment: str, token: str) -> None:
        self.deployment = deployment
        self.token = token.encode() if token else b""
        self.auth = "none"
        self.keys: list[KeyEntry] = []
        self.allow: list[Network] = []
        self.deny: list[Network] = []
        self.rps = 0.0
        self.burst = 0
        self.per_key = False
        self.buckets: dict[str, Bucket] = {}
        self.verdicts: dict[str, bool] = {}  # address -> allowed, for the lists in force
        self.last_used: dict[str, float] = {}  # key id -> epoch seconds

    def configure(self, access: dict[str, Any] | None) -> None:
        """Take the settings the deployment service pushed (``None``: open, the table of a
        deployment made before access settings). Raises ValueError / KeyError / TypeError on
        a malformed table, leaving the gate as it was."""
        access = access or {}
        auth = access.get("auth", "none")
        if auth not in AUTH_MODES:
            raise ValueError(f"auth must be one of {AUTH_MODES}, not {auth!r}")
        keys = [
            KeyEntry(
                str(k["id"]),
                bytes.fromhex(str(k["hash"])),
                float(k["expires_at"]) if k.get("expires_at") is not None else None,
            )
            for k in access.get("keys") or []
        ]
        allow = [ipaddress.ip_network(str(n)) for n in access.get("allow") or []]
        deny = [ipaddress.ip_network(str(n)) for n in access.get("deny") or []]
        limit = access.get("rate_limit") or None
        rps = float(limit["rps"]) if limit else 0.0
        burst = int(limit.get("burst") or max(1, math.ceil(rps))) if limit else 0
        if limit and not (rps > 0 and burst >= 1):
            raise ValueError("rate_limit needs rps > 0 and burst >= 1")
        per_key = bool(limit.get("per_key")) if limit else False
        # one assignment each, nothing awaited in between: a request sees one table
        if (rps, burst, per_key) != (self.rps, self.burst, self.per_key):
            self.buckets = {}
        self.auth, self.keys, self.allow, self.deny = auth, keys, allow, deny
        self.rps, self.burst, self.per_key = rps, burst, per_key
        self.verdicts = {}

    def state(self) -> dict[str, Any]:
        return {
            "auth": self.auth,
            "keys": len(self.keys),
            "rate_limit": (
                {"rps": self.rps, "burst": self.burst, "per_key": self.per_key}
                if self.rps
                else None
            ),
            "allow": [str(n) for n in self.allow],
            "deny": [str(n) for n in self.deny],
            "keys_used": dict(self.last_used),
        }

    # -- the check --------------------------------------------------------------------------

    def check(
        self, headers: dict[str, str], client: str, now: float, wall: float
    ) -> Refusal | Passed:
        """Whether a request may pass: ``now`` is monotonic (the buckets), ``wall`` the epoch
        (key expiry, last use)."""
        if (self.allow or self.deny) and not self._address_ok(client):
            return Refusal(
                403,
                _t(
                    "client address {client} may not call deployment {deployment!r}",
                    client=client or _t("unknown"),
                    deployment=self.deployment,
                ),
                _t(
                    "The deployment's allow/deny lists refuse it; its owner can change them "
                    "(Deployments panel > Access, or `cube-lab deployment access NAME`)."
                ),
            )
        passed = self._authenticate(headers, wall)
        if isinstance(passed, Refusal):
            return passed
        if self.rps:
            wait = self._bucket(passed.principal, client, now).take(now)
            if wait > 0:
                return Refusal(
                    429,
                    _t(
                        "rate limit of deployment {deployment!r} reached "
                        "({rps:g} requests/s, bursts of {burst})",
                        deployment=self.deployment,
                        rps=self.rps,
                        burst=self.burst,
                    ),
                    _t("Retry in {wait:.3f} s.", wait=wait),
                    [("Retry-After", str(max(1, math.ceil(wait))))],
                )
        return passed

    def _address_ok(self, client: str) -> bool:
        verdict = self.verdicts.get(client)
        if verdict is None:
            verdict = self._judge(client)
            if len(self.verdicts) >= MAX_BUCKETS:
                self.verdicts.clear()
            self.verdicts[client] = verdict
        return verdict

    def _judge(self, client: str) -> bool:
        try:
            addr: Address = ipaddress.ip_address(client.split("%", 1)[0])
        except ValueError:
            return not self.allow  # no address (a Unix socket): only when nothing is required
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped  # ::ffff:10.0.0.1 is 10.0.0.1
        if any(addr in net for net in self.deny if net.version == addr.version):
            return False
        if self.allow:
            return any(addr in net for net in self.allow if net.version == addr.version)
        return True

    def _authenticate(self, headers: dict[str, str], wall: float) -> Refusal | Passed:
        token = headers.get("x-cube-token")
        given = token.encode("utf-8", "surrogatepass") if token is not None else None
        if given is not None and self.token and hmac.compare_digest(given, self.token):
            return Passed("console")
        key = presented_key(headers)
        found: KeyEntry | None = None
        if key is not None:
            digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
            for entry in self.keys:  # every key is compared: no early exit to time
                if hmac.compare_digest(entry.hash, digest):
                    found = entry
        if found is not None and (found.expires_at is None or wall < found.expires_at):
            self.last_used[found.id] = wall
            return Passed(found.id)
        if self.auth == "none":
            return Passed(None)
        how = _t(
            "Send it as `Authorization: Bearer <key>` (or `X-API-Key: <key>`). The deployment's "
            "owner creates keys in the Deployments panel (Access) or with "
            "`cube-lab deployment keys create {deployment} KEY-NAME`.",
            deployment=self.deployment,
        )
        challenge = 'Bearer realm="cube-lab"'
        if key is None:
            return Refusal(
                401,
                _t("deployment {deployment!r} needs an API key", deployment=self.deployment),
                how,
                [("WWW-Authenticate", challenge)],
            )
        if found is not None:
            return Refusal(
                401,
                _t(
                    "the API key for deployment {deployment!r} has expired",
                    deployment=self.deployment,
                ),
                _t("Ask the deployment's owner for a new key. {how}", how=how),
                [("WWW-Authenticate", f'{challenge}, error="invalid_token"')],
            )
        return Refusal(
            401,
            _t(
                "the API key is not valid for deployment {deployment!r}",
                deployment=self.deployment,
            ),
            _t("It was revoked, or it belongs to another deployment. {how}", how=how),
            [("WWW-Authenticate", f'{challenge}, error="invalid_token"')],
        )

    def _bucket(self, principal: str | None, client: str, now: float) -> Bucket:
        name = ""
        if self.per_key:
            name = principal if principal is not None else f"address:{client}"
        bucket = self.buckets.get(name)
        if bucket is None:
            if len(self.buckets) >= MAX_BUCKETS:
                # forget the buckets that have refilled: they hold nothing a new one would not
                self.buckets = {k: b for k, b in self.buckets.items() if not b.full(now)}
            bucket = self.buckets[name] = Bucket(self.rps, float(self.burst), self.burst, now)
        return bucket
