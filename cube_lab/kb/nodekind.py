"""The "kb-ingest" node kind: a pipeline node that keeps a knowledge base in sync with a folder.

Registered through the ``cube_lab.node_kinds`` entry point (see pyproject.toml). The node
names a knowledge base (``kb``, of ``project`` or the owner's personal project) and a
``folder`` (relative to the pipeline file, inside the project root); running it runs
``python -m cube_lab.kb.node_main``, which calls ``KnowledgeBaseService.sync_folder``: new and
changed files are added (unchanged content does nothing, by its hash), sources whose files
are gone are removed (``delete_missing``, default on). The node publishes ``kb``,
``project``, ``added``, ``changed``, ``unchanged``, ``removed``, ``failed`` (counts),
``chunks`` (the knowledge base's total afterwards), ``chunks_added`` and ``chunks_removed``.
A file that fails is logged and counted, and the node still succeeds; it fails when the
knowledge base is missing or files were found and none could be read. On a schedule the
node keeps the knowledge base in step with the folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .. import containment
from ..errors import CubeError, InvalidInput
from ..identity import check_name
from ..locale.messages import _t
from ..pipelines.model import Node
from ..pipelines.nodekinds import NodeCommand, NodeContext, Problem, resolve_path, safe_path
from . import chunk as chunking
from .parse import supported

OP_KB_INGEST = "cube-lab:kb-ingest"
ENV_SPEC = "CUBE_KB_INGEST_SPEC"
CHUNKING = ("chunking", "chunk_size", "overlap")

PARAMETERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["kb", "folder"],
    "properties": {
        "kb": {"type": "string", "title": "Knowledge base"},
        "folder": {
            "type": "string",
            "title": "Folder to ingest",
            "description": "Relative to the pipeline file; its supported files are synced.",
        },
        "project": {
            "type": "string",
            "title": "Project",
            "description": "The knowledge base's project (empty: your personal project).",
        },
        "patterns": {
            "type": "string",
            "title": "File patterns",
            "description": "Comma-separated globs, e.g. *.md, *.pdf (empty: every supported file).",
        },
        "delete_missing": {
            "type": "boolean",
            "default": True,
            "title": "Remove sources whose files are gone",
        },
        "chunking": {
            "type": "string",
            "enum": list(chunking.STRATEGIES),
            "title": "Chunking (overrides the knowledge base's)",
        },
        "chunk_size": {"type": "integer", "minimum": 1, "title": "Chunk size in tokens"},
        "overlap": {"type": "integer", "minimum": 0, "title": "Overlap in tokens"},
    },
}


def patterns_of(raw: object) -> list[str]:
    """The node's ``patterns``: a comma-separated text or a list of globs."""
    if raw in (None, ""):
        return []
    if isinstance(raw, str):
        return [p.strip() for p in raw.split(",") if p.strip()]
    if isinstance(raw, list) and all(isinstance(p, str) and p.strip() for p in raw):
        return [p.strip() for p in raw]
    raise InvalidInput(
        _t("patterns must be a glob or a list of globs"), _t('e.g. ["*.md", "faq/*.txt"]')
    )


def options_of(params: dict[str, Any]) -> dict[str, Any]:
    return {k: params[k] for k in CHUNKING if params.get(k) not in (None, "")}


class KbIngestKind:
    name = "kb-ingest"
    ops = (OP_KB_INGEST,)
    display_name = "Knowledge base ingest"
    schema = PARAMETERS_SCHEMA

    def check(self, node: Node, ctx: NodeContext) -> list[Problem]:
        p = node.params

        def problem(field: str, message: str) -> list[Problem]:
            return [Problem(node.id, field, message, node.label)]

        kb = p.get("kb")
        if not isinstance(kb, str) or not kb.strip():
            return problem("kb", _t("no knowledge base named"))
        try:
            check_name(kb, "knowledge base name")
        except InvalidInput as exc:
            return problem("kb", exc.error)
        project = p.get("project") or None
        if project is not None and not isinstance(project, str):
            return problem("project", _t("project must be a name"))
        raw = p.get("folder")
        if not isinstance(raw, str) or not raw.strip():
            return problem("folder", _t("no folder chosen"))
        path, problems = safe_path(raw, ctx, node, "folder")
        if problems:
            return problems
        assert path is not None
        if not path.is_dir():
            return problem("folder", _t("folder {name!r} not found", name=raw))
        try:
            patterns_of(p.get("patterns"))
        except InvalidInput as exc:
            return problem("patterns", exc.error)
        if p.get("delete_missing") not in (None, True, False):
            return problem("delete_missing", _t("delete_missing must be true or false"))
        options = options_of(p)
        if "chunking" in options and options["chunking"] not in chunking.STRATEGIES:
            message = _t(
                "unknown chunking {chunking_!r}; use one of {value}",
                chunking_=options["chunking"],
                value=list(chunking.STRATEGIES),
            )
            return problem("chunking", message)
        return self._check_kb(node, ctx, kb, project, options)

    @staticmethod
    def _check_kb(
        node: Node, ctx: NodeContext, kb: str, project: str | None, options: dict[str, Any]
    ) -> list[Problem]:
        """The knowledge base exists for the caller, and the chunking fits it (only where
        the check knows the caller and the store)."""
        services = ctx.services
        if ctx.caller is None or services is None or not hasattr(services, "store"):
            return _sizes_problems(node, options, None)
        from .service import KnowledgeBaseService

        service = KnowledgeBaseService(services.store, services.projects, services.settings)
        try:
            view = service.get(ctx.caller, project, kb)
        except CubeError as exc:
            message = _t(
                "{error}; create it first: cube-lab kb create {kb} (or the Knowledge bases panel)",
                error=exc.error,
                kb=kb,
            )
            return [Problem(node.id, "kb", message, node.label)]
        finally:
            service.close()
        return _sizes_problems(node, options, view)

    def spec(self, node: Node, ctx: NodeContext) -> dict[str, Any]:
        p = node.params
        folder = resolve_path(p.get("folder"), ctx, "folder")
        return {
            "kb": p["kb"],
            "project": p.get("project") or None,
            "folder": str(folder),
            "root": str(ctx.root),
            "patterns": patterns_of(p.get("patterns")),
            "delete_missing": p.get("delete_missing") is not False,
            "options": options_of(p),
        }

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand:
        spec = self.spec(node, ctx)
        return NodeCommand(
            [sys.executable, "-m", "cube_lab.kb.node_main"],
            ctx.folder,
            env={ENV_SPEC: json.dumps(spec)},
            params=spec,
        )

    def inputs(self, node: Node, ctx: NodeContext) -> list[Path]:
        """The folder's supported files (for the cache: a changed or gone file is a new run)."""
        folder = resolve_path(node.params.get("folder"), ctx, "folder")
        return [p for _, p in containment.walk(folder, ctx.root, hidden=False) if supported(p)]


def _sizes_problems(node: Node, options: dict[str, Any], view: Any) -> list[Problem]:
    size = options.get("chunk_size", getattr(view, "chunk_size", 200))
    overlap = options.get("overlap", getattr(view, "overlap", 40))
    if "chunk_size" not in options and "overlap" not in options:
        return []
    try:
        chunking.check_sizes(size, overlap)
    except ValueError as exc:
        field = "overlap" if "overlap" in options else "chunk_size"
        return [Problem(node.id, field, str(exc), node.label)]
    return []
