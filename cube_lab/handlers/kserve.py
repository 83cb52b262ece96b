"""KServe REST handlers: the InferenceServices the server deploys for its callers with its own
cluster credentials (``serving/kserve_service.py``): list and deploy, one, delete, traffic."""

from __future__ import annotations

from typing import Any

from tornado import web

from ..errors import InvalidInput
from ..k8s import ClusterConfig
from ..locale.messages import _t
from ..serving import kserve_service
from .base import CubeHandler

_DEPLOY_FIELDS = ("model", "name", "project", "replicas", "max_replicas", "canary", "cpu")
_DEPLOY_FIELDS += ("memory", "gpus", "gpu_type", "gpu_memory_mib", "gpu_cores_percent")
_DEPLOY_FIELDS += ("runtime", "engine", "llm_backend", "image")


class KServeHandler(CubeHandler):
    @property
    def cluster(self) -> ClusterConfig:
        return ClusterConfig.from_env()


class InferenceServicesHandler(KServeHandler):
    @web.authenticated
    async def get(self) -> None:
        found = await kserve_service.listing(
            self.workspace, self.caller, self.cluster, self.get_query_argument("project", None)
        )
        self.reply({"inferenceservices": found})

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        unknown = sorted(set(body) - set(_DEPLOY_FIELDS))
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known: {value}", value=", ".join(_DEPLOY_FIELDS)),
            )
        if not isinstance(body.get("model"), str):
            raise InvalidInput(_t("model is required: MODEL or MODEL:VERSION"), _t("e.g. iris:3"))
        for key in ("name", "project", "cpu", "memory", "gpu_type"):
            if body.get(key) is not None and not isinstance(body[key], str):
                raise InvalidInput(
                    _t("{key} must be a string", key=key), _t("got {value!r}", value=body[key])
                )
        options: dict[str, Any] = {k: body[k] for k in _DEPLOY_FIELDS[1:] if k in body}
        found = await kserve_service.deploy(
            self.workspace, self.caller, body["model"], self.cluster, **options
        )
        self.reply(found, 202)


class InferenceServiceHandler(KServeHandler):
    @web.authenticated
    async def get(self, name: str) -> None:
        self.reply(await kserve_service.get(self.workspace, self.caller, self.cluster, name))

    @web.authenticated
    async def delete(self, name: str) -> None:
        await kserve_service.remove(self.workspace, self.caller, self.cluster, name)
        self.reply({"deleted": name, "backend": "kubernetes"})


class InferenceServiceTrafficHandler(KServeHandler):
    @web.authenticated
    async def post(self, name: str) -> None:
        body = self.json_body()
        unknown = sorted(set(body) - {"action", "percent"})
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown), _t("Known: action, percent")
            )
        found = await kserve_service.traffic(
            self.workspace,
            self.caller,
            self.cluster,
            name,
            str(body.get("action") or ""),
            body.get("percent"),
        )
        self.reply(found)
