"""Knowledge bases in projects: create, add files, remove sources, list, query, evaluate.

Each knowledge base is one folder, ``<data_dir>/kb/<project id>/<name>/``: ``kb.json`` (its
owner, chunking and embedding model) and its index (``index.KnowledgeIndex``). Nothing is
added to the main database: a knowledge base belongs to the project whose id names its
folder, and every call resolves the project through ``ProjectService.resolve``, so a caller
who is not a member gets the same ``NotFound`` as for a knowledge base that does not exist.

Adding files: each file is parsed and chunked on its own (a file that fails is reported with
its error, the others go on); a file whose content hash is unchanged is skipped; a changed
file's old chunks are replaced. ``progress`` (if given) is called after each file.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..identity import Caller, check_name
from ..projects import ProjectService
from ..store import Store
from . import chunk as chunking
from . import embed as embedding
from . import evaluate as evaluation
from .index import MODES, KnowledgeIndex, NewChunk
from .parse import ParseError, parse_file, supported


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


class KnowledgeBaseService:
    def __init__(
        self,
        store: Store,
        projects: ProjectService,
        settings: Settings,
        embedder: Callable[[str], embedding.Embedder] = embedding.get_embedder,
    ) -> None:
        self.store = store
        self.projects = projects
        self.settings = settings
        self.embedder = embedder
        self._open: dict[Path, KnowledgeIndex] = {}
        self._locks: dict[Path, threading.Lock] = {}
        self._guard = threading.Lock()

    @property
    def root(self) -> Path:
        return self.settings.data_dir / "kb"

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
                f"knowledge base {name!r} not found in project {project_name!r}",
                "GET /cube/api/v1/kb (cube-lab kb list) lists the knowledge bases you can see.",
            )
        return folder, project_name

    def _lock(self, folder: Path) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(folder, threading.Lock())

    def _index(self, folder: Path, config: dict[str, Any]) -> KnowledgeIndex:
        with self._guard:
            index = self._open.get(folder)
            if index is None:
                index = KnowledgeIndex(folder, int(config["dim"]))
                self._open[folder] = index
            return index

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
    ) -> KnowledgeBaseView:
        check_name(name, "knowledge base name")
        assert isinstance(name, str)
        if chunking_ not in chunking.STRATEGIES:
            raise InvalidInput(
                f"unknown chunking {chunking_!r}", f"Use one of {list(chunking.STRATEGIES)}."
            )
        try:
            chunking.check_sizes(chunk_size, overlap)  # type: ignore[arg-type]
        except ValueError as exc:
            raise InvalidInput(str(exc), "e.g. chunk_size=200, overlap=40") from exc
        if model not in embedding.MODELS:
            raise InvalidInput(
                f"unknown embedding model {model!r}", f"Use one of {sorted(embedding.MODELS)}."
            )
        project_id, project_name = self._project(caller, project)
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
        }
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            folder.mkdir()
        except FileExistsError as exc:
            raise Conflict(
                f"knowledge base {name!r} already exists in project {project_name!r}",
                "Choose another name, or add files to the existing one.",
            ) from exc
        tmp = folder / "kb.json.tmp"
        tmp.write_text(json.dumps(config, indent=1))
        tmp.replace(folder / "kb.json")
        return self._view(folder, project_name)

    def list(self, caller: Caller, project: str | None = None) -> list[KnowledgeBaseView]:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            if project:
                row = self.projects.resolve(s, caller, project)
                projects = [(row.id, row.name)]
            else:
                ids = self.projects.visible_ids(s, caller)
                from sqlalchemy import select

                from ..store.models import Project

                projects = list(
                    s.execute(select(Project.id, Project.name).where(Project.id.in_(ids)))
                )
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
            if index is not None:
                index.close()
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
    ) -> AddReport:
        """Add files and folders (recursively, supported suffixes, hidden ones skipped)."""
        folder, _ = self._folder(caller, project, name)
        config = self._config(folder)
        files = self._expand(paths)
        results = []
        with self._lock(folder):
            index = self._index(folder, config)
            for n, path in enumerate(files, start=1):
                result = self._add_one(index, config, path)
                results.append(result)
                if progress is not None:
                    progress(n, len(files), result)
            index.flush()
        return AddReport(results)

    @staticmethod
    def _expand(paths: Sequence[Path]) -> list[Path]:
        if not paths:
            raise InvalidInput("no files given", "Give one or more files or folders.")
        files: list[Path] = []
        for raw in paths:
            path = Path(raw).expanduser().resolve()
            if path.is_dir():
                files += sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file()
                    and supported(p)
                    and not any(part.startswith(".") for part in p.relative_to(path).parts)
                )
            elif path.is_file():
                files.append(path)
            else:
                raise InvalidInput(f"{raw} does not exist", "Give existing files or folders.")
        return files

    def _add_one(self, index: KnowledgeIndex, config: dict[str, Any], path: Path) -> FileResult:
        source = str(path)
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            return FileResult(source, "failed", error=f"cannot read {path.name}: {exc}")
        old = index.source_hash(source)
        if old == digest:
            return FileResult(source, "unchanged")
        try:
            doc = parse_file(path, source)
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
        with self._lock(folder):
            index = self._index(folder, self._config(folder))
            known = {s["source"] for s in index.sources()}
            wanted = source if source in known else str(Path(source).expanduser().resolve())
            if wanted not in known:
                raise NotFound(
                    f"knowledge base {name!r} has no source {source!r}",
                    "GET .../sources (cube-lab kb list --sources) lists them.",
                )
            removed = index.remove_source(wanted)
            index.flush()
            return removed

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
    ) -> list[dict[str, Any]]:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("query text is required", 'e.g. {"query": "how do I ..."}')
        if mode not in MODES:
            raise InvalidInput(f"unknown mode {mode!r}", f"Use one of {list(MODES)}.")
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 100:
            raise InvalidInput(f"k must be an integer from 1 to 100, not {k!r}")
        folder, _ = self._folder(caller, project, name)
        config = self._config(folder)
        index = self._index(folder, config)
        vector = None
        if mode != "keyword":
            vector = self.embedder(config["model"]).embed([text])[0]
        hits = index.search(str(mode), k, text=text, vector=vector, weights=weights)
        return [asdict(h) for h in hits]

    def evaluate(
        self,
        caller: Caller,
        project: str | None,
        name: str,
        questions: Sequence[dict[str, Any]],
        *,
        k: int = 10,
        mode: str = "hybrid",
    ) -> evaluation.Scores:
        if not questions:
            raise InvalidInput("no questions given", 'e.g. [{"question": ..., "source": ...}]')
        try:
            parsed = [evaluation.Question.of(q) for q in questions]
        except (ValueError, TypeError, AttributeError) as exc:
            raise InvalidInput(
                f"bad question set: {exc}", "Each item: question + source(s) or chunk(s)."
            ) from exc
        folder, _ = self._folder(caller, project, name)
        config = self._config(folder)
        index = self._index(folder, config)
        vectors = None
        if mode != "keyword":
            vectors = self.embedder(config["model"]).embed([q.question for q in parsed])
        rankings = []
        for n, q in enumerate(parsed):
            vec = vectors[n] if vectors is not None else None
            hits = index.search(mode, max(k, 10), text=q.question, vector=vec)
            rankings.append([evaluation.Retrieved(h.id, h.source) for h in hits])
        return evaluation.score(parsed, rankings, k)

    def close(self) -> None:
        with self._guard:
            for index in self._open.values():
                index.close()
            self._open.clear()


__all__ = ["AddReport", "FileResult", "Forbidden", "KnowledgeBaseService", "KnowledgeBaseView"]
