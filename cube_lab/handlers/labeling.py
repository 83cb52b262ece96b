"""Labeling REST handlers: datasets (create, list, show, item content, version download)
and labeling projects (create, list, show, delete, assign, next, tasks, review, pre-label,
export, import)."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from tornado import web

from .. import containment
from ..errors import InvalidInput
from ..labeling.views import FileDownload
from ..locale.messages import _t
from .base import CubeHandler
from .inputs import path_id

CHUNK = 1 << 20


def _check_fields(body: dict[str, Any], known: set[str], required: tuple[str, ...] = ()) -> None:
    unknown = sorted(set(body) - known)
    if unknown:
        raise InvalidInput(
            _t("unknown fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(sorted(known))),
        )
    for key in required:
        if body.get(key) in (None, ""):
            raise InvalidInput(_t("{key} is required", key=key))


def _zip_or_file(found: FileDownload) -> tuple[IO[bytes], str, str]:
    """(stream, filename, content type): the file itself, or a zip of the folder."""
    if not found.is_dir:
        return open(found.path, "rb"), found.filename, "application/octet-stream"
    spool = containment.zip_folder(found.path, found.filename)
    return spool, f"{found.filename}.zip", "application/zip"


class LabelingHandler(CubeHandler):
    def under_root(self, raw: object) -> Path:
        """A path from the client: relative to the server root, or absolute inside it (or in
        a project folder shared with the caller)."""
        return self.resolve(raw)[0]


# -- datasets ------------------------------------------------------------------------------


class DatasetsHandler(LabelingHandler):
    @web.authenticated
    async def get(self) -> None:
        views = await self.call(
            self.workspace.datasets.list, self.caller, self.get_query_argument("project", None)
        )
        self.reply({"datasets": views})

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        _check_fields(body, {"project", "name", "path", "kind", "text_field"}, ("name", "path"))
        view = await self.call(
            self.workspace.datasets.create,
            self.caller,
            body.get("name"),
            self.under_root(body.get("path")),
            project=body.get("project"),
            kind=body.get("kind"),
            text_field=body.get("text_field"),
        )
        self.reply(view, 201)


class DatasetHandler(LabelingHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        self.reply(await self.call(self.workspace.datasets.get, self.caller, project, name))

    @web.authenticated
    async def delete(self, project: str, name: str) -> None:
        await self.call(self.workspace.datasets.delete, self.caller, project, name)
        self.set_status(204)
        self.finish()


class DatasetItemsHandler(LabelingHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        items = await self.call(self.workspace.datasets.items, self.caller, project, name)
        self.reply({"items": items})


class ItemContentHandler(LabelingHandler):
    @web.authenticated
    async def get(self, project: str, name: str, item_id: str) -> None:
        content, ctype = await self.call(
            self.workspace.datasets.item_content,
            self.caller,
            project,
            name,
            path_id(item_id, "item"),
        )
        if not isinstance(content, bytes):  # an image inside the dataset's source
            content = await self.call(containment.read_inside, content, content.parent)
        data = content
        # items are stored by checksum and never change under their id
        self.set_header("Cache-Control", "private, max-age=3600")
        self.finish(data, set_content_type=ctype)  # APIHandler would say application/json


class VersionDownloadHandler(LabelingHandler):
    @web.authenticated
    async def get(self, project: str, name: str, version: str) -> None:
        found = await self.call(
            self.workspace.datasets.version_download, self.caller, project, name, version
        )
        stream, filename, ctype = await self.call(_zip_or_file, found)
        self.set_header("Content-Type", ctype)
        self.attachment(filename)
        with stream:
            while chunk := await self.call(stream.read, CHUNK):
                self.write(chunk)
                await self.flush()
        self.finish(set_content_type=ctype)


# -- labeling projects -------------------------------------------------------------------------


class LabelingProjectsHandler(LabelingHandler):
    @web.authenticated
    async def get(self) -> None:
        views = await self.call(
            self.workspace.labeling.list, self.caller, self.get_query_argument("project", None)
        )
        self.reply({"projects": views})

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        known = {
            "project",
            "name",
            "dataset",
            "type",
            "labels",
            "multi_label",
            "instructions",
            "review",
            "reviewers",
        }
        _check_fields(body, known, ("name", "dataset", "type", "labels"))
        view = await self.call(
            self.workspace.labeling.create,
            self.caller,
            body.get("name"),
            dataset=body.get("dataset"),
            type=body.get("type"),
            labels=body.get("labels"),
            project=body.get("project"),
            multi_label=body.get("multi_label"),
            instructions=body.get("instructions"),
            review=body.get("review"),
            reviewers=body.get("reviewers"),
        )
        self.reply(view, 201)


class LabelingProjectHandler(LabelingHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        self.reply(await self.call(self.workspace.labeling.get, self.caller, project, name))

    @web.authenticated
    async def delete(self, project: str, name: str) -> None:
        await self.call(self.workspace.labeling.delete, self.caller, project, name)
        self.set_status(204)
        self.finish()


class AssignHandler(LabelingHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        body = self.json_body()
        _check_fields(body, {"users", "mode", "batch_size"}, ("users",))
        assigned = await self.call(
            self.workspace.labeling.assign,
            self.caller,
            project,
            name,
            body.get("users"),
            body.get("mode") or "round_robin",
            body.get("batch_size"),
        )
        self.reply({"assigned": assigned})


class NextHandler(LabelingHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        body = self.json_body()
        _check_fields(body, {"after"})
        task = await self.call(
            self.workspace.labeling.next, self.caller, project, name, body.get("after")
        )
        if task is None:
            self.set_status(204)
            self.finish()
            return
        self.reply(task)


class TasksHandler(LabelingHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        page = await self.call(
            self.workspace.labeling.list_tasks,
            self.caller,
            project,
            name,
            status=self.get_query_argument("status", None) or None,
            assignee=self.get_query_argument("assignee", None) or None,
            limit=self.query_int("limit", 50),
            offset=self.query_int("offset", 0),
        )
        self.reply(page)


class TaskHandler(LabelingHandler):
    @web.authenticated
    async def get(self, project: str, name: str, task_id: str) -> None:
        self.reply(
            await self.call(
                self.workspace.labeling.get_task,
                self.caller,
                project,
                name,
                path_id(task_id, "task"),
            )
        )

    @web.authenticated
    async def put(self, project: str, name: str, task_id: str) -> None:
        body = self.json_body()
        _check_fields(body, {"result", "submit"})
        if "result" not in body:
            raise InvalidInput(
                _t("result is required"), _t('e.g. {{"result": {{"labels": ["cat"]}}}}')
            )
        task = await self.call(
            self.workspace.labeling.save,
            self.caller,
            project,
            name,
            path_id(task_id, "task"),
            body["result"],
            body.get("submit", False),
        )
        self.reply(task)


class ReviewHandler(LabelingHandler):
    @web.authenticated
    async def post(self, project: str, name: str, task_id: str) -> None:
        body = self.json_body()
        _check_fields(body, {"decision", "comment"}, ("decision",))
        task = await self.call(
            self.workspace.labeling.review,
            self.caller,
            project,
            name,
            path_id(task_id, "task"),
            body.get("decision"),
            body.get("comment"),
        )
        self.reply(task)


class PrelabelHandler(LabelingHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        body = self.json_body()
        _check_fields(body, {"model", "version", "threshold", "limit"}, ("model",))
        count = await self.call(
            self.workspace.labeling.prelabel,
            self.caller,
            project,
            name,
            body.get("model"),
            body.get("version"),
            body.get("threshold"),
            body.get("limit"),
        )
        self.reply({"prelabeled": count})


class ExportHandler(LabelingHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        body = self.json_body()
        _check_fields(body, {"format", "only", "class_order"}, ("format",))
        view = await self.call(
            self.workspace.labeling.export,
            self.caller,
            project,
            name,
            body.get("format"),
            body.get("only"),
            body.get("class_order", self.get_query_argument("class_order", None)),
        )
        self.reply(view, 201)


class ImportHandler(LabelingHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        body = self.json_body()
        _check_fields(body, {"format", "data", "pick"}, ("format",))
        answer = await self.call(
            self.workspace.labeling.import_labels,
            self.caller,
            project,
            name,
            body.get("format"),
            body.get("data"),
            body.get("pick"),
        )
        self.reply(answer)
