"""Tuning REST handlers: experiments (list, create), one experiment, stop, resume, a
trial's log, and what the experiment form offers (tuners, assessors, search-space types)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tornado import web

from .. import containment
from ..errors import InvalidInput
from ..locale.messages import _t
from .base import CubeHandler


class TuningHandler(CubeHandler):
    def folder(self, body: dict[str, Any]) -> tuple[Path, Path]:
        """Where the config's relative paths start, and the root it lies in: a folder under
        the caller's root, or (under the hub) in a project group's folder shared with them."""
        return self.resolve(body.get("folder") or ".", what="folder")


class ExperimentsHandler(TuningHandler):
    @web.authenticated
    async def get(self) -> None:
        views = await self.call(
            self.workspace.tuning.list,
            self.caller,
            project=self.get_query_argument("project", None),
            limit=self.query_int("limit", 50),
        )
        self.reply({"experiments": views})

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        known = ("config", "folder", "project", "backend", "image")
        unknown = sorted(set(body) - set(known))
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known: {value}", value=", ".join(known)),
            )
        config = body.get("config")
        if not isinstance(config, dict):
            raise InvalidInput(_t("config must be an object (an NNI experiment config)"))
        if body.get("project"):
            config = {**config, "project": body["project"]}
        backend, image = body.get("backend") or "local", body.get("image")
        if backend not in ("local", "kubernetes"):
            raise InvalidInput(
                _t("backend {backend!r} is not local or kubernetes", backend=backend),
                _t("local runs the trials here (NNI); kubernetes runs a Katib Experiment."),
            )
        if image is not None and (not isinstance(image, str) or backend != "kubernetes"):
            raise InvalidInput(_t("image is a container image name, for backend kubernetes"))
        folder, root = self.folder(body)
        service = self.workspace.tuning
        spec = await self.call(service.parse, config, folder)
        containment.resolve(root, spec.code_dir, what="trialCodeDirectory")
        spec.backend, spec.image = backend, image
        if backend == "kubernetes":
            run = await self.call(service.on_cluster.prepare, self.caller, spec)
            experiment_id = await service.on_cluster.launch(run)
        else:
            engine = await self.call(service.prepare, self.caller, spec)
            experiment_id = service.start(engine)
        self.reply(await self.call(service.get, self.caller, experiment_id), 201)


class ExperimentHandler(TuningHandler):
    @web.authenticated
    async def get(self, experiment_id: str) -> None:
        self.reply(await self.call(self.workspace.tuning.get, self.caller, experiment_id))


class StopHandler(TuningHandler):
    @web.authenticated
    async def post(self, experiment_id: str) -> None:
        self.reply(await self.call(self.workspace.tuning.stop, self.caller, experiment_id))


class ResumeHandler(TuningHandler):
    @web.authenticated
    async def post(self, experiment_id: str) -> None:
        service = self.workspace.tuning
        engine = await self.call(service.resume, self.caller, experiment_id)
        service.start(engine)
        self.reply(await self.call(service.get, self.caller, experiment_id))


class RegisterHandler(TuningHandler):
    @web.authenticated
    async def post(self, experiment_id: str) -> None:
        body = self.json_body()
        known = {"name", "trial", "path", "project", "description"}
        unknown = sorted(set(body) - known)
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known: {value}", value=", ".join(sorted(known))),
            )
        for key in known:
            if body.get(key) is not None and not isinstance(body[key], str):
                raise InvalidInput(_t("{key} must be a string", key=key))
        version = await self.call(
            self.workspace.tuning.register_trial,
            self.caller,
            experiment_id,
            body.get("name"),
            body.get("trial"),
            body.get("path"),
            project=body.get("project"),
            description=body.get("description") or "",
        )
        self.reply(version, 201)


class TrialLogHandler(TuningHandler):
    @web.authenticated
    async def get(self, experiment_id: str, trial_id: str) -> None:
        self.reply(
            await self.call(
                self.workspace.tuning.tail_log,
                self.caller,
                experiment_id,
                trial_id,
                self.query_int("offset", 0),
            )
        )


class AlgorithmsHandler(TuningHandler):
    @web.authenticated
    async def get(self) -> None:
        from ..tuning import searchspace
        from ..tuning.spec import ASSESSORS, TUNERS

        self.reply(
            {
                "tuners": list(TUNERS),
                "assessors": list(ASSESSORS),
                "search_space_types": searchspace.SHAPES,
                "example": searchspace.EXAMPLE,
            }
        )
