"""``cl.labeling``: create labeling projects over a dataset, assign their tasks, follow the
progress and export the labels as a new dataset version (``LabelingProject`` handles)."""

from __future__ import annotations

import builtins
from typing import Any

from .. import lab_links
from ..errors import InvalidInput
from ..locale.messages import _t
from . import current

Json = dict[str, Any]


class LabelingProject:
    """One labeling project as the service answered (``.data``, its REST JSON, with the
    progress of the last ``refresh()``): ``.assign(users)``, ``.progress()``, ``.export(fmt)``."""

    def __init__(self, data: Json) -> None:
        self.data = data

    name = property(lambda self: str(self.data["name"]))
    project = property(lambda self: str(self.data["project"]))
    dataset = property(lambda self: str(self.data["dataset"]))
    type = property(lambda self: str(self.data["type"]))
    labels = property(lambda self: [str(label["name"]) for label in self.data.get("labels") or []])

    @property
    def url(self) -> str | None:
        """The link that opens this project's view in JupyterLab (None outside a lab)."""
        return lab_links.link("labeling", project=self.project, name=self.name)

    def refresh(self) -> LabelingProject:
        self.data = current().get_labeling(self.project, self.name)
        return self

    # -- the live view (views.LiveView): progress while tasks are still to be labeled -------

    @property
    def id(self) -> str:
        return f"{self.project}/{self.name}"

    def _labeled(self) -> tuple[int, int]:
        p = self.data.get("progress") or {}
        return int(p.get("submitted", 0)) + int(p.get("accepted", 0)), int(p.get("total", 0))

    @property
    def live(self) -> bool:
        labeled, total = self._labeled()
        return labeled < total

    @property
    def done(self) -> bool:
        return not self.live

    @property
    def status(self) -> str:
        return "labeling" if self.live else "done"

    def view_state(self) -> Json:
        labeled, total = self._labeled()
        p = self.data.get("progress") or {}
        counts = ("new", "assigned", "submitted", "accepted", "rejected")
        return {
            "title": _t(
                "Labeling project {project}/{name} ({type} over {dataset})",
                project=self.project,
                name=self.name,
                type=self.type,
                dataset=self.dataset,
            ),
            "status": self.status,
            "error": None,
            "url": self.url,
            "progress": (labeled, total, "tasks"),
            "columns": [*counts],
            "rows": [[p.get(k, 0) for k in counts]] if p else [],
        }

    def view_parts(self) -> builtins.list[Any]:
        """Progress per person and per label, and a few of the dataset's items."""
        from .view_parts import LabelingSummary

        return [LabelingSummary(self)]

    def _ipython_display_(self) -> None:
        from . import views

        views.show(self)

    def progress(self) -> Json:
        """Counts now: total, new, assigned, submitted, accepted, rejected, prelabeled,
        ``by_user`` (each person's assigned / submitted / accepted / rejected) and
        ``by_label`` (items per label in the submitted answers)."""
        return dict(self.refresh().data.get("progress") or {})

    def assign(
        self, users: builtins.list[str], mode: str = "round_robin", batch_size: int | None = None
    ) -> dict[str, int]:
        """Hand the unassigned tasks to ``users`` (``round_robin``, or ``batch`` of
        ``batch_size`` each); how many each got."""
        if isinstance(users, str):
            users = [users]
        body = {"users": users, "mode": mode, "batch_size": batch_size}
        return dict(current().assign_labeling(self.project, self.name, body)["assigned"])

    def export(self, format: str, only: str | None = None, class_order: str | None = None) -> Json:
        """Write the answers (``only``: ``accepted`` or ``submitted``; default both) as a new
        version of the dataset, in ``format`` (coco, yolo, labelstudio, csv, jsonl); its
        ``dataset``, ``version`` (number, path, format...) and ``download_url``. Load it with
        ``cube_lab.datasets.load(dataset, version=...)``."""
        body = {"format": format, "only": only, "class_order": class_order}
        return current().export_labeling(self.project, self.name, body)

    def __repr__(self) -> str:
        p = self.data.get("progress") or {}
        counts = (
            f" {p.get('submitted', 0) + p.get('accepted', 0)}/{p.get('total', 0)} labeled"
            if p
            else ""
        )
        return (
            f"<LabelingProject {self.project}/{self.name} {self.type} over {self.dataset}{counts}>"
        )


def _project(project: str | None) -> str:
    return project or current().personal_project()


def create(
    name: str,
    dataset: str,
    type: str,
    labels: builtins.list[Any],
    project: str | None = None,
    *,
    multi_label: bool | None = None,
    instructions: str | None = None,
    review: bool | None = None,
    reviewers: builtins.list[str] | None = None,
) -> LabelingProject:
    """A labeling project over ``dataset`` (one task per item): ``type`` image-class,
    image-bbox, text-class or text-ner; ``labels`` names (or ``{"name", "color"}``)."""
    body = {
        "name": name,
        "dataset": dataset,
        "type": type,
        "labels": labels,
        "project": project,
        "multi_label": multi_label,
        "instructions": instructions,
        "review": review,
        "reviewers": reviewers,
    }
    return LabelingProject(current().create_labeling(body)).refresh()


def get(name: str, project: str | None = None) -> LabelingProject:
    """The labeling project ``name`` (of your personal project unless ``project``)."""
    if not isinstance(name, str) or not name:
        raise InvalidInput(
            _t("a labeling project name is required"), _t('e.g. cl.labeling.get("mood")')
        )
    return LabelingProject(current().get_labeling(_project(project), name))


def list(project: str | None = None) -> builtins.list[LabelingProject]:
    """The labeling projects you can see (of ``project`` when given)."""
    return [LabelingProject(p) for p in current().list_labeling(project)]


def assign(
    name: str,
    users: builtins.list[str],
    mode: str = "round_robin",
    batch_size: int | None = None,
    project: str | None = None,
) -> dict[str, int]:
    """``get(name).assign(users, ...)``: how many tasks each user got."""
    return get(name, project).assign(users, mode, batch_size)


def progress(name: str, project: str | None = None) -> Json:
    """``get(name).progress()``: the counts, per person and per label."""
    return get(name, project).progress()


def export(
    name: str,
    format: str,
    only: str | None = None,
    class_order: str | None = None,
    project: str | None = None,
) -> Json:
    """``get(name).export(format, ...)``: the dataset version written."""
    return get(name, project).export(format, only, class_order)
