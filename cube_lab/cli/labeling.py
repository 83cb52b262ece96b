"""`cube-lab dataset create|list|show` and `cube-lab label create|list|show|assign|import|
export|prelabel`: datasets and labeling projects for teachers and scripts."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from ..serialize import to_jsonable
from .args import output_target, print_json

if TYPE_CHECKING:
    from ..workspace import Workspace

TYPES = ("image-class", "image-bbox", "text-class", "text-ner")
FORMATS = ("coco", "yolo", "labelstudio", "jsonl", "csv")
# what each export is, for -o: a description, and its one file's name (None: several files)
EXPORTS: dict[str, tuple[str, str | None]] = {
    "coco": ("a COCO export (annotations.json and the images)", None),  # -o x.json: see below
    "yolo": ("a YOLO export (data.yaml, labels/*.txt and the images)", None),
    "labelstudio": ("a Label Studio export", "tasks.json"),
    "jsonl": ("a JSONL export", "labels.jsonl"),
    "csv": ("a CSV export", "labels.csv"),
}
COCO_ANNOTATIONS = "annotations.json"


def _project(ws: Workspace, caller: Caller, a: argparse.Namespace) -> str:
    if a.project:
        return str(a.project)
    ws.projects.ensure_personal(caller)
    with ws.store.read() as s:
        return ws.projects.personal_project(s, caller).name


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


# -- datasets ------------------------------------------------------------------------------


def dataset_create(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.datasets.create(
        caller,
        a.name,
        Path(a.path).expanduser(),
        project=a.project,
        kind=a.kind,
        text_field=a.text_field,
    )
    if a.json:
        print_json(view)
        return
    show_dataset_created(to_jsonable(view))


def show_dataset_created(view: dict[str, Any]) -> None:
    print(
        f"Created dataset {view['name']} in project {view['project']}: {view['item_count']:,} "
        f"{view['kind']} from {view['source']}"
    )


def dataset_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    views = ws.datasets.list(caller, a.project)
    if a.json:
        print_json(views)
        return
    show_datasets(to_jsonable(views))


def show_datasets(views: list[dict[str, Any]]) -> None:
    if not views:
        print("No datasets yet: cube-lab dataset create NAME PATH")
        return
    for v in views:
        print(
            f"{v['project']:<16} {v['name']:<24} {v['kind']:<7} {v['item_count']:>8,} items  "
            f"{len(v['versions'])} version(s)  {v['source']}"
        )


def dataset_show(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.datasets.get(caller, _project(ws, caller, a), a.name)
    if a.json:
        print_json(view)
        return
    show_dataset(to_jsonable(view))


def show_dataset(view: dict[str, Any]) -> None:
    print(
        f"{view['project']}/{view['name']}: {view['item_count']:,} {view['kind']} "
        f"from {view['source']}"
    )
    for v in view["versions"]:
        print(
            f"  v{v['version']}  {v['format']:<12} {v['item_count']:>7,} items  "
            f"{v['labeling']:<20} {v['path']}"
        )


# -- labeling projects ---------------------------------------------------------------------------


def label_create(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.labeling.create(
        caller,
        a.name,
        dataset=a.dataset,
        type=a.type,
        labels=_split(a.labels),
        project=a.project,
        multi_label=a.multi_label,
        instructions=Path(a.instructions).read_text() if a.instructions else None,
        review=not a.no_review,
        reviewers=_split(a.reviewers) if a.reviewers else None,
    )
    if a.json:
        print_json(view)
        return
    show_label_created(to_jsonable(view))


def show_label_created(view: dict[str, Any]) -> None:
    keys = ", ".join(f"{label['hotkey'] or '-'}={label['name']}" for label in view["labels"])
    print(f"Created labeling project {view['name']} ({view['type']}) on {view['dataset']}: {keys}")


def label_list(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    views = ws.labeling.list(caller, a.project)
    if a.json:
        print_json(views)
        return
    show_label_projects(to_jsonable(views))


def show_label_projects(views: list[dict[str, Any]]) -> None:
    if not views:
        print(
            "No labeling projects yet: cube-lab label create NAME --dataset D --type T --labels a,b"
        )
        return
    for v in views:
        p = v["progress"]
        done = (
            f"{p['submitted'] + p['accepted']}/{p['total']} done, {p['accepted']} accepted"
            if p
            else ""
        )
        print(f"{v['project']:<16} {v['name']:<24} {v['type']:<12} {v['dataset']:<20} {done}")


def label_show(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    view = ws.labeling.get(caller, _project(ws, caller, a), a.name)
    if a.json:
        print_json(view)
        return
    show_label_project(to_jsonable(view))


def show_label_project(view: dict[str, Any]) -> None:
    p = view["progress"]
    assert p is not None
    print(
        f"{view['project']}/{view['name']}: {view['type']} on {view['dataset']}, "
        f"review {view['review']}"
    )
    print(
        f"  {p['total']} tasks: {p['new']} new, {p['assigned']} assigned, "
        f"{p['submitted']} submitted, {p['accepted']} accepted, {p['rejected']} rejected, "
        f"{p['prelabeled']} pre-labeled"
    )
    for user, u in p["by_user"].items():
        print(
            f"  {user:<16} assigned {u['assigned']}, submitted {u['submitted']}, "
            f"accepted {u['accepted']}, rejected {u['rejected']}"
        )
    print("  labels: " + ", ".join(f"{k}={n}" for k, n in p["by_label"].items()))


def label_assign(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    counts = ws.labeling.assign(
        caller, _project(ws, caller, a), a.name, _split(a.users), a.mode, a.batch_size
    )
    if a.json:
        print_json({"assigned": counts})
        return
    print("Assigned " + ", ".join(f"{n} to {user}" for user, n in counts.items()))


def label_import(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    data = read_import(a.file)
    answer = ws.labeling.import_labels(
        caller, _project(ws, caller, a), a.name, a.format, data, a.pick
    )
    if a.json:
        print_json(answer)
        return
    show_imported(answer)


def read_import(raw: str) -> Any:
    """The JSON a ``label import`` sends."""
    path = Path(raw).expanduser()
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(_t("{path} does not exist", path=path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(_t("{name} is not valid JSON", name=path.name), str(exc)) from None


def show_imported(answer: dict[str, Any]) -> None:
    unmatched = f" (unmatched: {', '.join(answer['unmatched'])})" if answer["unmatched"] else ""
    print(f"Imported {answer['imported']} task(s), skipped {answer['skipped']}{unmatched}")
    if answer["regions_skipped"] or answer["regions_adjusted"]:
        print(
            f"Regions: {answer['regions_skipped']} skipped, {answer['regions_adjusted']} "
            "adjusted (clipped, or rotated boxes bounded)"
        )
    for line in answer["report"]:
        what = f"  task {line['task']}" + (f" ({line['item']})" if line["item"] else "")
        if line.get("reason"):
            print(f"{what}: {line['outcome']}: {line['reason']}")
        for note in line.get("regions", []):
            print(
                f"{what}: {note['in']} region {note['region']} {note['action']}: {note['reason']}"
            )
    if answer["report_left_off"]:
        print(f"  ... {answer['report_left_off']} more (see --json)")


def export_target(a: argparse.Namespace) -> tuple[Any, bool]:
    """Where ``label export -o`` copies to (None: nowhere), and whether that is the COCO
    annotation file alone; checked before exporting, so a bad one leaves no stray version."""
    what, single = EXPORTS[a.format]
    # `-o coco.json` is the COCO annotation file alone; its images stay in the version folder
    annotations_only = a.format == "coco" and (a.output or "").lower().endswith(".json")
    if annotations_only:
        single = COCO_ANNOTATIONS
    output = output_target(a.output, what=what, single=single) if a.output else None
    return output, annotations_only


def show_exported(
    view: dict[str, Any], a: argparse.Namespace, target: Path | None, annotations_only: bool
) -> None:
    if a.json:
        print_json({**view, "output": str(target.resolve()) if target else None})
        return
    written = Path(view["version"]["path"])
    where = f", copied to {target}" if target else ""
    if annotations_only:
        where += f" (its images are in {written / 'images'})"
    print(
        f"Exported {view['version']['item_count']} task(s) as {a.format}: dataset "
        f"{view['dataset']} version {view['version']['version']} ({written}){where}"
    )


def label_export(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    output, annotations_only = export_target(a)
    view = ws.labeling.export(
        caller, _project(ws, caller, a), a.name, a.format, a.only, a.class_order
    )
    written = Path(view.version.path)
    source = written / COCO_ANNOTATIONS if annotations_only else written
    target = output.deliver(source) if output is not None else None
    show_exported(to_jsonable(view), a, target, annotations_only)


def label_prelabel(ws: Workspace, caller: Caller, a: argparse.Namespace) -> None:
    count = ws.labeling.prelabel(
        caller, _project(ws, caller, a), a.name, a.model, a.version, a.threshold, a.limit
    )
    if a.json:
        print_json({"prelabeled": count})
        return
    print(f"Pre-labeled {count} task(s) with {a.model}")


def add_commands(groups: Any, command: Callable[..., Any]) -> None:
    datasets = groups.add_parser("dataset", help="datasets to label").add_subparsers(
        dest="command", required=True
    )
    p = command(datasets, "create", dataset_create, "register a folder of images or a CSV/JSONL")
    p.add_argument("name")
    p.add_argument("path", help="a folder of images, or a .csv / .jsonl file of texts")
    p.add_argument("--kind", choices=["images", "texts"])
    p.add_argument("--text-field", dest="text_field", help="the column holding the text")
    command(datasets, "list", dataset_list, "list the datasets you can see")
    p = command(datasets, "show", dataset_show, "a dataset and its versions")
    p.add_argument("name")

    labels = groups.add_parser("label", help="labeling projects").add_subparsers(
        dest="command", required=True
    )
    p = command(labels, "create", label_create, "create a labeling project over a dataset")
    p.add_argument("name")
    p.add_argument("--dataset", required=True)
    p.add_argument("--type", required=True, choices=TYPES)
    p.add_argument("--labels", required=True, help="comma-separated label names")
    p.add_argument("--multi-label", dest="multi_label", action="store_true")
    p.add_argument("--instructions", help="a Markdown file with instructions")
    p.add_argument("--no-review", dest="no_review", action="store_true", help="submits are final")
    p.add_argument("--reviewers", help="comma-separated project members who may review")
    command(labels, "list", label_list, "list labeling projects and their progress")
    p = command(labels, "show", label_show, "a labeling project's progress")
    p.add_argument("name")
    p = command(labels, "assign", label_assign, "hand new tasks to project members")
    p.add_argument("name")
    p.add_argument("--users", required=True, help="comma-separated usernames")
    p.add_argument("--mode", choices=["round_robin", "batch"], default="round_robin")
    p.add_argument("--batch-size", dest="batch_size", type=int)
    p = command(labels, "import", label_import, "import Label Studio JSON")
    p.add_argument("name")
    p.add_argument("file")
    p.add_argument("--format", required=True, choices=["labelstudio"])
    p.add_argument(
        "--pick",
        choices=["newest", "oldest", "first", "last"],
        help="which of several annotations of a task: newest by created_at (default), "
        "oldest, or first / last as listed",
    )
    p = command(labels, "export", label_export, "export labels as a new dataset version")
    p.add_argument("name")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument(
        "--output",
        "-o",
        help="also copy the export here: a file (.json, .jsonl, .csv), a folder, or a .zip",
    )
    p.add_argument("--only", choices=["accepted", "submitted"])
    p.add_argument(
        "--class-order",
        choices=["declared", "alphabetical"],
        help="class ids of coco/yolo/labelstudio exports: label-set order (default), or "
        "sorted names numbered from 0 as Label Studio's converter numbers them",
    )
    p = command(labels, "prelabel", label_prelabel, "store a registered model's proposals")
    p.add_argument("name")
    p.add_argument("--model", required=True)
    p.add_argument("--version", type=int)
    p.add_argument("--threshold", type=float)
    p.add_argument("--limit", type=int)
