"""One policy for every host a user names that this process then calls for them: a webhook or
chat-bot URL, an SMTP server, an OpenAI-compatible chat URL, an Ollama server.

Under the hub (this process issues job tokens: it is the cube-lab service, run as root) such a
call could reach what users' servers cannot: the service's own loopback (the hub API, the
proxy API, the database), other users' model servers on the machine or the cluster network,
the cloud's metadata address, the cluster's API server. So there a user's host is refused when
any address it resolves to is loopback, link-local (metadata), private (RFC 1918, unique-local
IPv6, shared 100.64/10), unspecified, multicast or reserved, or when it names the cluster's API
server, unless an admin allows it in ``$CUBE_LAB_OUTBOUND_ALLOWED_HOSTS``: comma-separated host
names or networks (``ollama.internal, 10.20.0.0/16``); ``$CUBE_LAB_CHAT_ALLOWED_HOSTS`` (its
older name) is read too.

The check runs twice: ``check_url``/``check_host`` before anything is stored or sent (a clear
403), and again on the address a connection actually reached, before a byte is written
(``connect``), so a name that resolves elsewhere the second time (DNS rebinding) gains nothing.
Redirects are not followed (``urlopen``): a 3xx is the answer. Outside the hub the server is the
user's own and calls what they could call themselves.
"""

from __future__ import annotations

import ipaddress
import os
import smtplib
import socket
import urllib.request
from http.client import HTTPConnection, HTTPSConnection
from typing import Any
from urllib.parse import urlsplit

from . import job_credentials
from .errors import Forbidden
from .locale.messages import _t

ENV_ALLOWED = "CUBE_LAB_OUTBOUND_ALLOWED_HOSTS"
ENV_ALLOWED_OLD = "CUBE_LAB_CHAT_ALLOWED_HOSTS"
SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, often a cluster's pods


class Refused(OSError):
    """A connection reached an address the policy refuses; nothing was sent."""


def enforced() -> bool:
    """True in the cube-lab service under the hub; a user's own server calls what they ask."""
    return job_credentials.issuer() is not None


def _allowed() -> tuple[set[str], list[ipaddress.IPv4Network | ipaddress.IPv6Network]]:
    hosts: set[str] = set()
    networks = []
    for env in (ENV_ALLOWED, ENV_ALLOWED_OLD):
        for raw in os.environ.get(env, "").split(","):
            entry = raw.strip().lower()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry)
    return hosts, networks


def _address(raw: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    ip = ipaddress.ip_address(raw.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        return ip.ipv4_mapped
    return ip


def internal(raw: str) -> bool:
    """An address a user's call from the service may not reach (see the module's doc)."""
    ip = _address(raw)
    return (
        ip.is_loopback
        or ip.is_link_local
        or ip.is_private
        or ip.is_unspecified
        or ip.is_multicast
        or ip.is_reserved
        or (isinstance(ip, ipaddress.IPv4Address) and ip in SHARED)
    )


def _cluster_hosts() -> set[str]:
    """The Kubernetes API server the service talks to (its credentials' host)."""
    hosts = {"kubernetes.default", "kubernetes.default.svc"}
    for key in ("KUBERNETES_SERVICE_HOST", "CUBE_LAB_K8S_HOST"):
        value = os.environ.get(key, "")
        host = urlsplit(value).hostname if "://" in value else value
        if host:
            hosts.add(host.lower())
    return hosts


def _permitted(host: str, address: str | None) -> bool:
    names, networks = _allowed()
    if host.lower() in names:
        return True
    if address is None:
        return False
    ip = _address(address)
    return any(ip.version == n.version and ip in n for n in networks)


def blocked(host: str, address: str) -> bool:
    """Whether a connection to ``host`` that reached ``address`` is refused."""
    if not enforced() or _permitted(host, address):
        return False
    return host.lower() in _cluster_hosts() or internal(address)


def check_host(host: str, what: str | None = None) -> None:
    """Refuse ``host`` (Forbidden, 403) when it names the cluster's API server or resolves to
    any refused address. A name that does not resolve passes: the call fails on its own."""
    if not enforced():
        return
    what = what or _t("host")
    host = host.strip("[]")
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        addresses = set()
    if _permitted(host, None):
        return
    if host.lower() in _cluster_hosts() or any(blocked(host, a) for a in addresses):
        raise Forbidden(
            _t("the cube-lab service does not call {host} for a user", host=host),
            _t(
                "Under the hub, a {what} you give may not name the service's own machine, a "
                "private, link-local or reserved address, or the cluster's API server. Ask an "
                "admin to allow the host ({env}), or use a public address.",
                what=what,
                env=ENV_ALLOWED,
            ),
        )


def check_url(url: str, what: str | None = None) -> None:
    """``check_host`` for the host of an http(s) ``url``."""
    check_host(urlsplit(url).hostname or "", what or _t("URL"))


def connect(
    address: tuple[str, int], timeout: Any = socket._GLOBAL_DEFAULT_TIMEOUT, source: Any = None
) -> socket.socket:
    """``socket.create_connection`` that closes, before anything is sent, a connection the
    policy refuses (``Refused``): the address checked is the one reached."""
    sock = socket.create_connection(address, timeout, source)
    peer = sock.getpeername()[0]
    if blocked(str(address[0]), peer):
        sock.close()
        raise Refused(f"{address[0]} is not called for a user")
    return sock


class _GuardedHTTP(HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = connect


class _GuardedHTTPS(HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = connect


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_GuardedHTTP, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_GuardedHTTPS, req)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx is the answer (an HTTPError): no second request elsewhere


_opener = urllib.request.build_opener(
    urllib.request.ProxyHandler({}), _HTTPHandler, _HTTPSHandler, _NoRedirect
)


def urlopen(request: urllib.request.Request, timeout: float) -> Any:
    """``urllib.request.urlopen`` for a user's URL: the policy on the address reached, no
    redirects followed, no proxy from the environment."""
    return _opener.open(request, timeout=timeout)


class SMTP(smtplib.SMTP):
    """``smtplib.SMTP`` whose connection is checked like ``connect``'s."""

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        return connect((host, port), timeout, self.source_address)
