"""Knowledge bases in projects: create, add files, remove sources, list, query, evaluate.

Each knowledge base is one folder, ``<data_dir>/kb/<project id>/<name>/``: ``kb.json`` (its
owner, chunking and embedding model) and its index (``index.KnowledgeIndex``). Nothing is
added to the main database: a knowledge base belongs to the project whose id names its
folder, and every call resolves the project through ``ProjectService.resolve``, so a caller
who is not a member gets the same ``NotFound`` as for a knowledge base that does not exist.

Adding files: each file is parsed and chunked on its own (a file that fails is reported with
its error, the others go on); a file whose content hash is unchanged is skipped; a changed
file's old chunks are replaced. ``progress`` (if given) is called after each file. With a
``boundary`` (the caller's root, from REST) folders are walked and files read by the one
containment rule (``cube_lab.containment``): a link leading out of it is never read.

Ingests (``start_ingest``): an add that runs in a thread of this process and writes its
progress (files done of total, chunks, each file's outcome) to
``<kb folder>/ingests/<id>.json`` after every file, so any caller (the REST API, the CLI, the
SDK) polls ``ingest(...)``; an ingest whose process is gone reads as ``interrupted``.

Syncing a folder (``sync_folder``): the folder's files added by the same code (unchanged ones do
nothing), and the sources under it whose files are gone removed; what the ``kb-ingest``
pipeline node (``nodekind.py``), ``cube-lab kb sync`` and ``POST .../sync`` run. Uploaded
documents (name + text) are kept in ``<kb folder>/uploads/`` and named ``upload:<name>``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import fnmatch
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from .. import containment
from ..config import Settings
from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..identity import Caller, check_name
from ..locale.messages import _t
from ..projects import ProjectService
from ..store import Store
from ..store.models import Project
from . import chunk as chunking
from . import embed as embedding
from . import evaluate as evaluation
from . import rerank as reranking
from .engine import ENGINES, IndexEngine
from .index import MODES, KnowledgeIndex, NewChunk
from .parse import SUFFIXES, ParseError, parse_bytes, parse_file, supported

UPLOAD = "upload:"  # the source name of an uploaded document: upload:<name>
MAX_UPLOAD_BYTES = 32 * 1024 * 1024  # all documents of one request together
KEEP_INGESTS = 20  # records kept per knowledge base (the newest)
ACTIVE = ("queued", "running")
_INGEST_ID = re.compile(r"[0-9a-f]{12}")
_HOST = socket.gethostname()
WRITE_LOCK = ".write.lock"  # held by the process that writes the index
GENERATION = ".generation"  # changed after each write: other processes reopen the index


def search_mode(mode: object) -> str:
    """``vector``, ``keyword`` (also spelled ``bm25``) or ``hybrid``; else InvalidInput."""
    if mode == "bm25":
        return "keyword"
    if mode not in MODES:
        raise InvalidInput(
            _t("unknown mode {mode!r}", mode=mode),
            _t("Use one of {value} ('bm25' means 'keyword').", value=list(MODES)),
        )
    return str(mode)


def check_k(k: object) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 100:
        raise InvalidInput(_t("k must be an integer from 1 to 100, not {k!r}", k=k), _t("e.g. k=5"))
    return k


def _unsupported(path: Path) -> InvalidInput:
    return InvalidInput(
        _t("{name}: unsupported file type {value}", name=path.name, value=path.suffix or "(none)"),
        _t(
            (
                "Supported: {value}; convert the file to one of them (e.g. save a"
                " presentation or spreadsheet as PDF or CSV)."
            ),
            value=", ".join(sorted(SUFFIXES)),
        ),
    )


FILTERS = ("source", "page", "heading", "meta")
_FILTER_EXAMPLE = '{"source": "docs/*.pdf", "page": {"from": 2, "to": 5}, "heading": "Setup*"}'


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_filters(raw: object) -> dict[str, Any] | None:
    """Metadata filters, all optional, all of them must hold: ``source`` (a glob or a list of
    globs on the source as the caller names it), ``page`` (a number, a list of numbers or
    ``{"from", "to"}``), ``heading`` (a glob on the heading path "A > B") and ``meta``
    (``{key: value}`` equal in the chunk's metadata, e.g. a CSV column)."""
    if raw is None or raw == {}:
        return None
    if not isinstance(raw, dict):
        raise InvalidInput(
            _t("filters must be an object"), _t("e.g. {value}", value=_FILTER_EXAMPLE)
        )
    unknown = sorted(set(raw) - set(FILTERS))
    if unknown:
        raise InvalidInput(
            _t("unknown filters {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(FILTERS)),
        )
    out: dict[str, Any] = {}
    source = raw.get("source")
    if source is not None:
        globs = [source] if isinstance(source, str) else source
        if (
            not isinstance(globs, list)
            or not globs
            or not all(isinstance(g, str) and g for g in globs)
        ):
            raise InvalidInput(
                _t("filters.source must be a glob or a list of globs"),
                _t('e.g. "docs/*.pdf" or ["*.md", "upload:*"]'),
            )
        out["source"] = globs
    page = raw.get("page")
    if page is not None:
        if _is_int(page):
            out["pages"] = [page]
        elif isinstance(page, list) and page and all(_is_int(p) for p in page):
            out["pages"] = list(page)
        elif (
            isinstance(page, dict)
            and page
            and set(page) <= {"from", "to"}
            and all(_is_int(v) for v in page.values())
        ):
            out["pages"] = (page.get("from"), page.get("to"))
        else:
            raise InvalidInput(
                _t("filters.page must be a page number, a list of them or {{from, to}}"),
                _t('e.g. 3, [1, 2] or {{"from": 2, "to": 5}}'),
            )
    heading = raw.get("heading")
    if heading is not None:
        if not isinstance(heading, str) or not heading:
            raise InvalidInput(
                _t("filters.heading must be a glob"), _t('e.g. "Install*" or "* > Refunds"')
            )
        out["heading"] = heading
    meta = raw.get("meta")
    if meta is not None:
        if not isinstance(meta, dict) or not all(
            isinstance(k, str)
            and k
            and '"' not in k
            and isinstance(v, str | int | float)
            and not isinstance(v, bool)
            for k, v in meta.items()
        ):
            raise InvalidInput(
                _t("filters.meta must map keys to a text or a number"),
                _t('e.g. {{"topic": "faq"}} (a CSV column of the row)'),
            )
        out["meta"] = dict(meta)
    return out


@dataclass(frozen=True)
class Work:
    """One file to add: where to read it, the source name it gets, what it may not leave."""

    path: Path
    source: str
    boundary: Path | None = None


@dataclass(frozen=True)
class KnowledgeBaseView:
    project: str
    name: str
    owner: str
    created_at: str
    chunking: str
    chunk_size: int
    overlap: int
    model: str
    sources: int
    chunks: int
    engine: str = "embedded"  # the index engine: embedded | milvus
    rerank: dict[str, Any] | None = None  # the default reranker: {model, top_n}


@dataclass(frozen=True)
class FileResult:
    source: str
    status: str  # added | replaced | unchanged | failed
    chunks: int = 0
    error: str = ""
    detail: str = ""


@dataclass(frozen=True)
class AddReport:
    files: list[FileResult] = field(default_factory=list)

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]


ProgressFn = Callable[[int, int, FileResult], None]
Bounds = Path | Sequence[Path] | None  # the folders what is added may not leave


class KnowledgeBaseService:
    def __init__(
        self,
        store: Store,
        projects: ProjectService,
        settings: Settings,
        embedder: Callable[[str], embedding.Embedder] = embedding.get_embedder,
        registry: Callable[[], Any] | None = None,
    ) -> None:
        self.store = store
        self.projects = projects
        self.settings = settings
        self.embedder = embedder
        self._registry_of = registry
        self._own_registry: Any = None
        self._open: dict[Path, IndexEngine] = {}
        self._locks: dict[Path, threading.Lock] = {}
        self._seen: dict[Path, str] = {}  # the generation each open index was read at
        self._guard = threading.Lock()

    @property
    def root(self) -> Path:
        return self.settings.data_dir / "kb"

    @property
    def registry(self) -> Any:
        """The model registry rerankers come from (the workspace's, or one on this store)."""
        if self._registry_of is not None:
            return self._registry_of()
        with self._guard:
            if self._own_registry is None:
                from ..registry.artifacts import ArtifactStore
                from ..registry.service import RegistryService

                artifacts = ArtifactStore(self.settings.artifacts_dir)
                self._own_registry = RegistryService(self.store, self.projects, artifacts)
            return self._own_registry

    # -- where a knowledge base is -------------------------------------------------------

    def _project(self, caller: Caller, project: str | None) -> tuple[int, str]:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            row = self.projects.resolve(s, caller, project)
            return row.id, row.name

    def _folder(self, caller: Caller, project: str | None, name: str) -> tuple[Path, str]:
        check_name(name, "knowledge base name")
        project_id, project_name = self._project(caller, project)
        folder = self.root / str(project_id) / name
        if not (folder / "kb.json").is_file():
            raise NotFound(
                _t(
                    "knowledge base {name!r} not found in project {project_name!r}",
                    name=name,
                    project_name=project_name,
                ),
                _t("GET /cube/api/v1/kb (cube-lab kb list) lists the knowledge bases you can see."),
            )
        return folder, project_name

    def _lock(self, folder: Path) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(folder, threading.Lock())

    @contextlib.contextmanager
    def _writing(self, folder: Path) -> Iterator[None]:
        """One writer at a time per knowledge base: this process's threads (``_lock``) and
        other processes (a pipeline's kb-ingest node, the CLI) by a file lock; afterwards the
        generation file changes, so other processes reopen their index (``_index``)."""
        with self._lock(folder), open(folder / WRITE_LOCK, "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            try:
                yield
            finally:
                token = secrets.token_hex(8)
                tmp = folder / f".{GENERATION}.{os.getpid()}.tmp"
                try:
                    tmp.write_text(token)
                    tmp.replace(folder / GENERATION)
                    with self._guard:
                        self._seen[folder] = token
                except FileNotFoundError:  # deleted meanwhile
                    pass

    @staticmethod
    def _generation(folder: Path) -> str:
        try:
            return (folder / GENERATION).read_text()
        except OSError:
            return ""

    def _index(self, folder: Path, config: dict[str, Any]) -> IndexEngine:
        with self._guard:
            index = self._open.get(folder)
            current = self._generation(folder)
            if index is not None and self._seen.get(folder, "") != current:
                index.close()  # another process wrote it since: read it again
                index = None
            if index is None:
                index = self._open_engine(folder, config)
                self._open[folder] = index
                self._seen[folder] = current
            return index

    @staticmethod
    def _open_engine(folder: Path, config: dict[str, Any]) -> IndexEngine:
        """The knowledge base's engine (``engine.py``): ``embedded`` unless its config says
        ``milvus``."""
        if config.get("engine", "embedded") == "milvus":
            from .milvus_index import MilvusIndex

            return MilvusIndex(folder, int(config["dim"]), config.get("milvus") or {})
        return KnowledgeIndex(folder, int(config["dim"]))

    @staticmethod
    def _check_engine(engine: object, milvus: object) -> dict[str, Any]:
        if engine not in ENGINES:
            raise InvalidInput(
                _t("unknown index engine {engine!r}", engine=engine),
                _t("Use one of {value}.", value=list(ENGINES)),
            )
        if engine == "embedded":
            if milvus is not None:
                raise InvalidInput(
                    _t("milvus settings need engine 'milvus'"), _t('e.g. engine="milvus"')
                )
            return {}
        from .milvus_index import check_config

        return {"engine": "milvus", "milvus": check_config(milvus)}

    @staticmethod
    def _config(folder: Path) -> dict[str, Any]:
        return json.loads((folder / "kb.json").read_text())

    def _view(self, folder: Path, project: str) -> KnowledgeBaseView:
        config = self._config(folder)
        index = self._index(folder, config)
        return KnowledgeBaseView(
            project=project,
            name=config["name"],
            owner=config["owner"],
            created_at=config["created_at"],
            chunking=config["chunking"],
            chunk_size=config["chunk_size"],
            overlap=config["overlap"],
            model=config["model"],
            sources=len(index.sources()),
            chunks=len(index),
            engine=str(config.get("engine") or "embedded"),
            rerank=config.get("rerank"),
        )

    # -- create / list / delete ---------------------------------------------------------

    def create(
        self,
        caller: Caller,
        name: object,
        *,
        project: str | None = None,
        chunking_: object = "tokens",
        chunk_size: object = 200,
        overlap: object = 40,
        model: object = embedding.DEFAULT_MODEL,
        engine: object = "embedded",
        milvus: object = None,
        rerank: object = None,
    ) -> KnowledgeBaseView:
        """A new knowledge base; ``rerank`` (``rerank.check_rerank``) is the reranker its
        retrievals use when a request names none."""
        check_name(name, "knowledge base name")
        assert isinstance(name, str)
        engine_config = self._check_engine(engine, milvus)
        default_rerank = reranking.check_rerank(rerank)
        if chunking_ not in chunking.STRATEGIES:
            raise InvalidInput(
                _t("unknown chunking {chunking_!r}", chunking_=chunking_),
                _t("Use one of {value}.", value=list(chunking.STRATEGIES)),
            )
        try:
            chunking.check_sizes(chunk_size, overlap)  # type: ignore[arg-type]
        except ValueError as exc:
            raise InvalidInput(str(exc), _t("e.g. chunk_size=200, overlap=40")) from exc
        if model not in embedding.MODELS:
            raise InvalidInput(
                _t("unknown embedding model {model!r}", model=model),
                _t("Use one of {value}.", value=sorted(embedding.MODELS)),
            )
        project_id, project_name = self._project(caller, project)
        if default_rerank is not None:  # an unknown or unfit model fails now, not per query
            reranking.resolve(self.registry, caller, project_name, default_rerank)
        folder = self.root / str(project_id) / name
        config = {
            "name": name,
            "owner": caller.username,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "chunking": chunking_,
            "chunk_size": chunk_size,
            "overlap": overlap,
            "model": model,
            "dim": embedding.MODELS[str(model)],
            **engine_config,
            **({"rerank": default_rerank.to_json()} if default_rerank else {}),
        }
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir()
        except FileExistsError as exc:
            raise Conflict(
                _t(
                    "knowledge base {name!r} already exists in project {project_name!r}",
                    name=name,
                    project_name=project_name,
                ),
                _t("Choose another name, or add files to the existing one."),
            ) from exc
        tmp = folder / "kb.json.tmp"
        tmp.write_text(json.dumps(config, indent=1))
        tmp.replace(folder / "kb.json")
        return self._view(folder, project_name)

    def list(self, caller: Caller, project: str | None = None) -> list[KnowledgeBaseView]:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            ids = self.projects.scope_ids(s, caller, project)
            projects = list(s.execute(select(Project.id, Project.name).where(Project.id.in_(ids))))
        out = []
        for project_id, project_name in sorted(projects, key=lambda p: p[1]):
            base = self.root / str(project_id)
            if base.is_dir():
                for folder in sorted(base.iterdir()):
                    if (folder / "kb.json").is_file():
                        out.append(self._view(folder, project_name))
        return out

    def get(self, caller: Caller, project: str | None, name: str) -> KnowledgeBaseView:
        folder, project_name = self._folder(caller, project, name)
        return self._view(folder, project_name)

    def delete(self, caller: Caller, project: str | None, name: str) -> None:
        folder, project_name = self._folder(caller, project, name)
        config = self._config(folder)
        if config["owner"] != caller.username:
            with self.store.read() as s:
                self.projects.resolve(s, caller, project_name, owner=True)
        with self._lock(folder):
            with self._guard:
                index = self._open.pop(folder, None)
            if index is None and config.get("engine") == "milvus":
                try:  # a collection on a Milvus server outlives the folder: drop it
                    index = self._open_engine(folder, config)
                except InvalidInput:
                    index = None
            if index is not None:
                index.drop()
            shutil.rmtree(folder, ignore_errors=True)

    # -- sources ------------------------------------------------------------------------

    def sources(self, caller: Caller, project: str | None, name: str) -> list[dict[str, Any]]:
        folder, _ = self._folder(caller, project, name)
        return self._index(folder, self._config(folder)).sources()

    def add(
        self,
        caller: Caller,
        project: str | None,
        name: str,
        paths: Sequence[Path],
        progress: ProgressFn | None = None,
        *,
        boundary: Bounds = None,
    ) -> AddReport:
        """Add files and folders (recursively, supported suffixes, hidden ones skipped);
        with ``boundary`` nothing outside it is read (links leading out are skipped)."""
        folder, _ = self._folder(caller, project, name)
        return self._run(folder, self._expand(paths, boundary), progress)

    def _run(
        self,
        folder: Path,
        work: Sequence[Work],
        progress: ProgressFn | None,
        started: Callable[[], None] | None = None,
        chunking_options: dict[str, Any] | None = None,
    ) -> AddReport:
        config = {**self._config(folder), **(chunking_options or {})}
        results = []
        with self._writing(folder):  # one add at a time per knowledge base; the next waits
            if started is not None:
                started()
            index = self._index(folder, config)
            for n, item in enumerate(work, start=1):
                result = self._add_one(index, config, item)
                results.append(result)
                if progress is not None:
                    progress(n, len(work), result)
            index.flush()
        return AddReport(results)

    @staticmethod
    def _expand(paths: Sequence[Path], boundaries: Bounds = None) -> list[Work]:
        if not paths:
            raise InvalidInput(_t("no files given"), _t("Give one or more files or folders."))
        roots = [boundaries] if isinstance(boundaries, Path) else list(boundaries or ())
        files: list[Work] = []
        for raw in paths:
            path = Path(raw).expanduser().resolve()
            boundary = next((r for r in roots if containment.is_inside(path, r)), None)
            if roots and boundary is None:
                raise InvalidInput(
                    _t("{raw} is outside {value}", raw=raw, value=roots[0]),
                    _t("Give files or folders under your root."),
                )
            if path.is_dir():
                if boundary is None:
                    found = sorted(
                        p
                        for p in path.rglob("*")
                        if p.is_file()
                        and not any(part.startswith(".") for part in p.relative_to(path).parts)
                    )
                else:
                    found = [p for _, p in containment.walk(path, boundary, hidden=False)]
                files += [Work(p, str(p), boundary) for p in found if supported(p)]
            elif path.is_file():
                if not supported(path):
                    raise _unsupported(path)
                files.append(Work(path, str(path), boundary))
            else:
                raise InvalidInput(
                    _t("{raw} does not exist", raw=raw), _t("Give existing files or folders.")
                )
        return files

    def _add_one(self, index: IndexEngine, config: dict[str, Any], item: Work) -> FileResult:
        path, source = item.path, item.source
        try:
            if item.boundary is not None:
                data = containment.read_inside(path, item.boundary)
            else:
                data = path.read_bytes()
        except containment.PathRefused as exc:
            return FileResult(source, "failed", error=exc.error, detail=exc.detail)
        except OSError as exc:
            return FileResult(source, "failed", error=f"cannot read {path.name}: {exc}")
        digest = hashlib.sha256(data).hexdigest()
        old = index.source_hash(source)
        if old == digest:
            return FileResult(source, "unchanged")
        try:
            if supported(path):
                doc = parse_bytes(data, path.suffix.lower(), source)
            else:
                doc = parse_file(path, source)  # says why the type is not read
            chunks = chunking.chunk_document(
                doc, config["chunking"], config["chunk_size"], config["overlap"]
            )
            vectors = self.embedder(config["model"]).embed([c.text for c in chunks])
        except ParseError as exc:
            return FileResult(source, "failed", error=exc.error, detail=exc.detail)
        if old is not None:
            index.remove_source(source)
        index.add(
            [NewChunk(c.text, source, c.position, c.heading, c.meta) for c in chunks], vectors
        )
        index.set_source(
            source, digest, doc.kind, len(chunks), datetime.now(UTC).isoformat(timespec="seconds")
        )
        return FileResult(source, "replaced" if old else "added", len(chunks))

    def remove(self, caller: Caller, project: str | None, name: str, source: str) -> int:
        """Remove a source and its chunks; returns how many chunks went."""
        folder, _ = self._folder(caller, project, name)
        with self._writing(folder):
            index = self._index(folder, self._config(folder))
            known = {s["source"] for s in index.sources()}
            wanted = source if source in known else str(Path(source).expanduser().resolve())
            if wanted not in known:
                raise NotFound(
                    _t(
                        "knowledge base {name!r} has no source {source!r}", name=name, source=source
                    ),
                    _t("GET .../sources (cube-lab kb show NAME) lists them."),
                )
            removed = index.remove_source(wanted)
            index.flush()
            if wanted.startswith(UPLOAD):
                (folder / "uploads" / wanted[len(UPLOAD) :]).unlink(missing_ok=True)
            return removed

    def sync_folder(
        self,
        caller: Caller,
        project: str | None,
        name: str,
        folder: Path,
        *,
        patterns: Sequence[str] | None = None,
        delete_missing: bool = True,
        options: dict[str, Any] | None = None,
        boundary: Bounds = None,
        progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        """Bring the knowledge base in line with a folder: its supported files (recursively,
        hidden ones skipped; with ``patterns`` only those whose path relative to the folder or
        whose name matches one of the globs) are added by ``add``'s code, so an unchanged
        file (same content hash) does nothing and a changed one has its chunks replaced; with
        ``delete_missing`` the sources under the folder that the walk no longer finds (the
        file is gone, or no longer matches the patterns) are removed with their chunks.
        ``options``: chunking for the files added now (as ``start_ingest``'s). With
        ``boundary`` the folder must lie inside it and no link leads out of it.

        Returns ``{project, kb, folder, added, replaced, unchanged, removed, failed:
        [{source, error, detail}], chunks_added, chunks_removed, chunks}`` (sources as stored,
        absolute; ``chunks``: the knowledge base's total afterwards)."""
        from .preview import check_options

        kb_folder, project_name = self._folder(caller, project, name)
        chosen = check_options(self._config(kb_folder), options) if options else None
        globs = self._check_patterns(patterns)
        top = Path(folder).expanduser().resolve()
        roots = [boundary] if isinstance(boundary, Path) else list(boundary or ())
        if roots and not any(containment.is_inside(top, r) for r in roots):
            raise InvalidInput(
                _t("{raw} is outside {value}", raw=folder, value=roots[0]),
                _t("Give a folder under your root."),
            )
        if not top.is_dir():
            raise InvalidInput(
                _t("{raw} is not a folder", raw=folder), _t("Give an existing folder to sync.")
            )
        work = [
            w
            for w in self._expand([top], boundary)
            if not globs or self._matches(Path(w.source), top, globs)
        ]
        report = self._run(kb_folder, work, progress, None, chosen)
        found = {w.source for w in work}
        removed: list[str] = []
        chunks_removed = 0
        with self._writing(kb_folder):
            index = self._index(kb_folder, self._config(kb_folder))
            if delete_missing:
                for known in sorted(s["source"] for s in index.sources()):
                    path = Path(known)
                    if (
                        known in found
                        or known.startswith(UPLOAD)
                        or not path.is_relative_to(top)
                        or (globs and not self._matches(path, top, globs))
                    ):
                        continue
                    chunks_removed += index.remove_source(known)
                    removed.append(known)
                index.flush()
            total = len(index)

        def having(status: str) -> list[str]:
            return [f.source for f in report.files if f.status == status]

        return {
            "project": project_name,
            "kb": name,
            "folder": str(top),
            "added": having("added"),
            "replaced": having("replaced"),
            "unchanged": having("unchanged"),
            "removed": removed,
            "failed": [
                {"source": f.source, "error": f.error, "detail": f.detail} for f in report.failed
            ],
            "chunks_added": sum(f.chunks for f in report.files),
            "chunks_removed": chunks_removed,
            "chunks": total,
        }

    @staticmethod
    def _check_patterns(patterns: object) -> list[str]:
        if patterns is None or patterns == "":
            return []
        globs = [patterns] if isinstance(patterns, str) else patterns
        if not isinstance(globs, list | tuple) or not all(
            isinstance(g, str) and g.strip() for g in globs
        ):
            raise InvalidInput(
                _t("patterns must be a glob or a list of globs"), _t('e.g. ["*.md", "faq/*.txt"]')
            )
        return [g.strip() for g in globs]

    @staticmethod
    def _matches(path: Path, top: Path, globs: Sequence[str]) -> bool:
        """Whether a file under ``top`` matches a glob by its relative path or its name."""
        rel = path.relative_to(top).as_posix() if path.is_relative_to(top) else path.as_posix()
        return any(fnmatch.fnmatchcase(rel, g) or fnmatch.fnmatchcase(path.name, g) for g in globs)

    # -- retrieval ----------------------------------------------------------------------

    def query(
        self,
        caller: Caller,
        project: str | None,
        name: str,
        text: object,
        *,
        k: object = 5,
        mode: object = "hybrid",
        weights: tuple[float, float] = (1.0, 1.0),
        filters: object = None,
        name_source: Callable[[str], str] | None = None,
        rerank: object = None,
    ) -> list[dict[str, Any]]:
        """The ``k`` best chunks; ``filters`` (``check_filters``) keep the search to the
        chunks that match them, ``source`` globs matched against ``name_source(source)``
        (how the caller names sources) or the stored name. ``rerank``
        (``rerank.check_rerank``; None: the knowledge base's default, False: none) rescores
        the first hits with a registered cross-encoder; each hit then has ``rerank``."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(_t("query text is required"), _t('e.g. {{"query": "how do I ..."}}'))
        mode = search_mode(mode)
        k = check_k(k)
        checked = check_filters(filters)
        asked = reranking.check_rerank(rerank)
        folder, project_name = self._folder(caller, project, name)
        config = self._config(folder)
        index = self._index(folder, config)
        spec = self._rerank_spec(config, rerank, asked)
        allowed = self._allowed(index, checked, name_source)
        vector = None
        if mode != "keyword":
            vector = self.embedder(config["model"]).embed([text])[0]
        return self._search(
            caller, project_name, index, spec, mode, k, text, vector, weights, allowed
        )

    @staticmethod
    def _rerank_spec(
        config: dict[str, Any], raw: object, asked: reranking.RerankSpec | None
    ) -> reranking.RerankSpec | None:
        """The reranker of one retrieval: the one asked for, none (``False``), or (None) the
        knowledge base's default."""
        if raw is None and config.get("rerank"):
            return reranking.check_rerank(config["rerank"])
        return asked

    def _search(
        self,
        caller: Caller,
        project_name: str,
        index: IndexEngine,
        spec: reranking.RerankSpec | None,
        mode: str,
        k: int,
        text: str,
        vector: Any,
        weights: tuple[float, float] = (1.0, 1.0),
        allowed: Any = None,
    ) -> list[dict[str, Any]]:
        """One search as hit dicts; with ``spec`` its first ``spec.depth(k)`` hits are
        reranked by the cross-encoder, then the best ``k`` kept."""
        if spec is None:
            hits = index.search(mode, k, text=text, vector=vector, weights=weights, allowed=allowed)
            return [asdict(h) for h in hits]
        model = reranking.resolve(self.registry, caller, project_name, spec)
        depth = spec.depth(k)
        found = index.search(
            mode, max(k, depth), text=text, vector=vector, weights=weights, allowed=allowed
        )
        return reranking.rerank([asdict(h) for h in found], text, model.score, depth)[:k]

    @staticmethod
    def _allowed(
        index: IndexEngine,
        filters: dict[str, Any] | None,
        name_source: Callable[[str], str] | None,
    ) -> Any:
        if filters is None:
            return None
        sources = None
        if "source" in filters:
            named = name_source or (lambda s: s)
            sources = [
                s["source"]
                for s in index.sources()
                if any(
                    fnmatch.fnmatchcase(named(s["source"]), g)
                    or fnmatch.fnmatchcase(s["source"], g)
                    for g in filters["source"]
                )
            ]
        return index.matching(
            sources, filters.get("pages"), filters.get("heading"), filters.get("meta")
        )

    def retrieve(
        self,
        caller: Caller,
        project: str | None,
        name: str,
        text: str,
        *,
        k: int,
        mode: str,
        filters: dict[str, Any] | None = None,
        name_source: Callable[[str], str] | None = None,
        rerank: object = None,
    ) -> list[dict[str, Any]]:
        """``query``'s hits, each with ``cosine``: the exact cosine of the chunk with the
        query (``None`` in keyword mode), whichever half of a hybrid search found it;
        ``filters`` as checked by ``check_filters``; ``rerank`` as ``query``'s."""
        asked = reranking.check_rerank(rerank)
        folder, project_name = self._folder(caller, project, name)
        config = self._config(folder)
        index = self._index(folder, config)
        spec = self._rerank_spec(config, rerank, asked)
        allowed = self._allowed(index, filters, name_source)
        vector = None
        if mode != "keyword":
            vector = self.embedder(config["model"]).embed([text])[0]
        hits = self._search(
            caller, project_name, index, spec, mode, k, text, vector, allowed=allowed
        )
        cosines = index.cosines([h["id"] for h in hits], vector) if vector is not None else []
        return [
            {**h, "cosine": cosines[n] if vector is not None else None} for n, h in enumerate(hits)
        ]

    def evaluate(
        self,
        caller: Caller,
        project: str | None,
        name: str,
        questions: Sequence[dict[str, Any]],
        *,
        k: object = 10,
        mode: object = "hybrid",
        rerank: object = None,
    ) -> evaluation.Scores:
        """recall@k, MRR and nDCG@10 of ``questions``; ``rerank`` as ``query``'s (so two
        evaluations, with and without a reranker, compare side by side)."""
        mode = search_mode(mode)
        k = check_k(k)
        asked = reranking.check_rerank(rerank)
        if not isinstance(questions, Sequence) or isinstance(questions, str):
            raise InvalidInput(
                _t("questions must be a list"), _t('e.g. [{{"question": ..., "source": ...}}]')
            )
        if not questions:
            raise InvalidInput(
                _t("no questions given"), _t('e.g. [{{"question": ..., "source": ...}}]')
            )
        try:
            parsed = [evaluation.Question.of(q) for q in questions]
        except (ValueError, TypeError, AttributeError) as exc:
            raise InvalidInput(
                _t("bad question set: {exc}", exc=exc),
                _t("Each item: question + source(s) or chunk(s)."),
            ) from exc
        folder, project_name = self._folder(caller, project, name)
        config = self._config(folder)
        index = self._index(folder, config)
        spec = self._rerank_spec(config, rerank, asked)
        vectors = None
        if mode != "keyword":
            vectors = self.embedder(config["model"]).embed([q.question for q in parsed])
        rankings = []
        for n, q in enumerate(parsed):
            vec = vectors[n] if vectors is not None else None
            depth = max(k, 10)
            hits = self._search(caller, project_name, index, spec, mode, depth, q.question, vec)
            rankings.append([evaluation.Retrieved(h["id"], h["source"]) for h in hits])
        scores = evaluation.score(parsed, rankings, k)
        return replace(scores, rerank=spec.to_json() if spec else None)

    # -- ingests: an add in a thread, its progress on disk ------------------------------------

    def start_ingest(
        self,
        caller: Caller,
        project: str | None,
        name: str,
        paths: Sequence[Path] = (),
        documents: Sequence[object] = (),
        *,
        boundary: Bounds = None,
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Check what to add now (a bad path or type is an error here, before anything
        starts), then add it in a thread; the ingest record (``ingest``) shows the progress.
        ``documents``: ``{"name": "notes.md", "content": "..."}`` items (or ``content_base64``
        for a binary file such as a PDF or DOCX) kept as uploads. ``options``: any of
        ``chunking``, ``chunk_size``, ``overlap`` for this ingest's files instead of the
        knowledge base's (what a preview showed; checked as ``preview.check_options`` does)."""
        from .preview import check_options

        folder, project_name = self._folder(caller, project, name)
        chosen = check_options(self._config(folder), options) if options else None
        if not paths and not documents:
            raise InvalidInput(
                _t("nothing to add"),
                _t("Give paths (files or folders) or documents (name + content)."),
            )
        work = self._expand(paths, boundary) if paths else []
        uploads = self._check_uploads(documents)
        ingest_id = secrets.token_hex(6)
        record: dict[str, Any] = {
            "id": ingest_id,
            "project": project_name,
            "kb": name,
            "status": "queued",
            "files_total": len(work) + len(uploads),
            "files_done": 0,
            "chunks": 0,
            "failed": 0,
            "files": [],
            "error": None,
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "finished_at": None,
            "_process": {"host": _HOST, "pid": os.getpid()},
        }
        if uploads:
            kept = folder / "uploads"
            kept.mkdir(exist_ok=True)
            for upload_name, data in uploads:
                tmp = kept / f".{upload_name}.tmp"
                tmp.write_bytes(data)
                tmp.replace(kept / upload_name)
                work.append(Work(kept / upload_name, UPLOAD + upload_name, kept))
        records = folder / "ingests"
        records.mkdir(exist_ok=True)
        self._write_record(folder, record)
        self._prune(records)

        def progress(done: int, total: int, result: FileResult) -> None:
            record["status"] = "running"
            record["files_done"] = done
            record["chunks"] += result.chunks
            record["failed"] += result.status == "failed"
            record["files"].append(asdict(result))
            self._write_record(folder, record)

        def begin() -> None:
            record["status"] = "running"  # "queued" while another add of it runs
            self._write_record(folder, record)

        def run() -> None:
            try:
                self._run(folder, work, progress, begin, chosen)
                record["status"] = "succeeded"
            except Exception as exc:  # the record says it; the server goes on
                record["status"] = "failed"
                record["error"] = f"{type(exc).__name__}: {exc}"
            record["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
            if (folder / "kb.json").is_file():  # not deleted meanwhile
                self._write_record(folder, record)

        first = self._public(json.loads(json.dumps(record)))  # before the thread changes it
        threading.Thread(target=run, name=f"kb-ingest-{ingest_id}", daemon=True).start()
        return first

    @staticmethod
    def _check_uploads(documents: Sequence[object]) -> list[tuple[str, bytes]]:
        if not isinstance(documents, Sequence) or isinstance(documents, str):
            raise InvalidInput(
                _t("documents must be a list"), _t('[{{"name": "a.md", "content": "..."}}]')
            )
        out: list[tuple[str, bytes]] = []
        total = 0
        for n, doc in enumerate(documents):
            if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
                raise InvalidInput(
                    _t("documents[{n}] needs a name and a content", n=n),
                    _t('{{"name": "notes.md", "content": "# Notes ..."}}'),
                )
            upload_name, content = doc["name"], doc.get("content")
            if (
                "/" in upload_name
                or "\\" in upload_name
                or upload_name.startswith(".")
                or not upload_name.strip()
                or len(upload_name.encode()) > 200
            ):
                raise InvalidInput(
                    _t(
                        "documents[{n}].name {upload_name!r} is not a plain file name",
                        n=n,
                        upload_name=upload_name,
                    ),
                    _t("Give a name like notes.md: no folders, not starting with '.'."),
                )
            if not supported(Path(upload_name)):
                raise _unsupported(Path(upload_name))
            encoded = doc.get("content_base64")
            if encoded is not None and content is None:
                if not isinstance(encoded, str):
                    raise InvalidInput(
                        _t("documents[{n}].content_base64 must be a string", n=n),
                        _t("Send the file's bytes base64-encoded (e.g. a PDF or DOCX)."),
                    )
                try:
                    data = base64.b64decode(encoded, validate=True)
                except (binascii.Error, ValueError) as exc:
                    raise InvalidInput(
                        _t("documents[{n}].content_base64 is not valid base64", n=n), str(exc)
                    ) from exc
            elif isinstance(content, str):
                data = content.encode()
            else:
                raise InvalidInput(
                    _t("documents[{n}].content must be text", n=n),
                    _t(
                        "Send the file's text as a string, or its bytes (a PDF, a DOCX) "
                        "base64-encoded as content_base64."
                    ),
                )
            total += len(data)
            if total > MAX_UPLOAD_BYTES:
                raise InvalidInput(
                    _t(
                        "the documents are larger than {value} MiB together",
                        value=MAX_UPLOAD_BYTES // 2**20,
                    ),
                    _t(
                        "Send them in several requests, or put the files under your root "
                        "and add their paths."
                    ),
                )
            out.append((upload_name, data))
        return out

    @staticmethod
    def _write_record(folder: Path, record: dict[str, Any]) -> None:
        target = folder / "ingests" / f"{record['id']}.json"
        tmp = target.with_name(f".{record['id']}.{threading.get_ident()}.tmp")
        try:
            tmp.write_text(json.dumps(record))
            tmp.replace(target)
        except FileNotFoundError:  # the knowledge base was deleted meanwhile
            pass

    @staticmethod
    def _prune(records: Path) -> None:
        found = sorted(records.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in found[KEEP_INGESTS:]:
            try:
                if json.loads(old.read_text()).get("status") not in ACTIVE:
                    old.unlink()
            except (OSError, ValueError):
                continue

    @staticmethod
    def _public(record: dict[str, Any]) -> dict[str, Any]:
        """The record as callers see it: ``interrupted`` when its process is gone."""
        out = {k: v for k, v in record.items() if not k.startswith("_")}
        owner = record.get("_process") or {}
        if out["status"] in ACTIVE and owner.get("host") == _HOST:
            try:
                os.kill(int(owner.get("pid", 0)), 0)
            except ProcessLookupError:
                out["status"] = "interrupted"
                out["error"] = "the server stopped before this ingest finished; add again"
            except (PermissionError, ValueError, OSError):
                pass
        return out

    def ingest(
        self, caller: Caller, project: str | None, name: str, ingest_id: str
    ) -> dict[str, Any]:
        folder, _ = self._folder(caller, project, name)
        path = folder / "ingests" / f"{ingest_id}.json"
        if (
            not isinstance(ingest_id, str)
            or not _INGEST_ID.fullmatch(ingest_id)
            or not (path.is_file())
        ):
            raise NotFound(
                _t(
                    "knowledge base {name!r} has no ingest {ingest_id!r}",
                    name=name,
                    ingest_id=ingest_id,
                ),
                _t("GET .../ingests lists the recent ones."),
            )
        return self._public(json.loads(path.read_text()))

    def ingests(self, caller: Caller, project: str | None, name: str) -> list[dict[str, Any]]:
        """The recent ingests, newest first."""
        folder, _ = self._folder(caller, project, name)
        out = []
        for path in (folder / "ingests").glob("*.json"):
            try:
                out.append(self._public(json.loads(path.read_text())))
            except (OSError, ValueError):
                continue
        return sorted(out, key=lambda r: (r["started_at"], r["id"]), reverse=True)

    def close(self) -> None:
        with self._guard:
            for index in self._open.values():
                index.close()
            self._open.clear()


__all__ = ["AddReport", "FileResult", "Forbidden", "KnowledgeBaseService", "KnowledgeBaseView"]
