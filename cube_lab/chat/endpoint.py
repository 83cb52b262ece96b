"""Where a chat (the Chat panel's, a knowledge base's) is answered: an LLM deployment of the
project, reached through its router with its token, or an OpenAI-compatible URL the user
gives, with their key.

``resolve`` turns a checked target (``params.check_target``) into an ``Endpoint``. A URL the
user gives is called by this server: under the hub that is the cube-lab service, which can
reach what users' servers cannot (its own loopback, private networks, the cloud's metadata
address, the cluster's API server). ``check_outbound`` refuses those before any request is
sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import outbound
from ..errors import Conflict, InvalidInput
from ..identity import Caller
from ..locale.messages import _t


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


def check_outbound(url: str) -> None:
    """The outbound policy (``cube_lab.outbound``) for a chat URL the user gives."""
    outbound.check_url(url)
