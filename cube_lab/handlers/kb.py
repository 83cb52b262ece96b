"""Knowledge-base REST handlers: list, create, show, delete; sources (list, add files, folders
or uploaded text as an ingest that runs on and is polled, remove); search; evaluate; chat.

Paths a client gives resolve in the caller's root (or a folder shared with them) by the one
containment rule, and files are read by it too (a link leading out is never read). Sources
are stored as absolute paths; answers name them as the client does (``client_path``:
relative to the root), uploads as ``upload:<name>``.
"""

from __future__ import annotations

from typing import Any

from tornado import web

from ..chat.relay import ClientGone
from ..errors import CubeError, InvalidInput
from ..kb.service import UPLOAD
from ..locale import negotiate
from ..locale.messages import _t, localize
from ..serialize import to_jsonable
from .base import CubeHandler
from .sse import EventStreamHandler

CREATE_FIELDS = {
    "project", "name", "chunking", "chunk_size", "overlap", "model", "engine", "milvus", "rerank"
}  # fmt: skip
_CHUNKING = ("chunking", "chunk_size", "overlap")  # an ingest's or a preview's chunking


def _check_fields(body: dict[str, Any], known: set[str], required: tuple[str, ...] = ()) -> None:
    unknown = sorted(set(body) - known)
    if unknown:
        raise InvalidInput(
            _t("unknown fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(sorted(known))),
        )
    for key in required:
        if body.get(key) in (None, "", []):
            raise InvalidInput(
                _t("{key} is required", key=key),
                _t("Give {key} in the JSON body; fields: {value}", key=key, value=sorted(known)),
            )


def _k(raw: object, default: int) -> object:
    """``k`` as given (the service checks it, so every caller gets one message)."""
    return default if raw is None else raw


class KnowledgeBaseHandler(CubeHandler):
    @property
    def kb(self) -> Any:
        return self.workspace.kb

    def source_name(self, source: str) -> str:
        return source if source.startswith(UPLOAD) else self.client_path(source)

    def stored_source(self, raw: object, what: str = "source") -> str:
        """A source as the client names it, as the service stores it (absolute)."""
        if isinstance(raw, str) and raw.startswith(UPLOAD):
            return raw
        return str(self.resolve(raw, what=what)[0])

    def with_sources(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**item, "source": self.source_name(item["source"])} for item in items]

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        return {**record, "files": self.with_sources(record["files"])}


class KnowledgeBasesHandler(KnowledgeBaseHandler):
    @web.authenticated
    async def get(self) -> None:
        views = await self.call(self.kb.list, self.caller, self.get_query_argument("project", None))
        self.reply({"knowledge_bases": views})

    @web.authenticated
    async def post(self) -> None:
        body = self.json_body()
        _check_fields(body, CREATE_FIELDS, ("name",))
        options = {
            key: body[field]
            for field, key in (
                ("chunking", "chunking_"),
                ("chunk_size", "chunk_size"),
                ("overlap", "overlap"),
                ("model", "model"),
                ("engine", "engine"),
                ("milvus", "milvus"),
                ("rerank", "rerank"),
            )
            if body.get(field) is not None
        }
        view = await self.call(
            self.kb.create, self.caller, body.get("name"), project=body.get("project"), **options
        )
        self.reply(view, 201)


