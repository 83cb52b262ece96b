"""Serving REST handlers: deployments (list, deploy), one deployment (get, undeploy), traffic
(switch, canary, shadow, promote, rollback, split), log, metrics, shadow answers, request
samples, test infer, access (API keys, auth mode, rate limit, client address lists)."""

from __future__ import annotations

import json
from typing import Any

from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from ..errors import Conflict, InvalidInput
from ..locale.messages import _t
from .base import CubeHandler

_DEPLOY_FIELDS = {
    "model",
    "name",
    "project",
    "replicas",
    "port",
    "backend",
    "batch_max_rows",
    "batch_wait_ms",
    "samples_percent",
    "auth",
    "runtime",
    "engine",
    "engine_options",
}
_KEY_FIELDS = {"name", "expires_at", "expires_in_days"}
_TRAFFIC_ACTIONS = ("switch", "canary", "shadow", "promote", "rollback", "split")


class DeploymentsHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        found = await self.call(
            self.workspace.serving.list,
            self.caller,
            project=self.get_query_argument("project", None),
        )
        self.reply({"deployments": found})

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        unknown = sorted(set(body) - _DEPLOY_FIELDS)
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known: {value}", value=sorted(_DEPLOY_FIELDS)),
            )
        if body.get("backend", "local") != "local":
            raise InvalidInput(
                _t("POST /deployments deploys on this server"),
                _t(
                    "For KServe POST /cube/api/v1/kserve/inferenceservices (the server "
                    "deploys with its own cluster credentials)."
                ),
            )
        view = await self.call(
            self.workspace.serving.deploy,
            self.caller,
            body.get("model"),
            name=body.get("name"),
            project=body.get("project"),
            replicas=body.get("replicas", 1),
            port=body.get("port"),
            batch_max_rows=body.get("batch_max_rows", 0),
            batch_wait_ms=body.get("batch_wait_ms", 0.0),
            samples_percent=body.get("samples_percent", 0.0),
            auth=body.get("auth"),
            runtime=body.get("runtime"),
            engine=body.get("engine"),
            engine_options=body.get("engine_options"),
        )
        self.reply(view, 201)


class DeploymentHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        self.reply(await self.call(self.workspace.serving.get, self.caller, name, project))

    @web.authenticated
    async def delete(self, project: str, name: str) -> None:
        service = self.workspace.serving
        if self.query_bool("forget"):
            await self.call(service.delete, self.caller, name, project=project)
            self.set_status(204)
            self.finish()
            return
        self.reply(await self.call(service.undeploy, self.caller, name, project=project))


