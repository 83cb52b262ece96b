"""Where a chat (the Chat panel's, a knowledge base's) is answered: an LLM deployment of the
project, reached through its router with its token, or an OpenAI-compatible URL the user
gives, with their key.

``resolve`` turns a checked target (``params.check_target``) into an ``Endpoint``. A URL the
user gives is called by this server: under the hub that is the cube-lab service, which can
reach what users' servers cannot (its own loopback, the cloud's metadata address, the
cluster's API server). ``check_outbound`` refuses those before any request is sent.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .. import job_credentials
from ..errors import Conflict, Forbidden, InvalidInput
from ..identity import Caller
from ..locale.messages import _t

# extra hosts (comma-separated, name or address) the service may call under the hub
ENV_ALLOWED = "CUBE_LAB_CHAT_ALLOWED_HOSTS"


@dataclass
class Endpoint:
    base_url: str  # the OpenAI API root, ending in /v1
    model: str
    headers: dict[str, str] = field(default_factory=dict)
    api_key: str | None = None
    shown: dict[str, Any] = field(default_factory=dict)  # what an answer says it used


def resolve(
    serving: Any, caller: Caller, project: str, target: dict[str, Any], api_key: str | None
) -> Endpoint:
    """``target``: ``{"deployment", "model"?}`` (a running LLM deployment of ``project``;
    another's is a 404) or ``{"base_url", "model"}`` with ``api_key``."""
    if "deployment" not in target:
        check_outbound(target["base_url"])
        shown = {"base_url": target["base_url"], "model": target["model"]}
        return Endpoint(target["base_url"], target["model"], api_key=api_key, shown=shown)
    view = llm_deployment(serving, caller, project, target["deployment"])
    if view.status != "running" or not view.endpoint:
        raise Conflict(
            _t("deployment {name!r} is not running ({status})", name=view.name, status=view.status),
            _t("Start it again from the Models panel or with cube-lab deploy."),
        )
    model = target.get("model") or view.model
    token = serving.router_token(caller, view.name, project)
    return Endpoint(
        f"{view.endpoint}/v1",
        model,
        headers={"X-Cube-Token": token},
        shown={"deployment": view.name, "model": model},
    )


def llm_deployment(serving: Any, caller: Caller, project: str, name: str) -> Any:
    """The deployment's view; one that serves no language model is refused."""
    view = serving.get(caller, name, project)  # NotFound: another's, or none
    if view.runtime != "llm":
        raise InvalidInput(
            _t(
                "deployment {name!r} serves no language model (runtime {runtime})",
                name=view.name,
                runtime=view.runtime,
            ),
            _t("Chat with a deployment whose runtime is llm (GET /chat/targets lists them)."),
        )
    return view


def _internal(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast


def _cluster_hosts() -> set[str]:
    """The Kubernetes API server the service talks to (its credentials' host)."""
    hosts = {"kubernetes.default", "kubernetes.default.svc"}
    for key in ("KUBERNETES_SERVICE_HOST", "CUBE_LAB_K8S_HOST"):
        value = os.environ.get(key, "")
        host = urlsplit(value).hostname if "://" in value else value
        if host:
            hosts.add(host)
    return hosts


def check_outbound(url: str) -> None:
    """Under the hub (this process issues job tokens: the service), refuse a user's URL that
    names this machine, a link-local address (cloud metadata) or the cluster's API server,
    unless an admin lists the host in $CUBE_LAB_CHAT_ALLOWED_HOSTS. Elsewhere the server is
    the user's own and may call what the user can."""
    if job_credentials.issuer() is None:
        return
    host = urlsplit(url).hostname or ""
    allowed = {h.strip() for h in os.environ.get(ENV_ALLOWED, "").split(",") if h.strip()}
    if host in allowed:
        return
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        addresses = set()  # it does not resolve: the request fails on its own, clearly
    blocked = host in _cluster_hosts() or any(_internal(a) for a in addresses)
    if blocked:
        raise Forbidden(
            _t("the cube-lab service does not call {host} for a user", host=host),
            _t(
                "Under the hub, a URL you give may not name the service's own machine, a "
                "link-local address or the cluster's API server. Deploy the model in your "
                "project and chat with the deployment, or ask an admin to allow the host "
                "({env}).",
                env=ENV_ALLOWED,
            ),
        )
