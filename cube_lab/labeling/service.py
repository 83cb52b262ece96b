"""Labeling projects as a service: create one over a dataset (one task per item), hand out
tasks (assign, next), save drafts and submissions, review, progress, and delegate to the
pre-label, export and import modules.

Plain Python like the other services: the REST handlers and the CLI call these methods
with the ``Caller``; a caller sees labeling projects only in projects they are a member of.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Boolean, DateTime, Integer, String, func, insert, literal, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..config import Settings
from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..identity import Caller, check_name
from ..locale.messages import _t
from ..projects import ProjectService, check_page_limit
from ..store import Store
from ..store.models import (
    Dataset,
    DatasetItem,
    LabelingProject,
    LabelingTask,
    Project,
    ProjectMember,
    utcnow,
)
from . import exports, permissions, queue
from .annotations import Target, check_result
from .dataset_service import DatasetService
from .labelset import DATASET_KIND, check_type, normalize_labels
from .progress import progress
from .views import ExportView, LabelingView, TaskView, dataset_url

if TYPE_CHECKING:
    from ..registry.service import RegistryService

TASK_FILTERS = ("new", "assigned", "submitted", "accepted", "rejected")
MAX_PAGE = 500
MAX_INSTRUCTIONS = 100_000
# export filter -> task statuses; "submitted" means at least submitted
EXPORT_ONLY: dict[object, tuple[str, ...]] = {
    None: ("submitted", "accepted"),
    "submitted": ("submitted", "accepted"),
    "accepted": ("accepted",),
}


@dataclass(frozen=True)
class Context:
    """A labeling project and what its views need, copied out of the session (a read
    session's rollback expires ORM rows), so it stays usable between transactions."""

    project: str
    project_id: int
    labeling_id: int
    name: str
    type: str
    multi_label: bool
    labels: tuple[str, ...]
    review: bool
    reviewers: tuple[str, ...]
    owner: str
    dataset_id: int
    dataset: str
    kind: str
    source: str

    @classmethod
    def of(cls, project: Project, row: LabelingProject, dataset: Dataset) -> Context:
        return cls(
            project.name,
            project.id,
            row.id,
            row.name,
            row.type,
            row.multi_label,
            tuple(label["name"] for label in row.labels),
            row.review,
            tuple(row.reviewers or ()),
            row.owner,
            dataset.id,
            dataset.name,
            dataset.kind,
            dataset.source,
        )

    def target(self, item: DatasetItem) -> Target:
        return Target(self.type, self.labels, self.multi_label, item.width, item.height, item.text)

    def view(self, task: LabelingTask, item: DatasetItem) -> TaskView:
        return TaskView.of(task, item, self.project, self.dataset, self.kind)


def _flag(value: object, name: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidInput(
            _t("{name} must be true or false", name=name), _t("got {value!r}", value=value)
        )
    return value


class LabelingService:
    def __init__(
        self,
        store: Store,
        projects: ProjectService,
        settings: Settings,
        datasets: DatasetService,
        registry: Callable[[], RegistryService],
    ) -> None:
        self.store = store
        self.projects = projects
        self.settings = settings
        self.datasets = datasets
        self._registry = registry

    # -- labeling projects ---------------------------------------------------------------

    def create(
        self,
        caller: Caller,
        name: object,
        *,
        dataset: object,
        type: object,
        labels: object,
        project: str | None = None,
        multi_label: object = None,
        instructions: object = None,
        review: object = None,
        reviewers: object = None,
    ) -> LabelingView:
        check_name(name, "labeling project name")
        assert isinstance(name, str)
        task_type = check_type(type)
        label_specs = normalize_labels(labels)
        multi = _flag(multi_label, "multi_label", False)
        if multi and not task_type.endswith("-class"):
            raise InvalidInput(
                _t("multi_label applies to classification, not {task_type}", task_type=task_type),
                _t("Boxes and spans already take any number of labels per item."),
            )
        if instructions is not None and not isinstance(instructions, str):
            raise InvalidInput(_t("instructions must be a string (Markdown)"))
        if instructions and len(instructions) > MAX_INSTRUCTIONS:
            raise InvalidInput(
                _t(
                    "instructions are longer than {MAX_INSTRUCTIONS:,} characters",
                    MAX_INSTRUCTIONS=MAX_INSTRUCTIONS,
                )
            )
        if not isinstance(dataset, str) or not dataset:
            raise InvalidInput(
                _t("dataset is required"), _t("Give the name of a dataset in the project.")
            )
        self.projects.ensure_personal(caller)
        try:
            with self.store.write() as s:
                project_row = self.projects.resolve(s, caller, project)
                data = self.datasets.dataset(s, caller, project_row.name, dataset)
                if DATASET_KIND[task_type] != data.kind:
                    raise InvalidInput(
                        _t(
                            (
                                "a {task_type} project needs a dataset of {value}, and "
                                "{name!r} holds {kind}"
                            ),
                            task_type=task_type,
                            value=DATASET_KIND[task_type],
                            name=data.name,
                            kind=data.kind,
                        ),
                        _t("image-* types label folders of images; text-* types label CSV/JSONL."),
                    )
                checked_reviewers = permissions.check_users(
                    s, project_row.id, reviewers or [], "reviewers"
                )
                if s.scalar(
                    select(LabelingProject.id).where(
                        LabelingProject.project_id == project_row.id,
                        LabelingProject.name == name,
                    )
                ):
                    raise Conflict(
                        _t(
                            "labeling project {name!r} already exists in {name2!r}",
                            name=name,
                            name2=project_row.name,
                        ),
                        _t("Choose another name."),
                    )
                row = LabelingProject(
                    project_id=project_row.id,
                    owner=caller.username,
                    name=name,
                    dataset_id=data.id,
                    type=task_type,
                    multi_label=multi,
                    labels=label_specs,
                    instructions=instructions or "",
                    review=_flag(review, "review", True),
                    reviewers=checked_reviewers,
                )
                s.add(row)
                s.flush()
                # one task per item, in dataset order, by one INSERT ... SELECT
                s.execute(
                    insert(LabelingTask).from_select(
                        ["labeling_id", "item_id", "status", "rejected", "updated_at"],
                        select(
                            literal(row.id, Integer),
                            DatasetItem.id,
                            literal("new", String),
                            literal(False, Boolean),
                            literal(utcnow(), DateTime(timezone=True)),
                        )
                        .where(DatasetItem.dataset_id == data.id)
                        .order_by(DatasetItem.position),
                    )
                )
                return LabelingView.of(row, project_row.name, data.name)
        except IntegrityError as exc:
            raise Conflict(_t("labeling project {name!r} already exists", name=name)) from exc

    def list(self, caller: Caller, project: str | None = None) -> list[LabelingView]:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            rows = s.execute(
                self.projects.visible(s, caller, LabelingProject, project)
                .join(Dataset, Dataset.id == LabelingProject.dataset_id)
                .add_columns(Dataset.name)
                .order_by(Project.name, LabelingProject.name)
            ).all()
            return [
                LabelingView.of(row, project_name, dataset_name, progress(s, row.id, _names(row)))
                for row, project_name, dataset_name in rows
            ]

    def get(self, caller: Caller, project: str, name: str) -> LabelingView:
        with self.store.read() as s:
            project_row = self.projects.resolve(s, caller, project)
            row, data = self._rows(s, project_row, name)
            return LabelingView.of(
                row, project_row.name, data.name, progress(s, row.id, _names(row))
            )

    def delete(self, caller: Caller, project: str, name: str) -> None:
        with self.store.write() as s:
            project_row = self.projects.resolve(s, caller, project)
            row, _ = self._rows(s, project_row, name)
            permissions.check_manage(s, Context.of(project_row, row, _), caller, "delete it")
            s.delete(row)

    def _context(self, s: Session, caller: Caller, project: str | None, name: str) -> Context:
        if project:  # the hot path (every task request): membership and rows in one query
            found = s.execute(
                select(Project, LabelingProject, Dataset)
                .join(
                    ProjectMember,
                    (ProjectMember.project_id == Project.id)
                    & (ProjectMember.username == caller.username),
                )
                .join(LabelingProject, LabelingProject.project_id == Project.id)
                .join(Dataset, Dataset.id == LabelingProject.dataset_id)
                .where(Project.name == project, LabelingProject.name == name)
            ).first()
            if found is not None:
                return Context.of(found[0], found[1], found[2])
        # not found: the slow path raises the precise NotFound (project or labeling project)
        project_row = self.projects.resolve(s, caller, project)
        return Context.of(project_row, *self._rows(s, project_row, name))

    @staticmethod
    def _rows(s: Session, project: Project, name: str) -> tuple[LabelingProject, Dataset]:
        found = s.execute(
            select(LabelingProject, Dataset)
            .join(Dataset, Dataset.id == LabelingProject.dataset_id)
            .where(LabelingProject.project_id == project.id, LabelingProject.name == name)
        ).first()
        if found is None:
            raise NotFound(
                _t(
                    "labeling project {name!r} not found in project {name2!r}",
                    name=name,
                    name2=project.name,
                ),
                _t("GET /cube/api/v1/labeling lists the labeling projects you can see."),
            )
        return found[0], found[1]

    # -- the queue ------------------------------------------------------------------------

    def assign(
        self,
        caller: Caller,
        project: str,
        name: str,
        users: object,
        mode: object = "round_robin",
        batch_size: object = None,
    ) -> dict[str, int]:
        checked_mode, size = queue.check_mode(mode or "round_robin", batch_size)
        with self.store.write() as s:
            ctx = self._context(s, caller, project, name)
            permissions.check_manage(s, ctx, caller, "assign its tasks")
            members = permissions.check_users(s, ctx.project_id, users, "users")
            return queue.assign(s, ctx.labeling_id, members, checked_mode, size)

    def next(
        self, caller: Caller, project: str, name: str, after: object = None
    ) -> TaskView | None:
        """The caller's first assigned task (after ``after``), else one claimed from the
        pool, else (when ``after`` skipped past them) the caller's first one; None if none."""
        if after is not None and (isinstance(after, bool) or not isinstance(after, int)):
            raise InvalidInput(
                _t("after must be a task id (an integer)"), _t("got {after!r}", after=after)
            )
        user = caller.username
        with self.store.read() as s:
            ctx = self._context(s, caller, project, name)
            found = queue.first_assigned(s, ctx.labeling_id, user, after)
            if found is not None:
                return ctx.view(*found)
        with self.store.write() as s:  # the queue is empty: claim from the pool
            claimed = queue.claim(s, ctx.labeling_id, user)
            if claimed is not None:
                task = s.get(LabelingTask, claimed)
                assert task is not None
                return ctx.view(task, self._item(s, task))
        if after is None:
            return None
        with self.store.read() as s:  # wrap around to tasks the caller skipped
            found = queue.first_assigned(s, ctx.labeling_id, user)
            return ctx.view(*found) if found is not None else None

    def list_tasks(
        self,
        caller: Caller,
        project: str,
        name: str,
        *,
        status: str | None = None,
        assignee: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> dict[str, Any]:
        if status and status not in TASK_FILTERS:
            raise InvalidInput(
                _t("unknown status {status!r}", status=status),
                _t("Use one of {value}.", value=", ".join(TASK_FILTERS)),
            )
        check_page_limit(limit, MAX_PAGE)
        if offset < 0:
            raise InvalidInput(_t("offset must be 0 or more"), _t("got {offset}", offset=offset))
        with self.store.read() as s:
            ctx = self._context(s, caller, project, name)
            where: list[Any] = [LabelingTask.labeling_id == ctx.labeling_id]
            if status == "rejected":
                where.append(LabelingTask.rejected.is_(True))
            elif status:
                where.append(LabelingTask.status == status)
            if assignee:
                where.append(
                    LabelingTask.assignee == (caller.username if assignee == "me" else assignee)
                )
            total = s.scalar(select(func.count(LabelingTask.id)).where(*where)) or 0
            rows = s.execute(
                select(LabelingTask, DatasetItem)
                .join(DatasetItem, DatasetItem.id == LabelingTask.item_id)
                .where(*where)
                .order_by(LabelingTask.id)
                .limit(limit)
                .offset(offset)
            ).all()
            return {"tasks": [ctx.view(t, i) for t, i in rows], "total": total}

    def get_task(self, caller: Caller, project: str, name: str, task_id: int) -> TaskView:
        with self.store.read() as s:
            ctx = self._context(s, caller, project, name)
            task = self._task(s, ctx, task_id)
            return ctx.view(task, self._item(s, task))

    def save(
        self,
        caller: Caller,
        project: str,
        name: str,
        task_id: int,
        result: object,
        submit: object = False,
    ) -> TaskView:
        """A draft (autosave: status stays ``assigned``) or, with ``submit``, the answer."""
        submitting = _flag(submit, "submit", False)
        with self.store.write() as s:
            ctx = self._context(s, caller, project, name)
            task = self._task(s, ctx, task_id, lock=True)
            if task.assignee != caller.username:
                raise Forbidden(
                    _t(
                        "task {id} is not in your queue (it is {assignee}'s)",
                        id=task_id,
                        assignee=task.assignee,
                    )
                    if task.assignee
                    else _t("task {id} is not in your queue", id=task_id),
                    _t("POST .../next gives you your next task."),
                )
            if task.status != "assigned":
                raise Conflict(
                    _t(
                        "task {task_id} is {status} and can no longer be changed",
                        task_id=task_id,
                        status=task.status,
                    ),
                    _t(
                        "Only tasks in your queue (assigned, or rejected by a reviewer) take edits."
                    ),
                )
            item = self._item(s, task)
            task.result = check_result(ctx.target(item), result, submit=submitting)
            if submitting:
                task.status = "submitted"
                task.rejected = False
            task.updated_at = utcnow()
            s.flush()
            return ctx.view(task, item)

    def review(
        self,
        caller: Caller,
        project: str,
        name: str,
        task_id: int,
        decision: object,
        comment: object = None,
    ) -> TaskView:
        if decision not in ("accept", "reject"):
            raise InvalidInput(
                _t("unknown decision {decision!r}", decision=decision), _t("Use accept or reject.")
            )
        if comment is not None and not isinstance(comment, str):
            raise InvalidInput(_t("comment must be a string"))
        with self.store.write() as s:
            ctx = self._context(s, caller, project, name)
            if not ctx.review:
                raise Conflict(
                    _t("labeling project {name!r} has no review step", name=name),
                    _t("Its submitted tasks are final (it was created with review: false)."),
                )
            permissions.check_reviewer(s, ctx, caller)
            task = self._task(s, ctx, task_id, lock=True)
            if task.assignee == caller.username:
                raise Forbidden(_t("you cannot review your own work"), _t("Ask another reviewer."))
            if task.status != "submitted":
                raise Conflict(
                    _t(
                        "task {task_id} is {status}; only submitted tasks can be reviewed",
                        task_id=task_id,
                        status=task.status,
                    ),
                    _t("GET .../tasks?status=submitted lists the tasks waiting for review."),
                )
            task.reviewer = caller.username
            task.review_comment = comment or None
            if decision == "accept":
                task.status, task.rejected = "accepted", False
            else:  # back to the annotator's queue, with the comment
                task.status, task.rejected = "assigned", True
            task.updated_at = utcnow()
            s.flush()
            return ctx.view(task, self._item(s, task))

    @staticmethod
    def _task(s: Session, ctx: Context, task_id: int, lock: bool = False) -> LabelingTask:
        query = select(LabelingTask).where(
            LabelingTask.id == task_id, LabelingTask.labeling_id == ctx.labeling_id
        )
        task = s.scalars(query.with_for_update() if lock else query).first()
        if task is None:
            raise NotFound(
                _t(
                    "labeling project {name!r} has no task {task_id}",
                    name=ctx.name,
                    task_id=task_id,
                )
            )
        return task

    @staticmethod
    def _item(s: Session, task: LabelingTask) -> DatasetItem:
        item = s.get(DatasetItem, task.item_id)
        assert item is not None  # the foreign key cascades
        return item

    # -- pre-labels, export, import -----------------------------------------------------

    def prelabel(
        self,
        caller: Caller,
        project: str,
        name: str,
        model: object,
        version: object = None,
        threshold: object = None,
        limit: object = None,
    ) -> int:
        from . import prelabel

        return prelabel.run(self, caller, project, name, model, version, threshold, limit)

    def export(
        self,
        caller: Caller,
        project: str,
        name: str,
        fmt: object,
        only: object = None,
        class_order: object = None,
    ) -> ExportView:
        """``class_order``: "declared" (label-set order, the default) or "alphabetical" (class
        ids as Label Studio's converter gives them); see exports.CLASS_ORDERS."""
        if not isinstance(only, str | None) or only not in EXPORT_ONLY:
            raise InvalidInput(
                _t("unknown filter only={only!r}", only=only), _t("Use accepted or submitted.")
            )
        with self.store.read() as s:
            ctx = self._context(s, caller, project, name)
            exports.check_format(fmt, ctx.type)
            order = exports.check_class_order(class_order, str(fmt))
            rows = s.execute(
                select(LabelingTask, DatasetItem)
                .join(DatasetItem, DatasetItem.id == LabelingTask.item_id)
                .where(
                    LabelingTask.labeling_id == ctx.labeling_id,
                    LabelingTask.status.in_(EXPORT_ONLY[only]),
                )
                .order_by(DatasetItem.position)
            ).all()
            job = exports.ExportJob(
                labeling=ctx.name,
                task_type=ctx.type,
                multi_label=ctx.multi_label,
                labels=exports.ordered_labels(list(ctx.labels), order),
                source=Path(ctx.source),
                rows=[exports.Row.of(task, item) for task, item in rows],
                content_url=lambda item_id: dataset_url(
                    ctx.project, ctx.dataset, "items", item_id, "content"
                ),
                class_order=order,
            )
        if not job.rows:
            wanted = " or ".join(EXPORT_ONLY[only])
            raise InvalidInput(
                _t(
                    "nothing to export: no task of {name!r} is {wanted} yet",
                    name=name,
                    wanted=wanted,
                ),
                _t("Submit (and, with review, accept) some tasks first."),
            )
        version = self.datasets.add_version(
            caller,
            ctx.dataset_id,
            str(fmt),
            ctx.name,
            len(job.rows),
            lambda folder: exports.write(str(fmt), job, folder),
        )
        return ExportView(
            ctx.dataset,
            version,
            dataset_url(ctx.project, ctx.dataset, "versions", version.version, "download"),
        )

    def import_labels(
        self,
        caller: Caller,
        project: str,
        name: str,
        fmt: object,
        data: object,
        pick: object = None,
    ) -> dict[str, Any]:
        """Import Label Studio JSON; ``pick`` chooses among several annotations of a task
        (newest by created_at, oldest, first, last); see exports/labelstudio.py."""
        from .exports import labelstudio

        rule = labelstudio.check_pick(pick)
        if fmt != "labelstudio":
            raise InvalidInput(
                _t("cannot import format {fmt!r}", fmt=fmt),
                _t("Import Label Studio JSON: labelstudio."),
            )
        if not isinstance(data, list):
            raise InvalidInput(
                _t("data must be a list of Label Studio tasks"),
                _t('A Label Studio JSON export: [{{"data": {{...}}, "annotations": [...]}}, ...]'),
            )
        with self.store.write() as s:
            ctx = self._context(s, caller, project, name)
            permissions.check_manage(s, ctx, caller, "import labels into it")
            rows = s.execute(
                select(LabelingTask, DatasetItem)
                .join(DatasetItem, DatasetItem.id == LabelingTask.item_id)
                .where(LabelingTask.labeling_id == ctx.labeling_id)
            ).all()
            return labelstudio.apply_import(ctx, caller, data, rows, rule)


def _names(row: LabelingProject) -> list[str]:
    return [label["name"] for label in row.labels]
