"""Training REST handlers: jobs (list, submit), one job, stop, rerun, log, metrics, register."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tornado import web

from .. import containment
from ..errors import InvalidInput
from ..locale.messages import _t
from .base import CubeHandler


class TrainingHandler(CubeHandler):
    @property
    def root(self) -> Path:
        return self.root_dir

    def placed(self, body: dict[str, Any]) -> tuple[dict[str, Any], Path]:
        """The job's body and the folder it may not leave: the caller's root, or (under the
        hub) the project group's folder its working_dir or script leads to, through the
        link in the caller's home. There the job runs in that folder, named by its real
        path, and cannot leave it."""
        raw = body.get("working_dir") or body.get("script")
        if not isinstance(raw, str) or not raw:
            return body, self.root
        path, root = self.resolve(raw)
        if root == containment.real(self.root):
            return body, self.root
        if body.get("working_dir"):
            return {**body, "working_dir": str(path)}, root
        return {**body, "working_dir": str(path.parent), "script": path.name}, root


class JobsHandler(TrainingHandler):
    @web.authenticated
    async def get(self) -> None:
        jobs = await self.call(
            self.workspace.training.list,
            self.caller,
            project=self.get_query_argument("project", None),
            limit=self.query_int("limit", 50),
        )
        self.reply({"jobs": jobs})

    @web.authenticated
    async def post(self) -> None:
        service = self.workspace.training
        body, root = self.placed(self.json_body())
        job = await self.call(service.prepare, self.caller, body, root)
        job_id = await service.launch(job)  # a cluster job is submitted before the reply
        self.reply(await self.call(service.get, self.caller, job_id), 201)


class JobHandler(TrainingHandler):
    @web.authenticated
    async def get(self, job_id: str) -> None:
        self.reply(await self.call(self.workspace.training.get, self.caller, job_id))


class StopHandler(TrainingHandler):
    @web.authenticated
    async def post(self, job_id: str) -> None:
        self.reply(await self.call(self.workspace.training.stop, self.caller, job_id))


class RerunHandler(TrainingHandler):
    @web.authenticated
    async def post(self, job_id: str) -> None:
        service = self.workspace.training
        ran = await self.call(service.get, self.caller, job_id)
        # the folder the job ran in may be a project group's (placed above)
        root = self.resolve(ran.working_dir)[1] if ran.working_dir else self.root
        job = await self.call(service.rerun, self.caller, job_id, root)
        new_id = await service.launch(job)
        self.reply(await self.call(service.get, self.caller, new_id), 201)


class LogHandler(TrainingHandler):
    @web.authenticated
    async def get(self, job_id: str) -> None:
        self.reply(
            await self.call(
                self.workspace.training.tail_log,
                self.caller,
                job_id,
                self.query_int("offset", 0),
            )
        )


class MetricsHandler(TrainingHandler):
    @web.authenticated
    async def get(self, job_id: str) -> None:
        self.reply(await self.call(self.workspace.training.metrics, self.caller, job_id))


class RegisterHandler(TrainingHandler):
    @web.authenticated
    async def post(self, job_id: str) -> None:
        body = self.json_body()
        unknown = sorted(set(body) - {"name", "path", "project", "description"})
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known: name, path, project, description"),
            )
        path = body.get("path")
        if path is not None:  # relative to the server root, or absolute inside it
            path = str(containment.resolve(self.root, path, allow_root=False))
        version = await self.call(
            self.workspace.training.register_model,
            self.caller,
            job_id,
            body.get("name"),
            path,
            project=body.get("project"),
            description=body.get("description") or "",
        )
        self.reply(version, 201)
