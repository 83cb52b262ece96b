"""`cube-lab dataset ...` and `cube-lab label ...` under the hub."""

from __future__ import annotations

import argparse
import tempfile
import zipfile
from pathlib import Path

from ...rest_client import ServiceClient, relative, segment
from ..args import print_json
from .common import emit, project_of


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def dataset_create(client: ServiceClient, a: argparse.Namespace) -> None:
    from .. import labeling

    body = {
        "name": a.name,
        "path": relative(a.path, "dataset"),
        "project": a.project,
        "kind": a.kind,
        "text_field": a.text_field,
    }
    view = client.post("datasets", {k: v for k, v in body.items() if v is not None})
    emit(a, view, labeling.show_dataset_created)


def dataset_list(client: ServiceClient, a: argparse.Namespace) -> None:
    from .. import labeling

    views = client.get("datasets", project=a.project)["datasets"]
    emit(a, views, labeling.show_datasets)


def dataset_show(client: ServiceClient, a: argparse.Namespace) -> None:
    from .. import labeling

    view = client.get(f"projects/{segment(project_of(client, a))}/datasets/{segment(a.name)}")
    emit(a, view, labeling.show_dataset)


def _labeling(client: ServiceClient, a: argparse.Namespace) -> str:
    return f"projects/{segment(project_of(client, a))}/labeling/{segment(a.name)}"


def label_create(client: ServiceClient, a: argparse.Namespace) -> None:
    from .. import labeling

    body = {
        "name": a.name,
        "dataset": a.dataset,
        "type": a.type,
        "labels": _split(a.labels),
        "project": a.project,
        "multi_label": a.multi_label,
        "instructions": Path(a.instructions).read_text() if a.instructions else None,
        "review": not a.no_review,
        "reviewers": _split(a.reviewers) if a.reviewers else None,
    }
    view = client.post("labeling", {k: v for k, v in body.items() if v is not None})
    emit(a, view, labeling.show_label_created)


def label_list(client: ServiceClient, a: argparse.Namespace) -> None:
    from .. import labeling

    views = client.get("labeling", project=a.project)["projects"]
    emit(a, views, labeling.show_label_projects)


def label_show(client: ServiceClient, a: argparse.Namespace) -> None:
    from .. import labeling

    view = client.get(_labeling(client, a))
    emit(a, view, labeling.show_label_project)


def label_assign(client: ServiceClient, a: argparse.Namespace) -> None:
    body = {"users": _split(a.users), "mode": a.mode, "batch_size": a.batch_size}
    found = client.post(
        f"{_labeling(client, a)}/assign", {k: v for k, v in body.items() if v is not None}
    )
    if a.json:
        print_json(found)
    else:
        print("Assigned " + ", ".join(f"{n} to {user}" for user, n in found["assigned"].items()))


def label_import(client: ServiceClient, a: argparse.Namespace) -> None:
    from .. import labeling

    body = {"format": a.format, "data": labeling.read_import(a.file), "pick": a.pick}
    answer = client.post(
        f"{_labeling(client, a)}/import", {k: v for k, v in body.items() if v is not None}
    )
    emit(a, answer, labeling.show_imported)


def label_export(client: ServiceClient, a: argparse.Namespace) -> None:
    """The service makes the version; with ``-o`` it is downloaded and copied there."""
    from .. import labeling

    output, annotations_only = labeling.export_target(a)
    project = project_of(client, a)
    body = {"format": a.format, "only": a.only, "class_order": a.class_order}
    view = client.post(
        f"projects/{segment(project)}/labeling/{segment(a.name)}/export",
        {k: v for k, v in body.items() if v is not None},
    )
    target = None
    if output is not None:
        version = view["version"]
        where = (
            f"projects/{segment(project)}/datasets/{segment(view['dataset'])}"
            f"/versions/{segment(version['version'])}/download"
        )
        with tempfile.TemporaryDirectory(prefix="cube-export-") as tmp:
            copy = _fetch(client, where, Path(tmp), Path(version["path"]).name)
            source = copy / labeling.COCO_ANNOTATIONS if annotations_only else copy
            target = output.deliver(source)
    labeling.show_exported(view, a, target, annotations_only)


def _fetch(client: ServiceClient, where: str, tmp: Path, name: str) -> Path:
    """A download saved under ``tmp`` as ``name``: the file, or the folder a zip holds."""
    with client.stream(where) as answer:
        received = tmp / "received"
        answer.save(received)
        is_dir = answer.headers.get("Content-Type", "").startswith("application/zip")
    if not is_dir:
        return received.rename(tmp / name)
    unpacked = tmp / "unpacked"
    with zipfile.ZipFile(received) as archive:
        archive.extractall(unpacked)
    inside = list(unpacked.iterdir())
    folder = inside[0] if len(inside) == 1 and inside[0].is_dir() else unpacked
    return folder.rename(tmp / name)


def label_prelabel(client: ServiceClient, a: argparse.Namespace) -> None:
    body = {"model": a.model, "version": a.version, "threshold": a.threshold, "limit": a.limit}
    found = client.post(
        f"{_labeling(client, a)}/prelabel", {k: v for k, v in body.items() if v is not None}
    )
    if a.json:
        print_json(found)
    else:
        print(f"Pre-labeled {found['prelabeled']} task(s) with {a.model}")
