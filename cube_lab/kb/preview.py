"""A preview of a knowledge base's chunks: files (paths under the caller's root) or uploaded
documents (the ingest's upload shape) parsed and chunked exactly as an ingest would
(``KnowledgeBaseService._expand`` / ``_check_uploads`` to check them, the same containment
read, ``parse.parse_bytes`` and ``chunk.chunk_document``), with the knowledge base's own
chunking unless options are given, and nothing written: no index, no upload kept, no ingest
record. Embedding is skipped (a preview shows text, not vectors)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import containment
from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from . import chunk as chunking
from .parse import ParseError, parse_bytes, parse_file, supported

MAX_PREVIEW_CHUNKS = 2000  # chunks returned at most (the counts are always complete)
_FIELDS = ("chunking", "chunk_size", "overlap")


def check_options(config: dict[str, Any], options: dict[str, Any] | None) -> dict[str, Any]:
    """The chunking to preview: the knowledge base's, with any of ``chunking``,
    ``chunk_size``, ``overlap`` given instead."""
    options = options or {}
    if not isinstance(options, dict):
        raise InvalidInput(
            _t("chunking options must be an object"),
            _t('e.g. {{"chunking": "headings", "chunk_size": 120, "overlap": 20}}'),
        )
    unknown = sorted(set(options) - set(_FIELDS))
    if unknown:
        raise InvalidInput(
            _t("unknown fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(_FIELDS)),
        )
    out = {key: config[key] for key in _FIELDS}
    out.update({k: v for k, v in options.items() if v is not None})
    if out["chunking"] not in chunking.STRATEGIES:
        raise InvalidInput(
            _t("unknown chunking {chunking_!r}", chunking_=out["chunking"]),
            _t("Use one of {value}.", value=list(chunking.STRATEGIES)),
        )
    try:
        chunking.check_sizes(out["chunk_size"], out["overlap"])
    except ValueError as exc:
        raise InvalidInput(str(exc), _t("e.g. chunk_size=200, overlap=40")) from exc
    return out


def token_count(text: str) -> int:
    """Tokens as the chunker counts them (runs of non-space characters)."""
    return len(chunking._TOKEN.findall(text))


def _read(path: Path, boundary: Path | None) -> bytes:
    if boundary is not None:
        return containment.read_inside(path, boundary)
    return path.read_bytes()


def preview(
    service: Any,
    caller: Caller,
    project: str | None,
    name: str,
    paths: Sequence[Path] = (),
    documents: Sequence[object] = (),
    *,
    options: dict[str, Any] | None = None,
    boundary: Any = None,
    limit: int = MAX_PREVIEW_CHUNKS,
) -> dict[str, Any]:
    """``{chunking, chunk_size, overlap, files: [{source, status, chunks, tokens, error,
    detail, sha256, unchanged}], chunks: [{source, position, text, page, heading,
    heading_path, tokens, meta}], total_chunks, truncated}``; a file that fails is reported
    with its error and the others go on, as in an ingest. ``unchanged``: the knowledge base
    already holds this exact content (an ingest would skip it)."""
    from .service import UPLOAD, Work

    folder, _ = service._folder(caller, project, name)
    config = service._config(folder)
    chosen = check_options(config, options)
    if not paths and not documents:
        raise InvalidInput(
            _t("nothing to preview: give paths or documents"),
            _t(
                'e.g. {{"paths": ["docs/guide.md"]}} or '
                '{{"documents": [{{"name": "notes.md", "content": "..."}}]}}'
            ),
        )
    work: list[tuple[Work, bytes | None]] = [
        (w, None) for w in (service._expand(paths, boundary) if paths else [])
    ]
    for upload_name, data in service._check_uploads(documents):
        work.append((Work(Path(upload_name), UPLOAD + upload_name, None), data))
    index = service._index(folder, config)
    files: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    total = 0
    for item, data in work:
        entry: dict[str, Any] = {
            "source": item.source,
            "status": "ok",
            "chunks": 0,
            "tokens": 0,
            "error": "",
            "detail": "",
        }
        files.append(entry)
        try:
            raw = data if data is not None else _read(item.path, item.boundary)
        except containment.PathRefused as exc:
            entry.update(status="failed", error=exc.error, detail=exc.detail)
            continue
        except OSError as exc:
            entry.update(status="failed", error=f"cannot read {item.path.name}: {exc}")
            continue
        digest = hashlib.sha256(raw).hexdigest()
        entry["sha256"] = digest
        entry["unchanged"] = index.source_hash(item.source) == digest
        try:
            if supported(item.path):
                doc = parse_bytes(raw, item.path.suffix.lower(), item.source)
            else:
                doc = parse_file(item.path, item.source)
            found = chunking.chunk_document(
                doc, chosen["chunking"], chosen["chunk_size"], chosen["overlap"]
            )
        except ParseError as exc:
            entry.update(status="failed", error=exc.error, detail=exc.detail)
            continue
        entry["kind"] = doc.kind
        entry["chunks"] = len(found)
        for c in found:
            tokens = token_count(c.text)
            entry["tokens"] += tokens
            total += 1
            if len(chunks) < limit:
                chunks.append(
                    {
                        "source": c.source,
                        "position": c.position,
                        "text": c.text,
                        "page": c.meta.get("page"),
                        "heading": c.heading,
                        "heading_path": list(c.heading_path),
                        "tokens": tokens,
                        "meta": dict(c.meta),
                    }
                )
    return {
        **chosen,
        "files": files,
        "chunks": chunks,
        "total_chunks": total,
        "truncated": total > len(chunks),
    }


__all__ = ["MAX_PREVIEW_CHUNKS", "check_options", "preview", "token_count"]
