"""`cube-lab model register|list|show|compare|alias|archive|delete|download`: the model registry."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from ..serialize import to_jsonable
from .args import output_target, parse_pairs, print_json, print_table, split_ref
from .output import _stamp

if TYPE_CHECKING:
    from ..workspace import Workspace


def show_registered(v: dict[str, Any]) -> None:
    print(
        f"Registered {v['model']} v{v['version']} ({v['flavor']}, {v['format']}, "
        f"{v['size_bytes']:,} bytes, {v['checksum'][:19]}) in project {v['project']}"
    )


def show_models(models: list[dict[str, Any]]) -> None:
    if not models:
        print("No models yet. Register one: cube-lab model register PATH --name NAME")
        return
    print_table(
        [
            [
                m["project"],
                m["name"],
                f"v{m['latest_version']}",
                str(m["version_count"]),
                m["flavor"] or "",
                " ".join(f"{k}=v{v}" for k, v in m["aliases"].items()),
                _stamp(m["updated_at"]),
            ]
            for m in models
        ],
        ["PROJECT", "NAME", "LATEST", "VERSIONS", "FLAVOR", "ALIASES", "UPDATED"],
    )


def show_model(detail: dict[str, Any]) -> None:
    print(f"{detail['project']}/{detail['name']}  {detail['description']}".rstrip())
    print_table(
        [
            [
                f"v{v['version']}",
                v["flavor"],
                v["format"],
                f"{v['size_bytes']:,}",
                " ".join(f"{k}={val:g}" for k, val in v["metrics"].items()),
                ",".join(v["aliases"]),
                v["created_by"],
                _stamp(v["created_at"]),
                "archived" if v["archived"] else "",
            ]
            for v in detail["versions"]
        ],
        ["VERSION", "FLAVOR", "FORMAT", "BYTES", "METRICS", "ALIASES", "BY", "CREATED", ""],
    )


def model_register(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    v = ws.registry.register(
        caller,
        name=a.name,
        path=Path(a.path).expanduser().resolve(),
        project=a.project,
        flavor=a.flavor,
        description=a.description,
        metrics=parse_pairs(a.metric, "metric", numeric=True),
        params=parse_pairs(a.param, "param"),
        tags=parse_pairs(a.tag, "tag"),
        aliases=a.alias,
        source=a.source,
        pipeline_run_id=a.pipeline_run,
        training_job_id=a.training_job,
    )
    if a.json:
        print_json(v)
    else:
        show_registered(to_jsonable(v))


def model_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    models, offset = [], 0
    while True:  # --json prints every model the caller can see, page by page
        page = ws.registry.list_models(
            caller, q=a.search, project=a.project, include_archived=a.all, limit=500, offset=offset
        )
        models.extend(page.models)
        offset += len(page.models)
        if offset >= page.total or not page.models:
            break
    if a.json:
        print_json(models)
        return
    show_models(to_jsonable(models))


def model_show(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    detail = ws.registry.get_model(caller, _project(ws, caller, a), a.name)
    if a.json:
        print_json(detail)
        return
    show_model(to_jsonable(detail))


def model_compare(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    cmp = ws.registry.compare(caller, _project(ws, caller, a), a.name, a.versions)
    if a.json:
        print_json(cmp)
        return
    header = ["", *[f"v{v.version}" for v in cmp.versions]]
    rows = [
        [f"metric {m}", *[str(v.metrics.get(m, "")) for v in cmp.versions]] for m in cmp.metrics
    ]
    rows += [[f"param {p}", *[str(v.params.get(p, "")) for v in cmp.versions]] for p in cmp.params]
    print_table(rows, header)


def model_alias(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    project = _project(ws, caller, a)
    if a.remove:
        detail = ws.registry.delete_alias(caller, project, a.name, a.alias)
        message = f"Removed alias {a.alias} from {a.name}"
    else:
        if a.version is None:
            raise InvalidInput(
                _t("give the version to point the alias at"),
                _t("cube-lab model alias NAME ALIAS VERSION"),
            )
        detail = ws.registry.set_alias(caller, project, a.name, a.alias, a.version)
        message = f"{a.name}@{a.alias} -> v{a.version}"
    if a.json:
        print_json(detail)
    else:
        print(message)


def model_archive(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    name, ref = a.ref.partition(":")[0], a.ref.partition(":")[2]
    project = _project(ws, caller, a)
    view: Any
    if ref:
        view = ws.registry.update_version(caller, project, name, ref, archived=not a.undo)
    else:
        view = ws.registry.update_model(caller, project, name, archived=not a.undo)
    if a.json:
        print_json(view)
    else:
        print(f"{'Restored' if a.undo else 'Archived'} {a.ref}")


def model_delete(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    name, ref = a.ref.partition(":")[0], a.ref.partition(":")[2]
    project = _project(ws, caller, a)
    if not a.yes:
        raise InvalidInput(
            _t("deleting {ref} removes its artifacts for good", ref=a.ref),
            _t("Add --yes to confirm."),
        )
    if ref:
        ws.registry.delete_version(caller, project, name, ref)
    else:
        ws.registry.delete_model(caller, project, name)
    if a.json:
        print_json({"deleted": a.ref, "project": project})
    else:
        print(f"Deleted {a.ref}")


def model_download(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    name, ref = split_ref(a.ref)
    project = _project(ws, caller, a)
    found = ws.registry.download(caller, project, name, ref)
    output = output_target(
        a.output,
        what=f"model {name}:{ref} (a folder)",
        single=None if found.is_dir else Path(found.path).name,
    )
    written = output.deliver(Path(found.path))
    if a.json:
        version = ws.registry.get_version(caller, project, name, ref)
        print_json({"model": name, "version": version.version, "output": str(written.resolve())})
    else:
        print(f"Downloaded {name}:{ref} to {written}")


def _project(ws: Workspace, caller: Caller, a: argparse.Namespace) -> str:
    if a.project:
        return str(a.project)
    with ws.store.write() as s:
        return ws.projects.personal_project(s, caller).name


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    models = groups.add_parser("model", help="the model registry").add_subparsers(
        dest="command", required=True
    )
    p = command(models, "register", model_register, "register a file or folder as a model version")
    p.add_argument("path")
    p.add_argument("--name", required=True)
    p.add_argument("--metric", action="append", metavar="K=V")
    p.add_argument("--param", action="append", metavar="K=V")
    p.add_argument("--tag", action="append", metavar="K=V")
    p.add_argument("--alias", action="append", metavar="ALIAS")
    p.add_argument("--flavor")
    p.add_argument("--description", default="")
    p.add_argument("--source", help="the notebook or script that produced it")
    p.add_argument("--pipeline-run")
    p.add_argument("--training-job")
    p = command(models, "list", model_list, "list the models you can see")
    p.add_argument("--search", "-q")
    p.add_argument("--all", action="store_true", help="include archived models")
    p = command(models, "show", model_show, "show a model and its versions")
    p.add_argument("name")
    p = command(models, "compare", model_compare, "compare versions' metrics and params")
    p.add_argument("name")
    p.add_argument("versions", nargs="+")
    p = command(models, "alias", model_alias, "point an alias (e.g. production) at a version")
    p.add_argument("name")
    p.add_argument("alias")
    p.add_argument("version", nargs="?")
    p.add_argument("--remove", action="store_true")
    p = command(models, "archive", model_archive, "archive NAME or NAME:VERSION")
    p.add_argument("ref")
    p.add_argument("--undo", action="store_true")
    p = command(models, "delete", model_delete, "delete NAME or NAME:VERSION and its artifacts")
    p.add_argument("ref")
    p.add_argument("--yes", action="store_true")
    p = command(models, "download", model_download, "copy NAME[:VERSION|ALIAS] to a path")
    p.add_argument("ref")
    p.add_argument(
        "--output", "-o", required=True, help="a file (a file model), a folder, or a .zip"
    )
