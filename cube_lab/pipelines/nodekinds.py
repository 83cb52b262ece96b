"""Node kinds: how a node with a given ``op`` is checked and turned into a command.

Built-in kinds cover Elyra's generic nodes (notebook, Python, R), shell commands
and job templates. Other capabilities (training, tuning, serving) add theirs through
the ``cube_lab.node_kinds`` entry-point group: each entry point names a ``NodeKind``
instance (or a class to instantiate), like Elyra's runtime-processor registry.
"""

from __future__ import annotations

import functools
import json
import shutil
import sys
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol

from .. import containment
from ..errors import CubeError
from ..locale.messages import _t
from .model import OP_NOTEBOOK, OP_PYTHON, OP_R, OP_SHELL, OP_TEMPLATE, Node

ENTRY_POINT_GROUP = "cube_lab.node_kinds"


@dataclass(frozen=True)
class Problem:
    """One validation finding, naming the node and the field."""

    node_id: str | None
    field: str
    message: str
    node_label: str | None = None


@dataclass
class NodeContext:
    """What a kind needs to check or launch a node."""

    folder: Path  # the pipeline file's folder: relative paths start here
    root: Path  # nothing may escape this folder (the project / server root)
    catalog: Any  # cube_lab.jobtemplates.TemplateCatalog
    run_dir: Path | None = None  # the node's folder inside the run folder, when running
    params: dict[str, Any] = field(default_factory=dict)  # resolved parameters for the node
    # Who checks the pipeline and the pipeline service (its store, projects, settings), when
    # known: kinds that name stored objects (a knowledge base) check that the caller sees them.
    caller: Any = None
    services: Any = None


@dataclass
class NodeCommand:
    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)  # recorded for cache keys and the UI


class NodeKind(Protocol):
    name: str
    ops: tuple[str, ...]
    display_name: str

    def check(self, node: Node, ctx: NodeContext) -> list[Problem]: ...

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand: ...

    def inputs(self, node: Node, ctx: NodeContext) -> list[Path]:
        """Files whose content decides the node's result (for the cache)."""
        ...


def resolve_path(raw: object, ctx: NodeContext, field_name: str) -> Path:
    """A node's path (a file, an output, a template's path parameter once its references
    resolved) as a real path inside the project, by the one rule of
    ``cube_lab.containment``: relative to the pipeline file, never absolute, never leading
    out of the root through ``..`` or a symbolic link. Raises PathRefused (InvalidInput)."""
    try:
        return containment.resolve(
            ctx.root, raw, base=ctx.folder, absolute="refuse", what=field_name, where="the project"
        )
    except containment.PathRefused as exc:
        if exc.reason == "absolute":
            exc.error = f"{field_name}: {raw!r} is an absolute path"
            exc.detail = "Use a path relative to the pipeline file."
        elif exc.reason == "outside":
            exc.error = f"{field_name}: {raw!r} points outside the project"
            exc.detail = "'..' and symbolic links may not lead out of the project folder."
        raise


def _error_text(exc: CubeError) -> str:
    """An error and how to fix it, as one problem's message (each part still translatable)."""
    if not exc.detail:
        return _t("{error}.", error=exc.error)
    return _t("{error}. {detail}", error=exc.error, detail=exc.detail)


def safe_path(
    raw: str, ctx: NodeContext, node: Node, field_name: str
) -> tuple[Path | None, list[Problem]]:
    """:func:`resolve_path` for validation: the path, or the problem to show on the node."""
    try:
        return resolve_path(raw, ctx, field_name), []
    except containment.PathRefused as exc:
        message = exc.error  # a marked text: kept whole (removeprefix would drop its marks)
        if message.startswith(f"{field_name}: "):
            message = message.removeprefix(f"{field_name}: ")
        if exc.reason == "absolute":
            message = _t("{message}; use a path relative to the pipeline file", message=message)
        return None, [Problem(node.id, field_name, message, node.label)]