class TrafficHandler(CubeHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        body = self.json_body()
        action = body.get("action")
        service = self.workspace.serving
        caller = self.caller
        if action not in _TRAFFIC_ACTIONS:
            raise InvalidInput(
                _t("unknown action {action!r}", action=action),
                _t("Use one of {value}.", value=list(_TRAFFIC_ACTIONS)),
            )
        version = body.get("version")
        if action in ("switch", "canary", "shadow") and version in (None, ""):
            raise InvalidInput(
                _t("{action} needs a version", action=action), _t('{{"version": 3}} or an alias')
            )
        ref = str(version)
        if action == "switch":
            view = await self.call(service.switch, caller, name, ref, project=project)
        elif action == "canary":
            view = await self.call(
                service.canary, caller, name, ref, body.get("percent", 10), project=project
            )
        elif action == "shadow":
            view = await self.call(service.shadow, caller, name, ref, project=project)
        elif action == "promote":
            view = await self.call(service.promote, caller, name, project=project)
        elif action == "rollback":
            view = await self.call(service.rollback, caller, name, project=project)
        else:
            view = await self.call(
                service.set_traffic, caller, name, body.get("percent"), project=project
            )
        self.reply(view)


class DeploymentLogHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        self.reply(
            await self.call(
                self.workspace.serving.tail_log,
                self.caller,
                name,
                self.query_int("offset", 0),
                project=project,
            )
        )


class DeploymentMetricsHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        text = await self.call(self.workspace.serving.metrics, self.caller, name, project)
        self.finish(text, set_content_type="text/plain; version=0.0.4")


class ShadowHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        records = await self.call(
            self.workspace.serving.shadow_log,
            self.caller,
            name,
            self.query_int("limit", 100, low=1),
            project=project,
        )
        self.reply({"records": records})


class SamplesHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        found = await self.call(
            self.workspace.serving.samples,
            self.caller,
            name,
            self.query_int("limit", 100, low=1),
            project=project,
        )
        self.reply(found)

    @web.authenticated
    async def put(self, project: str, name: str) -> None:
        body = self.json_body()
        if "percent" not in body:
            raise InvalidInput(
                _t("percent is required"), _t('{{"percent": 5}} keeps 5% of the requests')
            )
        view = await self.call(
            self.workspace.serving.set_samples,
            self.caller,
            name,
            body["percent"],
            project=project,
        )
        self.reply(view)


class AccessHandler(CubeHandler):
    """Who may call the deployment: auth mode, rate limit, client allow/deny lists."""

    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        self.reply(await self.call(self.workspace.serving.access, self.caller, name, project))

    @web.authenticated
    async def put(self, project: str, name: str) -> None:
        body = self.json_body()
        view = await self.call(
            self.workspace.serving.set_access, self.caller, name, body, project=project
        )
        self.reply(view)


class KeysHandler(CubeHandler):
    """The deployment's API keys: list them, make one (the answer shows the key, once)."""

    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        keys = await self.call(self.workspace.serving.list_keys, self.caller, name, project)
        self.reply({"keys": keys})

    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        body = self.json_body()
        unknown = sorted(set(body) - _KEY_FIELDS)
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known: {value}", value=sorted(_KEY_FIELDS)),
            )
        made = await self.call(
            self.workspace.serving.create_key,
            self.caller,
            name,
            body.get("name"),
            expires_at=body.get("expires_at"),
            expires_in_days=body.get("expires_in_days"),
            project=project,
        )
        self.set_header("Cache-Control", "no-store")  # the key is in this answer
        self.reply(made, 201)


class KeyHandler(CubeHandler):
    @web.authenticated
    async def delete(self, project: str, name: str, key: str) -> None:
        """Revoke the key (by id, or the name of a key in force)."""
        revoked = await self.call(
            self.workspace.serving.revoke_key, self.caller, name, key, project=project
        )
        self.reply(revoked)


class InferHandler(CubeHandler):
    """The test form's request, passed to the deployment (the browser may not reach its port)."""

    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        """The served model's OIP v2 metadata (input names, datatypes, shapes) for the form."""
        view = await self.call(self.workspace.serving.get, self.caller, name, project)
        if not view.endpoint:
            raise Conflict(
                _t("deployment {name!r} is not running ({status})", name=name, status=view.status)
            )
        await self._forward(project, name, f"{view.endpoint}/v2/models/{view.model}", "GET", None)

    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        view = await self.call(self.workspace.serving.get, self.caller, name, project)
        if not view.endpoint:
            raise Conflict(
                _t("deployment {name!r} is not running ({status})", name=name, status=view.status)
            )
        self.json_body()  # a clear 400 for a body that is not a JSON object
        route = self.get_query_argument("route", "infer")
        if route not in ("infer", "predict"):
            raise InvalidInput(_t("route must be infer or predict"))
        url = (
            f"{view.endpoint}/v2/models/{view.model}/infer"
            if route == "infer"
            else f"{view.endpoint}/predict"
        )
        await self._forward(project, name, url, "POST", self.request.body)

    async def _forward(
        self, project: str, name: str, url: str, method: str, body: bytes | None
    ) -> None:
        # the router token passes the deployment's access gate (no API key needed here)
        token = await self.call(self.workspace.serving.router_token, self.caller, name, project)
        try:
            resp = await AsyncHTTPClient().fetch(
                url,
                method=method,
                body=body,
                headers={"Content-Type": "application/json", "X-Cube-Token": token},
                request_timeout=60,
                raise_error=False,
            )
        except (OSError, HTTPClientError) as exc:
            raise Conflict(
                _t("deployment {name!r} does not answer: {exc}", name=name, exc=exc)
            ) from None
        answer: Any
        try:
            answer = json.loads(resp.body or b"null")
        except ValueError:
            answer = (resp.body or b"").decode("utf-8", "replace")
        self.reply(
            {"status": resp.code, "version": resp.headers.get("X-Cube-Version"), "body": answer}
        )
