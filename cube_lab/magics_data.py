"""Notebook magics for data: load a dataset version into a variable, follow a labeling project.

``%cube_dataset NAME [--version V] [--project P] [--as VAR] [--path]``
    reads the version (the newest when not given; ``source`` for the data as registered) with
    ``cube_lab.datasets.load`` and binds it to ``VAR`` (default: the name made an identifier),
    or with ``--path`` binds its ``pathlib.Path``; it says what was bound and the version.
``%cube_label NAME [--project P]``
    the labeling project's progress: items labeled, per person and per label.
``%cube_label NAME --assign alice,bob [--mode round_robin|batch] [--batch-size N]``
    hands the unassigned tasks out; how many each person got.
``%cube_label NAME --export FORMAT [--only accepted|submitted] [--as VAR]``
    writes the answers as a new dataset version (coco, yolo, labelstudio, csv, jsonl) and, with
    ``--as``, loads that version into ``VAR`` at once.

Thin callers of the SDK (``cube_lab.datasets``, ``cl.labeling``), like the other magics; the
dataset a magic loads is noted for the lineage of the next model registered in the kernel.
"""

from __future__ import annotations

import re
from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class

from .magics import _cube_errors, _parse, _parser

LABELING_FORMATS = ("coco", "yolo", "labelstudio", "csv", "jsonl")


def variable_name(name: str) -> str:
    """A Python identifier for dataset ``name`` ("pets-v2" -> "pets_v2", "2024" -> "ds_2024")."""
    ident = re.sub(r"\W", "_", name).strip("_") or "dataset"
    return ident if ident.isidentifier() and not ident[0].isdigit() else f"ds_{ident}"


def describe(value: Any) -> str:
    """What was loaded, in a few words: a table's shape, a list's length, a path."""
    shape = getattr(value, "shape", None)
    if shape is not None and len(shape) == 2:
        return f"{type(value).__name__} of {shape[0]:,} rows x {shape[1]} columns"
    if isinstance(value, list):
        return f"list of {len(value):,} items"
    return f"{type(value).__name__} {value}"


def _version(value: str | None) -> int | str | None:
    return int(value) if value is not None and value.isdigit() else value


def _dataset_parser() -> Any:
    p = _parser("%cube_dataset", "Load a dataset version into a variable.")
    p.add_argument("name")
    p.add_argument("--version")
    p.add_argument("--project")
    p.add_argument("--as", dest="var")
    p.add_argument("--path", action="store_true")
    return p


def _label_parser() -> Any:
    p = _parser("%cube_label", "A labeling project's progress, assignment or export.")
    p.add_argument("name")
    p.add_argument("--project")
    p.add_argument("--assign", metavar="USERS")
    p.add_argument("--mode", choices=("round_robin", "batch"), default="round_robin")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--export", choices=LABELING_FORMATS)
    p.add_argument("--only", choices=("accepted", "submitted"))
    p.add_argument("--as", dest="var")
    return p


def progress_lines(name: str, progress: dict[str, Any]) -> list[str]:
    """The progress as text: the totals, then one line per person and per label."""
    total = int(progress.get("total", 0))
    done = int(progress.get("submitted", 0)) + int(progress.get("accepted", 0))
    share = f" ({done / total:.0%})" if total else ""
    lines = [
        f"{name}: {done:,} of {total:,} labeled{share}; "
        + ", ".join(
            f"{progress.get(k, 0):,} {k}"
            for k in ("new", "assigned", "submitted", "accepted", "rejected")
        )
    ]
    for user, counts in sorted((progress.get("by_user") or {}).items()):
        shown = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("assigned", "submitted", "accepted"))
        lines.append(f"  {user}: {shown}")
    by_label = progress.get("by_label") or {}
    if by_label:
        lines.append("  labels: " + ", ".join(f"{k} {v}" for k, v in sorted(by_label.items())))
    return lines


@magics_class
class DataMagics(Magics):
    @line_magic
    @_cube_errors
    def cube_dataset(self, line: str) -> None:
        """Bind a dataset version to a variable:
        ``%cube_dataset pets --version 2 --as df`` (``--path`` for its folder or file)."""
        import shlex

        from . import datasets

        args = _parse(_dataset_parser(), shlex.split(line))
        version = _version(args.version)
        if args.path:
            value: Any = datasets.path(args.name, version, args.project)
        else:
            value = datasets.load(args.name, version, args.project)
        var = args.var or variable_name(args.name)
        if not var.isidentifier():
            from .errors import InvalidInput
            from .locale.messages import _t

            raise InvalidInput(_t("--as {var!r} is not a Python name", var=var), _t("e.g. --as df"))
        self.shell.user_ns[var] = value
        entry = next((e for e in reversed(datasets.used()) if e.get("name") == args.name), {})
        print(
            f"{var} = {args.name} v{entry.get('version', '?')} "
            f"(project {entry.get('project', '?')}): {describe(value)}"
        )

    @line_magic
    @_cube_errors
    def cube_label(self, line: str) -> None:
        """A labeling project: ``%cube_label mood`` (progress), ``--assign alice,bob``,
        ``--export coco [--as df]``."""
        import shlex

        from .sdk import labeling

        args = _parse(_label_parser(), shlex.split(line))
        project = labeling.get(args.name, args.project)
        if args.assign:
            users = [u for u in re.split(r"[,\s]+", args.assign) if u]
            got = project.assign(users, args.mode, args.batch_size)
            print(
                f"Assigned in {args.name}: "
                + (", ".join(f"{u} {n}" for u, n in got.items()) or "nothing left to assign")
            )
        if args.export:
            made = project.export(args.export, only=args.only)
            version = made.get("version") or {}
            number = version.get("number") if isinstance(version, dict) else version
            dataset = str(made.get("dataset"))
            print(f"Exported {args.name} as {args.export}: dataset {dataset} v{number}")
            if args.var:
                from . import datasets

                self.shell.user_ns[args.var] = value = datasets.load(
                    dataset, number, project.project
                )
                print(f"{args.var} = {dataset} v{number}: {describe(value)}")
        if not args.assign and not args.export:
            print("\n".join(progress_lines(args.name, project.progress())))
        if project.url:
            print(f"Open in JupyterLab: {project.url}")