class FileNodeKind:
    """A node that runs one file of the project (Elyra's generic components)."""

    name = "file"
    ops: tuple[str, ...] = ()
    display_name = "File"
    suffixes: tuple[str, ...] = ()

    def check(self, node: Node, ctx: NodeContext) -> list[Problem]:
        if not node.filename:
            return [Problem(node.id, "filename", _t("no file chosen"), node.label)]
        path, problems = safe_path(node.filename, ctx, node, "filename")
        if problems:
            return problems
        assert path is not None
        if not path.is_file():
            missing = _t("file {name!r} not found", name=node.filename)
            return [Problem(node.id, "filename", missing, node.label)]
        if self.suffixes and path.suffix.lower() not in self.suffixes:
            return [
                Problem(
                    node.id,
                    "filename",
                    _t(
                        "{name!r} is not a {suffixes} file",
                        name=node.filename,
                        suffixes="/".join(self.suffixes),
                    ),
                    node.label,
                )
            ]
        for i, dep in enumerate(node.dependencies):
            _, dep_problems = safe_path(dep, ctx, node, f"dependencies[{i}]")
            if not dep_problems and not _matches(path.parent, dep):
                dep_problems = [
                    Problem(
                        node.id,
                        f"dependencies[{i}]",
                        _t(
                            "{dep!r} matches no file next to {name!r}",
                            dep=dep,
                            name=node.filename,
                        ),
                        node.label,
                    )
                ]
            problems.extend(dep_problems)
        for i, out in enumerate(node.outputs):
            _, out_problems = safe_path(out, ctx, node, f"outputs[{i}]")
            problems.extend(out_problems)
        return problems

    def file(self, node: Node, ctx: NodeContext) -> Path:
        """The node's file, checked again when it runs (it may have become a link since)."""
        return resolve_path(node.filename, ctx, "filename")

    def inputs(self, node: Node, ctx: NodeContext) -> list[Path]:
        main = self.file(node, ctx)
        found = [main]
        for pattern in node.dependencies:
            found.extend(sorted(p for p in main.parent.glob(pattern) if p.is_file()))
        return found


def _matches(folder: Path, pattern: str) -> bool:
    """Whether a dependency (a path or a glob, relative to the node's file) names a file."""
    try:
        return any(p.is_file() for p in folder.glob(pattern))
    except (ValueError, NotImplementedError, OSError):  # an unusable pattern matches nothing
        return False


class PythonKind(FileNodeKind):
    name, ops, display_name, suffixes = "python", (OP_PYTHON,), "Python script", (".py",)

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand:
        path = self.file(node, ctx)
        return NodeCommand([sys.executable, "-u", str(path)], path.parent)


class NotebookKind(FileNodeKind):
    # Any suffix, as in Elyra (a notebook saved as .json or without a suffix still runs).
    name, ops, display_name, suffixes = "notebook", (OP_NOTEBOOK,), "Notebook", ()

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand:
        path = self.file(node, ctx)
        assert ctx.run_dir is not None
        executed = ctx.run_dir / path.name  # a copy in the run folder, never the original
        argv = [
            sys.executable,
            "-m",
            "cube_lab.pipelines.notebook_exec",
            str(path),
            str(executed),
            "--parameters",
            json.dumps(ctx.params),
        ]
        return NodeCommand(argv, path.parent, params=dict(ctx.params))


class RKind(FileNodeKind):
    name, ops, display_name, suffixes = "r", (OP_R,), "R script", (".r",)

    # Rscript is looked for when the node runs, not when the pipeline is checked: a pipeline
    # validated here may run elsewhere (a cluster image), as in Elyra.

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand:
        path = self.file(node, ctx)
        rscript = shutil.which("Rscript")
        if rscript is None:
            raise CubeError(
                _t("R nodes need Rscript, which is not installed here"),
                _t(
                    "Install R (e.g. apt-get install r-base-core) or run the pipeline on a cluster."
                ),
            )
        return NodeCommand([rscript, str(path)], path.parent)


class ShellKind:
    name, ops, display_name = "shell", (OP_SHELL,), "Shell command"

    def check(self, node: Node, ctx: NodeContext) -> list[Problem]:
        command = node.params.get("command")
        if not isinstance(command, str) or not command.strip():
            return [Problem(node.id, "command", _t("no command given"), node.label)]
        return []

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand:
        shell = shutil.which("bash") or "/bin/sh"
        return NodeCommand([shell, "-c", str(node.params["command"])], ctx.folder)

    def inputs(self, node: Node, ctx: NodeContext) -> list[Path]:
        return []


