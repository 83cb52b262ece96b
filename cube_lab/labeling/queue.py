"""The task queue: a user's assigned tasks, and the pool of new ones they claim from.

Claiming is a conditional update (``... WHERE id = :candidate AND status = 'new'``) whose
row count says whether this caller won the task. On SQLite the write transaction already
holds the database's write lock (BEGIN IMMEDIATE); on PostgreSQL the candidate is picked
with ``FOR UPDATE SKIP LOCKED``, so concurrent annotators take different rows instead of
queueing on the same one. Either way no task is ever handed to two people.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select, update
from sqlalchemy.orm import Session

from ..errors import InvalidInput
from ..locale.messages import _t
from ..store.models import DatasetItem, LabelingTask, utcnow

MODES = ("round_robin", "batch")
DEFAULT_BATCH = 50
MAX_CLAIM_TRIES = 20
UPDATE_CHUNK = 500


def _skip_locked(s: Session, query: Select[Any]) -> Select[Any]:
    if s.get_bind().dialect.name == "postgresql":
        return query.with_for_update(skip_locked=True)
    return query


def first_assigned(
    s: Session, labeling_id: int, user: str, after: int | None = None
) -> tuple[LabelingTask, DatasetItem] | None:
    """The user's first assigned (not yet submitted) task and its item, after ``after``."""
    query = (
        select(LabelingTask, DatasetItem)
        .join(DatasetItem, DatasetItem.id == LabelingTask.item_id)
        .where(
            LabelingTask.labeling_id == labeling_id,
            LabelingTask.assignee == user,
            LabelingTask.status == "assigned",
        )
    )
    if after is not None:
        query = query.where(LabelingTask.id > after)
    found = s.execute(query.order_by(LabelingTask.id).limit(1)).first()
    return (found[0], found[1]) if found is not None else None


def claim(s: Session, labeling_id: int, user: str) -> int | None:
    """Move the first new task to ``user``; its id, or None when the pool is empty."""
    for _ in range(MAX_CLAIM_TRIES):
        candidate = s.scalar(
            _skip_locked(
                s,
                select(LabelingTask.id)
                .where(LabelingTask.labeling_id == labeling_id, LabelingTask.status == "new")
                .order_by(LabelingTask.id)
                .limit(1),
            )
        )
        if candidate is None:
            return None
        won = s.execute(
            update(LabelingTask)
            .where(LabelingTask.id == candidate, LabelingTask.status == "new")
            .values(status="assigned", assignee=user, updated_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        if won.rowcount == 1:
            return candidate
    return None  # the pool was emptied under us again and again: treat it as empty


def check_mode(mode: object, batch_size: object) -> tuple[str, int | None]:
    if mode not in MODES:
        raise InvalidInput(
            _t("unknown assignment mode {mode!r}", mode=mode),
            _t("Use one of {value}.", value=", ".join(MODES)),
        )
    if batch_size is None:
        return str(mode), DEFAULT_BATCH if mode == "batch" else None
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInput(
            _t("batch_size must be a positive integer"),
            _t("got {batch_size!r}", batch_size=batch_size),
        )
    return str(mode), batch_size


def assign(
    s: Session, labeling_id: int, users: list[str], mode: str, batch_size: int | None
) -> dict[str, int]:
    """Hand new tasks to ``users``: ``batch`` gives each the next ``batch_size`` tasks in a
    block; ``round_robin`` deals them out one by one (all new tasks, or ``batch_size`` each)."""
    if not users:
        raise InvalidInput(_t("give at least one user"), _t('e.g. {{"users": ["alice", "bob"]}}'))
    query = (
        select(LabelingTask.id)
        .where(LabelingTask.labeling_id == labeling_id, LabelingTask.status == "new")
        .order_by(LabelingTask.id)
    )
    if batch_size is not None:
        query = query.limit(batch_size * len(users))
    ids = list(s.scalars(_skip_locked(s, query)))
    if mode == "batch":
        size = batch_size or DEFAULT_BATCH
        groups = {u: ids[i * size : (i + 1) * size] for i, u in enumerate(users)}
    else:
        groups = {u: ids[i :: len(users)] for i, u in enumerate(users)}
    now = utcnow()
    counts: dict[str, int] = {}
    for user, group in groups.items():
        counts[user] = 0
        for start in range(0, len(group), UPDATE_CHUNK):
            done = s.execute(
                update(LabelingTask)
                .where(
                    LabelingTask.id.in_(group[start : start + UPDATE_CHUNK]),
                    LabelingTask.status == "new",
                )
                .values(status="assigned", assignee=user, updated_at=now)
                .execution_options(synchronize_session=False)
            )
            counts[user] += done.rowcount
    return counts