class KnowledgeBaseOneHandler(KnowledgeBaseHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        self.reply(await self.call(self.kb.get, self.caller, project, name))

    @web.authenticated
    async def delete(self, project: str, name: str) -> None:
        await self.call(self.kb.delete, self.caller, project, name)
        self.set_status(204)
        self.finish()


class SourcesHandler(KnowledgeBaseHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        sources = await self.call(self.kb.sources, self.caller, project, name)
        self.reply({"sources": self.with_sources(sources)})

    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        """Start an ingest: 202 with its record; poll ``Location`` for the progress."""
        body = self.json_body()
        _check_fields(body, {"paths", "documents", *_CHUNKING})
        paths, documents = body.get("paths") or [], body.get("documents") or []
        if not isinstance(paths, list):
            raise InvalidInput(
                _t("paths must be a list"), _t('e.g. {{"paths": ["docs", "notes.md"]}}')
            )
        if not paths and not documents:
            raise InvalidInput(
                _t("nothing to add: give paths or documents"),
                _t(
                    'e.g. {{"paths": ["docs"]}} (files or folders under your root) or '
                    '{{"documents": [{{"name": "notes.md", "content": "..."}}]}}'
                ),
            )
        resolved = [self.resolve(raw, what=f"paths[{n}]")[0] for n, raw in enumerate(paths)]
        record = await self.call(
            self.kb.start_ingest,
            self.caller,
            project,
            name,
            resolved,
            documents,
            boundary=self.roots,
            options={key: body[key] for key in _CHUNKING if body.get(key) is not None},
        )
        self.set_header(
            "Location", self.request.path.rsplit("/", 1)[0] + f"/ingests/{record['id']}"
        )
        self.reply(self.record(record), 202)

    @web.authenticated
    async def delete(self, project: str, name: str) -> None:
        raw = self.get_query_argument("source", None)
        if not raw:
            raise InvalidInput(
                _t("query parameter 'source' is required"),
                _t("e.g. DELETE .../sources?source=docs/notes.md (GET .../sources lists them)"),
            )
        removed = await self.call(
            self.kb.remove, self.caller, project, name, self.stored_source(raw)
        )
        self.reply({"source": raw, "removed_chunks": removed})


class IngestsHandler(KnowledgeBaseHandler):
    @web.authenticated
    async def get(self, project: str, name: str) -> None:
        records = await self.call(self.kb.ingests, self.caller, project, name)
        self.reply({"ingests": [self.record(r) for r in records]})


class IngestHandler(KnowledgeBaseHandler):
    @web.authenticated
    async def get(self, project: str, name: str, ingest_id: str) -> None:
        record = await self.call(self.kb.ingest, self.caller, project, name, ingest_id)
        self.reply(self.record(record))


class SearchHandler(KnowledgeBaseHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        body = self.json_body()
        _check_fields(body, {"query", "k", "mode", "filters", "rerank"}, ("query",))
        k, mode = _k(body.get("k"), 5), body.get("mode") or "hybrid"
        hits = await self.call(
            self.kb.query,
            self.caller,
            project,
            name,
            body.get("query"),
            k=k,
            mode=mode,
            filters=body.get("filters"),
            name_source=self.source_name,
            rerank=body.get("rerank"),
        )
        answer = {"query": body["query"], "mode": mode, "k": k, "hits": self.with_sources(hits)}
        if body.get("filters"):
            answer["filters"] = body["filters"]
        if body.get("rerank"):
            answer["rerank"] = body["rerank"]
        self.reply(answer)


class EvaluateHandler(KnowledgeBaseHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        body = self.json_body()
        _check_fields(body, {"questions", "k", "mode", "rerank"}, ("questions",))
        questions = body["questions"]
        if not isinstance(questions, list):
            raise InvalidInput(
                _t("questions must be a list"), _t('[{{"question": "...", "source": "docs/a.md"}}]')
            )
        stored = []
        for n, q in enumerate(questions):
            if isinstance(q, dict):
                q = dict(q)
                for key in ("source", "sources"):
                    value = q.get(key)
                    if isinstance(value, str):
                        q[key] = self.stored_source(value, f"questions[{n}].{key}")
                    elif isinstance(value, list):
                        q[key] = [self.stored_source(v, f"questions[{n}].{key}") for v in value]
            stored.append(q)
        scores = await self.call(
            self.kb.evaluate,
            self.caller,
            project,
            name,
            stored,
            k=_k(body.get("k"), 10),
            mode=body.get("mode") or "hybrid",
            rerank=body.get("rerank"),
        )
        self.reply(to_jsonable(scores))


class PreviewHandler(KnowledgeBaseHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        """The chunks an ingest of these paths or documents would make, nothing committed
        (``cube_lab.kb.preview``); chunking options default to the knowledge base's."""
        from ..kb.preview import preview

        body = self.json_body()
        _check_fields(body, {"paths", "documents", "chunking", "chunk_size", "overlap"})
        paths, documents = body.get("paths") or [], body.get("documents") or []
        if not isinstance(paths, list):
            raise InvalidInput(
                _t("paths must be a list"), _t('e.g. {{"paths": ["docs", "notes.md"]}}')
            )
        resolved = [self.resolve(raw, what=f"paths[{n}]")[0] for n, raw in enumerate(paths)]
        options = {key: body.get(key) for key in ("chunking", "chunk_size", "overlap")}
        result = await self.call(
            preview,
            self.kb,
            self.caller,
            project,
            name,
            resolved,
            documents,
            options=options,
            boundary=self.roots,
        )
        self.reply(
            {
                **result,
                "files": self.with_sources(result["files"]),
                "chunks": self.with_sources(result["chunks"]),
            }
        )


class SyncHandler(KnowledgeBaseHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        """``KnowledgeBaseService.sync_folder`` of a folder under the caller's root; the
        answer names sources as the client does."""
        body = self.json_body()
        _check_fields(body, {"folder", "patterns", "delete_missing", *_CHUNKING}, ("folder",))
        delete_missing = body.get("delete_missing", True)
        if not isinstance(delete_missing, bool):
            raise InvalidInput(
                _t("delete_missing must be true or false"), _t('e.g. {{"delete_missing": false}}')
            )
        folder = self.resolve(body["folder"], what="folder")[0]
        summary = await self.call(
            self.kb.sync_folder,
            self.caller,
            project,
            name,
            folder,
            patterns=body.get("patterns"),
            delete_missing=delete_missing,
            options={key: body[key] for key in _CHUNKING if body.get(key) is not None},
            boundary=self.roots,
        )
        named = {
            key: [self.source_name(s) for s in summary[key]]
            for key in ("added", "replaced", "unchanged", "removed")
        }
        failed = self.with_sources(summary["failed"])
        self.reply({**summary, **named, "failed": failed, "folder": self.client_path(str(folder))})


class ChatHandler(KnowledgeBaseHandler, EventStreamHandler):
    @web.authenticated
    async def post(self, project: str, name: str) -> None:
        """An answer from the knowledge base's passages with numbered citations
        (``cube_lab.kb.rag.answer``); with ``"stream": true`` as server-sent events
        (``rag.answer_events``: the citations, the answer's pieces, then the whole answer)."""
        from ..kb import rag

        body = self.json_body()
        locale = negotiate(self.request.headers.get("Accept-Language"))
        args = (self.kb, self.workspace.serving, self.caller, project, name, body)
        if body.get("stream") is not True:
            result = await self.call(rag.answer, *args, name_source=self.source_name)
            self.reply(localize(result, locale))
            return
        events = rag.answer_events(*args, name_source=self.source_name)
        # a bad request fails before the first event: the plain JSON 4xx
        event = await self.call(next, events, None)
        try:
            while event is not None:
                await self.emit(localize(event, locale))
                event = await self.call(next, events, None)
        except ClientGone:
            await self.call(events.close)  # the model's stream is closed with it
            return
        except CubeError as exc:  # after the first event there is no status to change
            await self.emit({"event": "error", **localize(exc.to_json(), locale)})
        if not self._finished:
            self.finish()


__all__ = [
    "ChatHandler",
    "EvaluateHandler",
    "IngestHandler",
    "IngestsHandler",
    "KnowledgeBaseOneHandler",
    "KnowledgeBasesHandler",
    "PreviewHandler",
    "SearchHandler",
    "SourcesHandler",
    "SyncHandler",
]
