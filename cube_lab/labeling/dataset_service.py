"""Datasets as a service: register a folder of images or a file of texts, list, show,
serve an item's content, keep the versions (snapshots) that exports write.

Registering reads every source file once (outside any transaction), then inserts the
items in bulk in one transaction: the dataset appears whole or not at all.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from .. import containment
from ..config import Settings
from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..identity import Caller, check_name
from ..locale.messages import _t
from ..projects import ProjectService
from ..store import Store
from ..store.models import Dataset, DatasetItem, DatasetVersion, LabelingProject, Project
from . import datasets as scan
from .permissions import is_project_owner
from .views import DatasetView, FileDownload, VersionView

INSERT_CHUNK = 2000
CONTENT_TYPES = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".bmp": "image/bmp",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


@dataclass(frozen=True)
class DatasetRef:
    """Where a dataset version is on disk: what ``cube_lab.datasets.path`` returns and what a
    model's lineage records. ``version`` None is the dataset as registered (its source folder
    or file), before any export wrote a version."""

    project: str
    name: str
    version: int | None
    path: Path
    format: str  # the export's: coco | yolo | labelstudio | csv | jsonl; "source" for None
    kind: str  # images | texts

    def lineage(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "name": self.name,
            "version": self.version,
            "path": str(self.path),
        }


def datasets_root(settings: Settings) -> Path:
    """Where versions (export snapshots) live: ``<data_dir>/datasets/<id>/v<N>``."""
    return settings.data_dir / "datasets"


def find_by_path(
    s: Session, project_ids: list[int], root: Path, path: str | Path
) -> DatasetRef | None:
    """The dataset version (or dataset source) at ``path``, in one of ``project_ids``: how a
    job's ``$CUBE_LAB_DATASET`` becomes lineage. None for a path that is no dataset's."""
    target = Path(path).expanduser()
    if not target.is_absolute():
        return None
    target = target.resolve()
    query = (
        select(DatasetVersion, Dataset, Project.name)
        .join(Dataset, Dataset.id == DatasetVersion.dataset_id)
        .join(Project, Project.id == Dataset.project_id)
        .where(Dataset.project_id.in_(project_ids))
    )
    if target.is_relative_to(root.resolve()):
        parts = target.relative_to(root.resolve()).parts  # <dataset id>/v<N>[/<file>]
        if len(parts) >= 2 and parts[0].isdigit() and parts[1][1:].isdigit():
            found = s.execute(
                query.where(
                    Dataset.id == int(parts[0]), DatasetVersion.version == int(parts[1][1:])
                )
            ).first()
            if found is not None:
                version, dataset, project = found
                return DatasetRef(
                    project, dataset.name, version.version, Path(version.path),
                    version.format, dataset.kind,
                )  # fmt: skip
    found = s.execute(
        select(Dataset, Project.name)
        .join(Project, Project.id == Dataset.project_id)
        .where(Dataset.project_id.in_(project_ids), Dataset.source == str(target))
        .order_by(Dataset.id)
    ).first()
    if found is None:
        return None
    dataset, project = found
    return DatasetRef(project, dataset.name, None, target, "source", dataset.kind)


class DatasetService:
    def __init__(self, store: Store, projects: ProjectService, settings: Settings) -> None:
        self.store = store
        self.projects = projects
        self.settings = settings

    @property
    def root(self) -> Path:
        """Where versions (export snapshots) live: ``<data_dir>/datasets/<id>/v<N>``."""
        return datasets_root(self.settings)

    # -- create ------------------------------------------------------------------------

    def create(
        self,
        caller: Caller,
        name: object,
        path: Path,
        *,
        project: str | None = None,
        kind: object = None,
        text_field: object = None,
    ) -> DatasetView:
        check_name(name, "dataset name")
        assert isinstance(name, str)
        if kind not in (None, "", "images", "texts"):
            raise InvalidInput(
                _t("unknown dataset kind {kind!r}", kind=kind), _t("Use images or texts.")
            )
        if text_field is not None and (not isinstance(text_field, str) or not text_field):
            raise InvalidInput(_t("text_field must be a column name"), _t('e.g. "text"'))
        source = containment.real(containment.check_text(path))
        if not source.exists():
            raise InvalidInput(
                _t("{path} does not exist", path=path),
                _t(
                    "Give a folder of images or a .csv / .jsonl file (relative paths "
                    "start at the server's root folder, or your working directory on the "
                    "command line)."
                ),
            )
        found_kind = scan.guess_kind(source)
        if kind and kind != found_kind:
            raise InvalidInput(
                _t(
                    "{name} holds {found_kind}, not {kind}",
                    name=path.name,
                    found_kind=found_kind,
                    kind=kind,
                ),
                _t("Images come from a folder, texts from a .csv or .jsonl file."),
            )
        self.projects.ensure_personal(caller)
        with self.store.read() as s:  # fail on a bad project or a taken name before reading
            project_row = self.projects.resolve(s, caller, project)
            self._check_free(s, project_row, name)
        field = str(text_field or "text")
        items = (
            scan.scan_images(source) if found_kind == "images" else scan.read_texts(source, field)
        )
        try:
            with self.store.write() as s:
                project_row = self.projects.resolve(s, caller, project)
                self._check_free(s, project_row, name)
                row = Dataset(
                    project_id=project_row.id,
                    owner=caller.username,
                    name=name,
                    kind=found_kind,
                    source=str(source),
                    text_field=field if found_kind == "texts" else None,
                    item_count=len(items),
                )
                s.add(row)
                s.flush()
                rows = [
                    {
                        "dataset_id": row.id,
                        "position": i.position,
                        "name": i.name,
                        "checksum": i.checksum,
                        "size_bytes": i.size_bytes,
                        "width": i.width,
                        "height": i.height,
                        "text": i.text,
                        "meta": i.meta,
                    }
                    for i in items
                ]
                for start in range(0, len(rows), INSERT_CHUNK):
                    s.execute(insert(DatasetItem), rows[start : start + INSERT_CHUNK])
                return DatasetView.of(row, project_row.name)
        except IntegrityError as exc:  # another request took the name meanwhile
            raise Conflict(
                _t("dataset {name!r} already exists", name=name), _t("Choose another name.")
            ) from exc

    @staticmethod
    def _check_free(s: Session, project: Project, name: str) -> None:
        taken = s.scalar(
            select(Dataset.id).where(Dataset.project_id == project.id, Dataset.name == name)
        )
        if taken is not None:
            raise Conflict(
                _t(
                    "dataset {name!r} already exists in project {name2!r}",
                    name=name,
                    name2=project.name,
                ),
                _t("Choose another name, or use the existing dataset."),
            )

    # -- read --------------------------------------------------------------------------

    def list(self, caller: Caller, project: str | None = None) -> list[DatasetView]:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            rows = s.execute(
                self.projects.visible(s, caller, Dataset, project)
                .options(selectinload(Dataset.versions))
                .order_by(Project.name, Dataset.name)
            ).all()
            return [DatasetView.of(row, project_name) for row, project_name in rows]

    def get(self, caller: Caller, project: str, name: str) -> DatasetView:
        with self.store.read() as s:
            return DatasetView.of(self.dataset(s, caller, project, name), project)

    def dataset(
        self, s: Session, caller: Caller, project: str | None, name: str, lock: bool = False
    ) -> Dataset:
        """The dataset ``name`` in a project the caller is a member of, else NotFound."""
        project_row = self.projects.resolve(s, caller, project)
        query = select(Dataset).where(Dataset.project_id == project_row.id, Dataset.name == name)
        row = s.scalars(query.with_for_update() if lock else query).first()
        if row is None:
            raise NotFound(
                _t(
                    "dataset {name!r} not found in project {name2!r}",
                    name=name,
                    name2=project_row.name,
                ),
                _t("GET /cube/api/v1/datasets lists the datasets you can see."),
            )
        return row

    def item_content(
        self, caller: Caller, project: str, name: str, item_id: int
    ) -> tuple[Path | bytes, str]:
        """(the image file, or the text as bytes; its content type)."""
        with self.store.read() as s:
            dataset = self.dataset(s, caller, project, name)
            item = s.scalars(
                select(DatasetItem).where(
                    DatasetItem.id == item_id, DatasetItem.dataset_id == dataset.id
                )
            ).first()
            if item is None:
                raise NotFound(
                    _t("dataset {name!r} has no item {item_id}", name=name, item_id=item_id)
                )
            if dataset.kind == "texts":
                return (item.text or "").encode("utf-8"), "text/plain; charset=utf-8"
            source, item_name = Path(dataset.source), item.name
        try:
            file = containment.resolve(source, item_name, absolute="refuse", what="item")
        except containment.PathRefused:
            file = source  # a name leading out of the source (a link since): not served
        if file == source or not file.is_file():
            raise NotFound(
                _t(
                    "the image {item_name} of dataset {name!r} is missing on disk",
                    item_name=item_name,
                    name=name,
                ),
                _t(
                    (
                        "It was registered from {source}; restore the file or create the "
                        "dataset again."
                    ),
                    source=source,
                ),
            )
        return file, CONTENT_TYPES.get(file.suffix.lower(), "application/octet-stream")

    def resolve(
        self,
        caller: Caller,
        name: str,
        version: int | str | None = None,
        project: str | None = None,
    ) -> DatasetRef:
        """Where a dataset version is: ``version`` None (or "latest") is the newest export,
        or the dataset's source when nothing was exported yet; "source" asks for the source.
        Without ``project`` the dataset is looked for in the personal project, then in the
        caller's other projects (it must be the only one of that name there)."""
        check_name(name, "dataset name")
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            dataset, project_name = self._find(s, caller, name, project)
            row = self._pick_version(dataset, version)
            if row is None:
                ref = DatasetRef(
                    project_name, name, None, Path(dataset.source), "source", dataset.kind
                )
            else:
                ref = DatasetRef(
                    project_name, name, row.version, Path(row.path), row.format, dataset.kind
                )
        if not ref.path.exists():
            what = _t("version {version}", version=ref.version) if ref.version else _t("the source")
            raise NotFound(
                _t("{what} of dataset {name!r} is missing on disk", what=what, name=name),
                _t("Looked for {path}; export the labels again.", path=str(ref.path))
                if ref.version
                else _t("Looked for {path}; restore it.", path=str(ref.path)),
            )
        return ref

    def _find(
        self, s: Session, caller: Caller, name: str, project: str | None
    ) -> tuple[Dataset, str]:
        if project:
            return self.dataset(s, caller, project, name), project
        personal = self.projects.resolve(s, caller, None)
        rows = s.execute(
            self.projects.visible(s, caller, Dataset)
            .where(Dataset.name == name)
            .options(selectinload(Dataset.versions))
        ).all()
        mine = [r for r in rows if r[0].project_id == personal.id]
        if mine:
            return mine[0][0], mine[0][1]
        if len(rows) == 1:
            return rows[0][0], rows[0][1]
        if not rows:
            raise NotFound(
                _t("dataset {name!r} not found in your projects", name=name),
                _t(
                    "GET /cube/api/v1/datasets (or `cube-lab label datasets`) lists the "
                    "datasets you can see."
                ),
            )
        projects = sorted(r[1] for r in rows)
        raise InvalidInput(
            _t(
                "dataset {name!r} is in several of your projects: {value}",
                name=name,
                value=", ".join(projects),
            ),
            _t("Say which: project={value!r}.", value=projects[0]),
        )

    @staticmethod
    def _pick_version(dataset: Dataset, version: int | str | None) -> DatasetVersion | None:
        text = "latest" if version is None else str(version).strip().removeprefix("v")
        if text == "source":
            return None
        if text == "latest":
            return dataset.versions[-1] if dataset.versions else None
        row = next((v for v in dataset.versions if str(v.version) == text), None)
        if row is None:
            known = ", ".join(str(v.version) for v in dataset.versions) or "none yet"
            raise NotFound(
                _t(
                    "dataset {name!r} has no version {version!r}",
                    name=dataset.name,
                    version=version,
                ),
                _t(
                    (
                        "Versions: {known}. An export of a labeling project creates one; "
                        "version=None takes the newest."
                    ),
                    known=known,
                ),
            )
        return row

    def items(self, caller: Caller, project: str, name: str) -> list[dict[str, Any]]:
        """The dataset's items as registered, in order: id (for ``item_content``), name,
        width/height (images) or text (texts), and the text rows' other fields."""
        with self.store.read() as s:
            dataset = self.dataset(s, caller, project, name)
            rows = s.execute(
                select(
                    DatasetItem.id,
                    DatasetItem.name,
                    DatasetItem.width,
                    DatasetItem.height,
                    DatasetItem.text,
                    DatasetItem.meta,
                )
                .where(DatasetItem.dataset_id == dataset.id)
                .order_by(DatasetItem.position)
            ).all()
            images = dataset.kind == "images"
        if images:
            return [{"id": i, "name": n, "width": w, "height": h} for i, n, w, h, _, _ in rows]
        return [{**(m or {}), "id": i, "name": n, "text": t} for i, n, _, _, t, m in rows]

    def find_by_path(self, caller: Caller, path: str | Path) -> DatasetRef | None:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            return find_by_path(s, self.projects.visible_ids(s, caller), self.root, path)

    # -- versions ------------------------------------------------------------------------

    def add_version(
        self,
        caller: Caller,
        dataset_id: int,
        fmt: str,
        labeling: str,
        item_count: int,
        write: Callable[[Path], str],
    ) -> VersionView:
        """Write a snapshot with ``write(folder) -> file name or ""`` into a temporary
        folder, then number it and move it into place in one transaction, so a version
        is never seen half-written and two exports never get the same number."""
        with self.store.read() as s:
            found = s.get(Dataset, dataset_id)
            if found is not None:
                self._check_may_add(caller, found)
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / f".staging-{uuid.uuid4().hex}"
        staging.mkdir()
        final: Path | None = None
        try:
            entry = write(staging)
            with self.store.write() as s:
                dataset = s.scalars(
                    select(Dataset).where(Dataset.id == dataset_id).with_for_update()
                ).one()
                number = (
                    s.scalar(
                        select(func.max(DatasetVersion.version)).where(
                            DatasetVersion.dataset_id == dataset.id
                        )
                    )
                    or 0
                ) + 1
                final = self.root / str(dataset.id) / f"v{number}"
                final.parent.mkdir(parents=True, exist_ok=True)
                if final.exists():  # left by a crash between rename and commit
                    shutil.rmtree(final)
                staging.rename(final)
                row = DatasetVersion(
                    dataset_id=dataset.id,
                    version=number,
                    format=fmt,
                    labeling=labeling,
                    path=str(final / entry if entry else final),
                    item_count=item_count,
                    created_by=caller.username,
                )
                s.add(row)
                s.flush()
                return VersionView.of(row)
        except BaseException:
            shutil.rmtree(final if final is not None and final.exists() else staging, True)
            raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def version_download(
        self, caller: Caller, project: str, name: str, version: int | str
    ) -> FileDownload:
        with self.store.read() as s:
            dataset = self.dataset(s, caller, project, name)
            text = str(version).removeprefix("v")
            row = next((v for v in dataset.versions if str(v.version) == text), None)
            if row is None:
                known = ", ".join(str(v.version) for v in dataset.versions) or "none yet"
                raise NotFound(
                    _t("dataset {name!r} has no version {version!r}", name=name, version=version),
                    _t("Versions: {known}. An export creates one.", known=known),
                )
            path, number = Path(row.path), row.version
        if not path.exists():
            raise NotFound(
                _t("version {number} of {name!r} is missing on disk", number=number, name=name),
                str(path),
            )
        stem = f"{name}-v{number}"
        filename = f"{stem}-{path.name}" if path.is_file() else stem
        return FileDownload(path, filename, path.is_dir())

    # -- delete ----------------------------------------------------------------------------

    def delete(self, caller: Caller, project: str, name: str) -> None:
        with self.store.write() as s:
            dataset = self.dataset(s, caller, project, name, lock=True)
            used = s.scalars(
                select(LabelingProject.name).where(LabelingProject.dataset_id == dataset.id)
            ).all()
            if used:
                raise Conflict(
                    _t(
                        "dataset {name!r} is used by labeling project(s) {value}",
                        name=name,
                        value=sorted(used),
                    ),
                    _t("Delete those labeling projects first."),
                )
            self._check_may_change(s, caller, dataset)
            folder = self.root / str(dataset.id)
            s.delete(dataset)
        shutil.rmtree(folder, ignore_errors=True)

    @staticmethod
    def _check_may_add(caller: Caller, dataset: Dataset) -> None:
        """Course material (``read_only``, a teacher's hand-out) gets versions from its owner
        (or an admin) only: what the class loads as the newest never changes under them."""
        if dataset.read_only and not caller.may_change(dataset.owner):
            raise Forbidden(
                _t(
                    "dataset {name!r} is read-only course material of {owner}",
                    name=dataset.name,
                    owner=dataset.owner,
                ),
                _t(
                    "Read it as it is; to label it yourself, register its files as a dataset "
                    "of your own (cube_lab.datasets.path gives the folder)."
                ),
            )

    @staticmethod
    def _check_may_change(s: Session, caller: Caller, dataset: Dataset) -> None:
        if dataset.owner != caller.username and not is_project_owner(s, dataset.project_id, caller):
            raise Forbidden(
                _t(
                    "only {owner} or a project owner may delete dataset {name!r}",
                    owner=dataset.owner,
                    name=dataset.name,
                ),
                _t("Ask them to delete it."),
            )
