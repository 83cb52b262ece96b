"""The model registry's REST handlers: /models and /projects/{p}/models/{name}/..."""

from __future__ import annotations

from typing import IO

from tornado import web

from .. import containment
from ..errors import InvalidInput
from ..locale.messages import _t
from ..registry.service import UNSET
from ..registry.views import Download
from .base import CubeHandler

REGISTER_FIELDS = (
    "project",
    "flavor",
    "description",
    "params",
    "metrics",
    "tags",
    "aliases",
    "source",
    "pipeline_run_id",
    "training_job_id",
    "datasets",
)
CHUNK = 1 << 20


class ModelsHandler(CubeHandler):
    @web.authenticated
    async def get(self) -> None:
        page = await self.call(
            self.workspace.registry.list_models,
            self.caller,
            q=self.get_query_argument("q", None),
            project=self.get_query_argument("project", None),
            include_archived=self.query_bool("include_archived"),
            limit=self.query_int("limit", 50),
            offset=self.query_int("offset", 0),
        )
        self.reply(page)

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        unknown = sorted(set(body) - {"name", "path", *REGISTER_FIELDS})
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known fields: name, path, {value}.", value=", ".join(REGISTER_FIELDS)),
            )
        # a leading "/" is the root, as the file browser writes it
        path, _ = self.resolve(body.get("path"), absolute="anchor", allow_root=False)
        if not path.exists():  # say it in the client's terms, not the server's absolute path
            raise InvalidInput(
                _t("path {value!r} does not exist", value=body.get("path")),
                _t("Give a file or folder relative to the server root."),
            )
        version = await self.call(
            self.workspace.registry.register,
            self.caller,
            name=body.get("name"),
            path=path,
            **{k: body[k] for k in REGISTER_FIELDS if k in body},
        )
        self.reply(version, 201)


class ModelHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        self.reply(await self.call(self.workspace.registry.get_model, self.caller, project, name))

    @web.authenticated
    async def patch(self, project: str, name: str) -> None:
        body = self.json_body()
        self.reply(
            await self.call(
                self.workspace.registry.update_model,
                self.caller,
                project,
                name,
                description=body.get("description", UNSET),
                archived=body.get("archived", UNSET),
                read_only=body.get("read_only", UNSET),
            )
        )

    @web.authenticated
    async def delete(self, project: str, name: str) -> None:
        await self.call(self.workspace.registry.delete_model, self.caller, project, name)
        self.set_status(204)
        self.finish()


class VersionsHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        versions = await self.call(
            self.workspace.registry.list_versions,
            self.caller,
            project,
            name,
            self.query_bool("include_archived", True),
        )
        self.reply({"versions": versions})


class VersionHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str, ref: str) -> None:
        self.reply(
            await self.call(self.workspace.registry.get_version, self.caller, project, name, ref)
        )

    @web.authenticated
    async def patch(self, project: str, name: str, ref: str) -> None:
        body = self.json_body()
        self.reply(
            await self.call(
                self.workspace.registry.update_version,
                self.caller,
                project,
                name,
                ref,
                description=body.get("description", UNSET),
                tags=body.get("tags", UNSET),
                archived=body.get("archived", UNSET),
            )
        )

    @web.authenticated
    async def delete(self, project: str, name: str, ref: str) -> None:
        await self.call(self.workspace.registry.delete_version, self.caller, project, name, ref)
        self.set_status(204)
        self.finish()


def _open_artifact(found: Download) -> tuple[IO[bytes], str, str]:
    """(stream, filename, content type): the file itself, or a zip of the folder."""
    if not found.is_dir:
        return open(found.path, "rb"), found.filename, "application/octet-stream"
    spool = containment.zip_folder(found.path, found.path.name)
    return spool, f"{found.filename}.zip", "application/zip"


class DownloadHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str, ref: str) -> None:
        found = await self.call(self.workspace.registry.download, self.caller, project, name, ref)
        stream, filename, ctype = await self.call(_open_artifact, found)
        self.set_header("Content-Type", ctype)
        self.attachment(filename)
        with stream:
            while chunk := await self.call(stream.read, CHUNK):
                self.write(chunk)
                await self.flush()
        self.finish()


class CompareHandler(CubeHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        raw = self.get_query_argument("versions", "")
        refs = [r.strip() for r in raw.split(",") if r.strip()]
        self.reply(
            await self.call(self.workspace.registry.compare, self.caller, project, name, refs)
        )


class AliasHandler(CubeHandler):
    @web.authenticated
    async def put(self, project: str, name: str, alias: str) -> None:
        body = self.json_body()
        if "version" not in body:
            raise InvalidInput(_t("version is required"), _t('e.g. {{"version": 3}}'))
        self.reply(
            await self.call(
                self.workspace.registry.set_alias,
                self.caller,
                project,
                name,
                alias,
                body["version"],
                body.get("expected_version", UNSET),
            )
        )

    @web.authenticated
    async def delete(self, project: str, name: str, alias: str) -> None:
        self.reply(
            await self.call(self.workspace.registry.delete_alias, self.caller, project, name, alias)
        )
