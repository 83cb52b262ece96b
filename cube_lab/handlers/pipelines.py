"""Pipeline REST handlers: validate, compile, runs, logs, results, templates, node kinds."""

from __future__ import annotations

import logging
import mimetypes
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tornado import web

from ..errors import InvalidInput
from ..locale import negotiate
from ..locale.messages import _t, localize
from ..pipelines import catalogs
from ..pipelines.nodekinds import node_kinds
from .base import CubeHandler
from .inputs import path_id

RUN_FIELDS = ("params", "only", "from", "cache", "parallelism", "project")


class PipelineHandler(CubeHandler):
    _root: Path | None = None

    @property
    def root(self) -> Path:
        """The folder the request's pipeline may not leave: the root dir, or the shared
        project folder its pipeline lies in (set by ``pipeline_path``)."""
        return self._root or self.root_dir

    def pipeline_path(self, raw: object) -> Path:
        path, self._root = self.resolve(raw, absolute="anchor")
        if path.suffix != ".pipeline":
            raise InvalidInput(_t("{raw!r} is not a .pipeline file", raw=raw))
        return path


class ValidateHandler(PipelineHandler):
    @web.authenticated
    async def post(self) -> None:
        path = self.pipeline_path(self.json_body().get("path"))
        pipeline, problems = await self.call(
            self.workspace.pipelines.check, path, self.root, self.caller
        )
        locale = negotiate(self.request.headers.get("Accept-Language"))  # the editor's language
        self.reply(
            {
                "valid": not problems,
                "problems": localize([asdict(p) for p in problems], locale),
                "name": pipeline.name,
                "nodes": len(pipeline.nodes),
                "migrated_from": pipeline.migrated_from,
            }
        )


# Nodes run in their images on the cluster: a tool this machine lacks (Rscript) is fine.
_LOCAL_ONLY_PROBLEMS = ("R nodes need Rscript",)


def compile_kfp(workspace: Any, path: Path, root: Path, caller: Any = None) -> dict[str, Any]:
    """KFP v2 IR YAML for a saved pipeline, with what the IR could not hold (notes); with a
    ``caller``, the steps' pods carry the caller's project and name as labels."""
    from ..pipelines import kfp_compiler
    from ..pipelines.validation import PipelineInvalid

    pipeline, problems = workspace.pipelines.check(path, root)
    problems = [p for p in problems if not p.message.startswith(_LOCAL_ONLY_PROBLEMS)]
    if problems:
        raise PipelineInvalid(problems)
    notes = kfp_compiler.plan_pipeline(pipeline, workspace.templates).notes
    # The notes go back in the answer; compile_pipeline would log them once more.
    logging.getLogger(kfp_compiler.__name__).setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="cube-kfp-") as tmp:
        identity = kfp_compiler.identity_of(workspace, caller) if caller is not None else None
        output = kfp_compiler.compile_pipeline(
            pipeline, workspace.templates, Path(tmp) / f"{path.stem}.yaml", identity=identity
        )
        text = output.read_text(encoding="utf-8")
    return {"name": pipeline.name, "filename": f"{path.stem}.yaml", "yaml": text, "notes": notes}


class CompileHandler(PipelineHandler):
    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        target = body.get("target", "kfp")
        if target != "kfp":
            raise InvalidInput(
                _t("unknown target {target!r}", target=target), _t("The only target is 'kfp'.")
            )
        path = self.pipeline_path(body.get("path"))
        self.reply(await self.call(compile_kfp, self.workspace, path, self.root, self.caller))


class RunsHandler(PipelineHandler):
    @web.authenticated
    async def get(self) -> None:
        raw = self.get_query_argument("path", None)
        path = self.pipeline_path(raw) if raw else None
        runs = await self.call(
            self.workspace.pipelines.list_runs,
            self.caller,
            path=path,
            project=self.get_query_argument("project", None),
            root=self.client_path,
            limit=self.query_int("limit", 50),
        )
        self.reply({"runs": runs})

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        unknown = sorted(set(body) - {"path", *RUN_FIELDS})
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known: path, {value}", value=", ".join(RUN_FIELDS)),
            )
        params = body.get("params") or {}
        if not isinstance(params, dict):
            raise InvalidInput(_t("params must be an object of name -> value"))
        parallelism = body.get("parallelism")
        if parallelism is not None and (
            isinstance(parallelism, bool) or not isinstance(parallelism, int)
        ):
            raise InvalidInput(_t("parallelism must be a whole number"))
        service = self.workspace.pipelines
        runner, recorder = await self.call(
            service.prepare,
            self.caller,
            self.pipeline_path(body.get("path")),
            self.root,
            project=body.get("project"),
            params=params,
            only=body.get("only"),
            from_node=body.get("from"),
            cache=bool(body.get("cache")),
            parallelism=parallelism,
        )
        run_id = service.start(runner, recorder)
        self.reply(await self.call(service.get_run, self.caller, run_id, self.client_path), 201)