class TemplateKind:
    name, ops, display_name = "template", (OP_TEMPLATE,), "Job template"

    def _template(self, node: Node, ctx: NodeContext) -> Any:
        return ctx.catalog.get(node.params.get("template"))

    def check(self, node: Node, ctx: NodeContext) -> list[Problem]:
        name = node.params.get("template")
        if not isinstance(name, str) or not name:
            return [Problem(node.id, "template", _t("no job template chosen"), node.label)]
        try:
            template = self._template(node, ctx)
        except CubeError as exc:
            return [Problem(node.id, "template", _error_text(exc), node.label)]
        raw = node.params.get("parameters") or {}
        if not isinstance(raw, dict):
            return [Problem(node.id, "parameters", _t("parameters must be an object"), node.label)]
        # References to upstream values are checked when they resolve at run time.
        concrete = {k: v for k, v in raw.items() if not (isinstance(v, str) and "{{" in v)}
        try:
            checked = template.validate_params({**_placeholders(template, raw), **concrete})
        except CubeError as exc:
            return [Problem(node.id, "parameters", _error_text(exc), node.label)]
        problems: list[Problem] = []
        for name in template.path_parameters():  # what a template reads or writes stays inside
            value = checked.get(name) if name in concrete or name not in raw else None
            if isinstance(value, str) and value:
                problems.extend(safe_path(value, ctx, node, f"parameters.{name}")[1])
        return problems

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand:
        template = self._template(node, ctx)
        params = template.validate_params(dict(ctx.params))
        # Checked again now that references ({{ params.x }}, {{ nodes.n.values.v }}) resolved.
        for name in template.path_parameters():
            value = params.get(name)
            if value not in (None, ""):
                resolve_path(value, ctx, f"parameters.{name}")
        argv = template.command(params, python=sys.executable)
        return NodeCommand(argv, ctx.folder, env={"CUBE_PARAMS": json.dumps(params)}, params=params)

    def inputs(self, node: Node, ctx: NodeContext) -> list[Path]:
        """The template's code and the files its parameters read."""
        template = self._template(node, ctx)
        files = sorted(p for p in Path(template.directory).rglob("*") if p.is_file())
        for name in template.input_parameters():
            value = ctx.params.get(name)
            if isinstance(value, str) and value:
                files.append(resolve_path(value, ctx, f"parameters.{name}"))
        return files


def _placeholders(template: Any, raw: dict[str, Any]) -> dict[str, Any]:
    """Stand-ins for parameters given as references, so schema checks skip only those."""
    props = (getattr(template, "parameters", {}) or {}).get("properties", {})
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str) and "{{" in value:
            kind = props.get(key, {}).get("type")
            out[key] = {"integer": 0, "number": 0.0, "boolean": False}.get(kind, "ref")
    return out


BUILTIN_KINDS: tuple[Any, ...] = (
    NotebookKind(),
    PythonKind(),
    RKind(),
    ShellKind(),
    TemplateKind(),
)


_BUILTIN_BY_OP: dict[str, Any] = {op: kind for kind in BUILTIN_KINDS for op in kind.ops}


@functools.cache
def node_kinds() -> dict[str, Any]:
    """op -> kind, built-ins first, then what installed packages register."""
    kinds = dict(_BUILTIN_BY_OP)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = ep.load()
            kind = loaded() if isinstance(loaded, type) else loaded
            for op in kind.ops:
                kinds.setdefault(op, kind)
        except Exception as exc:  # a broken plug-in must not break every pipeline
            print(f"cube-lab: node kind {ep.name!r} failed to load: {exc}", file=sys.stderr)
    return kinds


def kind_for(op: str) -> Any | None:
    """The kind of ``op``. Built-in ops skip the entry-point scan (tens of milliseconds
    on every CLI run: it reads every installed package's metadata). An op shaped like an
    Elyra component catalog's id (``<catalog type>:<hash>``) is a catalog component."""
    found = _BUILTIN_BY_OP.get(op) or node_kinds().get(op)
    if found is None:
        from . import catalogs

        found = catalogs.kind_for(op)
    return found


def kind_name(op: str) -> str:
    return str(getattr(kind_for(op), "name", op))
