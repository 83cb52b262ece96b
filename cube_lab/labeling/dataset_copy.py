"""A dataset copied into another project (a course hand-out): the dataset as registered, its
items and a snapshot of its source (the original folder may change after the hand-out), and
one version of it (its files hard-linked: a version never changes). Each copied version keeps
its ``origin``, so handing out the same version again copies nothing.

Layout of the copy, beside every other dataset's (``datasets_root``)::

    <id>/source/<name of the original source>   the snapshot the items refer to
    <id>/v<N>/                                  the copied version, as exports write one
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, insert, literal, select
from sqlalchemy.orm import Session

from .. import containment
from ..errors import Conflict, InvalidInput
from ..identity import Caller, check_name
from ..locale.messages import _t
from ..store.models import Dataset, DatasetItem, DatasetVersion
from .dataset_service import DatasetService
from .views import DatasetView


@dataclass(frozen=True)
class PickedVersion:
    version: int
    format: str
    labeling: str
    path: Path
    item_count: int


@dataclass(frozen=True)
class Original:
    """What is copied, read in one transaction."""

    origin: str  # "<project>/<dataset>:v<N>", or ":source" when no version was exported
    dataset_id: int
    kind: str
    source: Path
    text_field: str | None
    item_count: int
    version: PickedVersion | None


def copy_dataset(
    service: DatasetService,
    caller: Caller,
    name: str,
    version: int | str | None,
    *,
    project: str | None,
    to_project: str,
    read_only: bool = False,
) -> tuple[DatasetView, str]:
    """Copy ``name``'s ``version`` (None: the newest, or the source when nothing was exported)
    from ``project`` (the caller's personal one when None) into ``to_project`` under the same
    name, owned by the caller; ``read_only`` makes the copy course material. Returns the copy
    and ``"copied"`` or ``"up to date"``."""
    check_name(name, "dataset name")
    service.projects.ensure_personal(caller)
    with service.store.read() as s:
        dataset = service.dataset(s, caller, project, name)
        row = service._pick_version(dataset, version)
        picked = row and PickedVersion(
            row.version, row.format, row.labeling, Path(row.path), row.item_count
        )
        project_name = service.projects.resolve(s, caller, project).name
        origin = f"{project_name}/{name}:" + (f"v{picked.version}" if picked else "source")
        original = Original(origin, dataset.id, dataset.kind, Path(dataset.source),
                            dataset.text_field, dataset.item_count, picked)  # fmt: skip
        target_project = service.projects.resolve(s, caller, to_project)
        existing = _target(s, target_project.id, name)
        if existing is not None:
            _check_ours(existing, caller, target_project.name)
            if picked is None or any(v.origin == origin for v in existing.versions):
                return DatasetView.of(existing, target_project.name), "up to date"
    staging = service.root / f".staging-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    try:
        if existing is None:
            _snapshot_source(original, staging / "source")
        if picked is not None:
            entry = _link_version(service.root, original, picked, staging / "version")
        with service.store.write() as s:
            target_project = service.projects.resolve(s, caller, to_project)
            target = _target(s, target_project.id, name, lock=True)
            if target is None:
                if not (staging / "source").exists():  # deleted since it was read
                    raise Conflict(
                        _t("dataset {name!r} changed meanwhile", name=name), _t("Try again.")
                    )
                target = _create(s, service.root, original, staging / "source", caller,
                                 target_project.id, name, read_only)  # fmt: skip
            else:
                _check_ours(target, caller, target_project.name)
                target.read_only = target.read_only or read_only
            if picked is not None and all(v.origin != origin for v in target.versions):
                last = select(func.max(DatasetVersion.version))
                number = (s.scalar(last.where(DatasetVersion.dataset_id == target.id)) or 0) + 1
                final = service.root / str(target.id) / f"v{number}"
                if final.exists():  # left by a crash between rename and commit
                    shutil.rmtree(final)
                (staging / "version").rename(final)
                target.versions.append(
                    DatasetVersion(
                        version=number,
                        format=picked.format,
                        labeling=picked.labeling,
                        path=str(final / entry if entry else final),
                        item_count=picked.item_count,
                        origin=origin,
                        created_by=caller.username,
                    )
                )
            s.flush()
            return DatasetView.of(target, target_project.name), "copied"
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _target(s: Session, project_id: int, name: str, *, lock: bool = False) -> Dataset | None:
    query = select(Dataset).where(Dataset.project_id == project_id, Dataset.name == name)
    return s.scalars(query.with_for_update() if lock else query).first()


def _check_ours(target: Dataset, caller: Caller, project: str) -> None:
    if target.owner != caller.username:
        raise Conflict(
            _t(
                "dataset {name!r} in project {project!r} is {owner}'s",
                name=target.name,
                project=project,
                owner=target.owner,
            ),
            _t("Hand out your dataset under a name nobody uses in that project."),
        )


def _snapshot_source(original: Original, into: Path) -> None:
    """The original's source (a folder of images, a file of texts) copied by the containment
    rule: links leading out of it are left out."""
    if not original.source.exists():
        raise InvalidInput(
            _t("the source of the dataset, {path}, is missing on disk", path=str(original.source)),
            _t("Restore it, or register the dataset again from where its files are now."),
        )
    into.mkdir()
    containment.copy_tree(original.source, into / (original.source.name or "source"))


def _link_version(root: Path, original: Original, version: PickedVersion, into: Path) -> str:
    """The version's folder hard-linked into ``into``; the entry (a file export's name, or "")
    that the copy's path names inside it."""
    path = version.path
    folder = root / str(original.dataset_id) / f"v{version.version}"
    if not path.exists() or not path.is_relative_to(folder):  # exports write only there
        raise InvalidInput(
            _t("version {number} of the dataset is missing on disk", number=version.version),
            _t("Looked for {path}; export the labels again.", path=str(path)),
        )
    containment.link_copy(folder, into)
    entry = path.relative_to(folder).as_posix()
    return "" if entry == "." else entry


def _create(
    s: Session,
    root: Path,
    original: Original,
    source_copy: Path,
    caller: Caller,
    project_id: int,
    name: str,
    read_only: bool,
) -> Dataset:
    """The copy's row and its items (one INSERT ... SELECT), the source snapshot moved in."""
    row = Dataset(
        project_id=project_id,
        owner=caller.username,
        name=name,
        kind=original.kind,
        source="",
        text_field=original.text_field,
        item_count=original.item_count,
        read_only=read_only,
    )
    s.add(row)
    s.flush()
    folder = root / str(row.id)
    if folder.exists():  # left by a crash: no row owned it
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    source_copy.rename(folder / "source")
    row.source = str(folder / "source" / (original.source.name or "source"))
    columns = ["position", "name", "checksum", "size_bytes", "width", "height", "text", "meta"]
    s.execute(
        insert(DatasetItem).from_select(
            ["dataset_id", *columns],
            select(literal(row.id), *(getattr(DatasetItem, c) for c in columns)).where(
                DatasetItem.dataset_id == original.dataset_id
            ),
        )
    )
    return row