class RunHandler(PipelineHandler):
    @web.authenticated
    async def get(self, run_id: str) -> None:
        self.reply(
            await self.call(self.workspace.pipelines.get_run, self.caller, run_id, self.client_path)
        )


class CancelHandler(PipelineHandler):
    @web.authenticated
    async def post(self, run_id: str) -> None:
        self.reply(await self.call(self.workspace.pipelines.cancel, self.caller, run_id))


class LogHandler(PipelineHandler):
    @web.authenticated
    async def get(self, run_id: str, node_id: str) -> None:
        self.reply(
            await self.call(
                self.workspace.pipelines.tail_log,
                self.caller,
                run_id,
                node_id,
                self.query_int("offset", 0),
            )
        )


class ResultsHandler(PipelineHandler):
    @web.authenticated
    async def get(self, run_id: str, node_id: str) -> None:
        self.reply(
            {
                "results": await self.call(
                    self.workspace.pipelines.results, self.caller, run_id, node_id
                )
            }
        )


class ResultFileHandler(PipelineHandler):
    @web.authenticated
    async def get(self, run_id: str, node_id: str, rel: str) -> None:
        data = await self.call(
            self.workspace.pipelines.read_result, self.caller, run_id, node_id, rel
        )
        path = Path(rel)
        ctype = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if path.suffix.lower() == ".svg":
            # Never render a node's SVG as a page of ours: it could carry script.
            self.set_header(
                "Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'"
            )
        self.set_header("Content-Type", ctype)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.write(data)
        await self.flush()  # headers go out now: APIHandler.finish would say application/json
        self.finish()


class TemplatesHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        catalog = self.workspace.templates
        await self.call(catalog.reload)
        self.reply(
            {
                "templates": [t.to_json() for t in catalog.list()],
                "errors": [e.to_json() for e in catalog.errors],
            }
        )


class NodeKindsHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        kinds: dict[str, Any] = {}
        for op, kind in node_kinds().items():
            kinds[op] = {
                "op": op,
                "name": kind.name,
                "display_name": kind.display_name,
                "schema": getattr(kind, "schema", None),  # a form for plug-in kinds' parameters
            }
        found = await self.call(catalogs.catalogs)
        for component in found.components:  # Elyra catalog components, under their catalog
            kinds.setdefault(
                component.op,
                {
                    "op": component.op,
                    "name": "catalog",
                    "display_name": component.name,
                    "schema": None,
                    "component": component.to_json(),
                },
            )
        self.reply(
            {
                "node_kinds": list(kinds.values()),
                "catalog_errors": [asdict(e) for e in found.errors],
            }
        )


SCHEDULE_FIELDS = (
    "name",
    "project",
    "start_at",
    "end_at",
    "catchup",
    "depends_on_past",
    "max_active_runs",
    "expire_after_s",
    "params",
)


class SchedulesHandler(PipelineHandler):
    @web.authenticated
    async def get(self) -> None:
        schedules = await self.call(self.workspace.schedules.list, self.caller)
        raw = self.get_query_argument("path", None)
        if raw:  # only this pipeline's (the editor's Schedule dialog)
            wanted = str(self.pipeline_path(raw).resolve())
            schedules = [s for s in schedules if s.pipeline_path == wanted]
        self.reply({"schedules": schedules})

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        unknown = sorted(set(body) - {"path", "cron", *SCHEDULE_FIELDS})
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known: path, cron, {value}", value=", ".join(SCHEDULE_FIELDS)),
            )
        path = self.pipeline_path(body.get("path"))
        view = await self.call(
            self.workspace.schedules.create,
            self.caller,
            path,
            self.root,
            body.get("cron"),
            **{k: body[k] for k in SCHEDULE_FIELDS if k in body},
        )
        self.reply(view, 201)


class ScheduleHandler(PipelineHandler):
    @web.authenticated
    async def patch(self, raw_id: str) -> None:
        body = self.json_body()
        if set(body) != {"enabled"}:
            raise InvalidInput(
                _t("only 'enabled' can be changed"),
                _t("Delete and create the schedule again to change the rest."),
            )
        self.reply(
            await self.call(
                self.workspace.schedules.set_enabled,
                self.caller,
                path_id(raw_id, "schedule"),
                body["enabled"],
            )
        )

    @web.authenticated
    async def delete(self, raw_id: str) -> None:
        await self.call(self.workspace.schedules.delete, self.caller, path_id(raw_id, "schedule"))
        self.set_status(204)
        self.finish()
