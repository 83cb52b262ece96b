"""Progress of a labeling project: tasks per status, per annotator and per label.

``assigned`` counts tasks in someone's queue (a rejected task is back there and counts
as assigned too); ``rejected`` counts those sent back and not resubmitted yet. Labels are
counted over submitted and accepted results, one per occurrence (each box, each span).
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.models import LabelingTask
from .annotations import labels_used
from .views import Progress, UserProgress

STATUSES = ("new", "assigned", "submitted", "accepted")


def progress(s: Session, labeling_id: int, label_names: list[str]) -> Progress:
    out = Progress(by_label=dict.fromkeys(label_names, 0))
    rows = s.execute(
        select(
            LabelingTask.status,
            LabelingTask.assignee,
            LabelingTask.rejected,
            func.count(),
            func.count(LabelingTask.prediction_model),
        )
        .where(LabelingTask.labeling_id == labeling_id)
        .group_by(LabelingTask.status, LabelingTask.assignee, LabelingTask.rejected)
    ).all()
    for status, assignee, rejected, count, predicted in rows:
        out.total += count
        out.prelabeled += predicted
        if status in STATUSES:
            setattr(out, status, getattr(out, status) + count)
        if rejected:
            out.rejected += count
        if assignee:
            user = out.by_user.setdefault(assignee, UserProgress())
            if status in ("assigned", "submitted", "accepted"):
                setattr(user, status, getattr(user, status) + count)
            if rejected:
                user.rejected += count
    counter: Counter[str] = Counter()
    for (result,) in s.execute(
        select(LabelingTask.result).where(
            LabelingTask.labeling_id == labeling_id,
            LabelingTask.status.in_(("submitted", "accepted")),
        )
    ):
        counter.update(labels_used(result))
    for label, count in counter.items():
        out.by_label[label] = out.by_label.get(label, 0) + count
    out.by_user = dict(sorted(out.by_user.items()))
    return out
