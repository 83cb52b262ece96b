"""Course material in cube-lab's store (issue 24): what the cube-lab service, which owns the
store, does for the hub's cube-admin service, which decides who teaches and who studies.

- ``hand_out``: a teacher's registered models and dataset versions go into the course's
  project (every member of the course sees it) as read-only course material: members read,
  download, deploy and fine-tune from them; only the teacher (or an admin) changes them. A
  model or dataset already in the course's project is made read-only where it is. The copies
  link the files (versions never change), so a class of 60 costs one copy, not 60.
- ``collect``: what a student's assignment folder (``course/C/H`` in their home) references
  in the store: the pipeline runs of ``.pipeline`` files in it, the training jobs and tuning
  experiments started from it, and the models registered from its notebooks and scripts or
  by those runs. Each model version is copied into the teacher's personal project as
  ``<course>.<handout>.<model>``, one version per student, tagged with the student; each run
  is written down as a record with its log tails, for the snapshot of the folder.

Plain Python over ``Workspace``; ``course_material_api`` is its handler.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import select

from ..errors import NotFound
from ..identity import Caller
from ..labeling.dataset_copy import copy_dataset
from ..locale.messages import _t
from ..projects.service import personal_name
from ..registry.views import VersionView
from ..serialize import to_jsonable
from ..store.models import (
    ModelVersion,
    PipelineRun,
    Project,
    RegisteredModel,
    TrainingJob,
    TuningExperiment,
)
from ..workspace import Workspace
from .course_refs import parse_refs

MAX_RUNS = 20  # newest runs of each kind in one collection
LOG_TAIL = 32 * 1024  # bytes of each log a collection keeps
TAGS = ("cube_lab.course", "cube_lab.handout", "cube_lab.student")


def under(path: str | None, folder: Path, relative: str) -> bool:
    """Whether ``path`` (absolute, or relative to the home, as lineage records a notebook)
    lies in the assignment folder."""
    if not path:
        return False
    if path.startswith("/"):
        return Path(path).is_relative_to(folder) or Path(path).is_relative_to(folder.resolve())
    return path == relative or path.startswith(relative + "/")


class CourseMaterial:
    """``home(user)``: the user's home folder (where assignment folders are)."""

    def __init__(self, workspace: Workspace, home: Callable[[str], Path]) -> None:
        self.workspace = workspace
        self.home = home

    # -- hand-out -------------------------------------------------------------------------

    def hand_out(
        self, *, teacher: str, course: str, handout: str, models: Any, datasets: Any
    ) -> dict[str, Any]:
        """Put ``models`` and ``datasets`` (references, ``parse_refs``) of ``teacher``'s into
        ``course``'s project, read-only; all are looked up before anything is copied."""
        model_refs = parse_refs(models, _t("models"))
        dataset_refs = parse_refs(datasets, _t("datasets"))
        caller = Caller(teacher)
        ws = self.workspace
        ws.projects.ensure_personal(caller)
        ws.projects.join_groups(teacher, [course])  # the hub says they are a member
        originals = []
        for ref in model_refs:
            project = ref.project or personal_name(teacher)
            version = ws.registry.get_version(caller, project, ref.name, ref.version or "latest")
            path = ws.registry.download(caller, project, ref.name, version.version).path
            originals.append((ref, version, path))
        for ref in dataset_refs:  # a missing dataset or version fails here, not half-way
            project = ref.project or personal_name(teacher)
            ws.datasets.resolve(caller, ref.name, ref.version, project)
        tags = {"cube_lab.course": course, "cube_lab.handout": handout}
        out: dict[str, list[dict[str, Any]]] = {"models": [], "datasets": []}
        for ref, version, path in originals:
            origin = f"{version.project}/{version.model}:v{version.version}"
            if version.project == course:  # already the class's: made read-only where it is
                ws.registry.update_model(caller, course, version.model, read_only=True)
                copy, status = version, "in place"
            else:
                copy, copied = ws.registry.register_copy(
                    caller, version, path, name=version.model, project=course, tags=tags,
                    read_only=True,
                )  # fmt: skip
                status = "copied" if copied else "up to date"
            out["models"].append({"ref": ref.given, "from": origin, "status": status,
                                  "to": _model_ref(copy)})  # fmt: skip
        for ref in dataset_refs:
            view, status = copy_dataset(
                ws.datasets, caller, ref.name, ref.version,
                project=ref.project or personal_name(teacher), to_project=course, read_only=True,
            )  # fmt: skip
            picked = next((v for v in reversed(view.versions) if v.origin), None)
            out["datasets"].append(
                {
                    "ref": ref.given,
                    "status": status,
                    "to": {"project": view.project, "name": view.name,
                           "version": picked.version if picked else None},
                }
            )  # fmt: skip
        return out

    # -- collection -----------------------------------------------------------------------

    def collect(
        self, *, student: str, teacher: str, course: str, handout: str, folder: str
    ) -> dict[str, Any]:
        """What ``student``'s ``folder`` references: ``{"runs": [records], "models": [{"from",
        "to"}], "logs": {relative path: text}}``; the models copied to ``teacher``."""
        base = self.home(student) / folder
        caller = Caller(student)
        ws = self.workspace
        ws.projects.ensure_personal(caller)
        runs = self._runs(caller, base)
        run_ids = {r["id"] for r in runs}
        logs = self._logs(caller, runs)
        copies = []
        for version, path in self._models(caller, base, folder, run_ids):
            name = f"{course}.{handout}.{version.model}"[:128]
            tags = dict(zip(TAGS, (course, handout, student), strict=True))
            copy, _ = ws.registry.register_copy(
                Caller(teacher), version, path, name=name, project=None, tags=tags,
                description=_t("{student}'s submission for {course}/{handout}",
                               student=student, course=course, handout=handout),
            )  # fmt: skip
            copies.append({"from": _model_ref(version), "to": _model_ref(copy),
                           "metrics": version.metrics})  # fmt: skip
        return {"runs": runs, "models": copies, "logs": logs}

    def _runs(self, caller: Caller, base: Path) -> list[dict[str, Any]]:
        ws = self.workspace
        with ws.store.read() as s:
            visible = ws.projects.visible_ids(s, caller)

            def started_in(table: Any, where: Callable[[Any], str | None]) -> list[str]:
                """Ids of the caller's newest runs of ``table`` whose ``where`` is in base."""
                rows = s.scalars(
                    select(table)
                    .where(table.owner == caller.username, table.project_id.in_(visible))
                    .order_by(table.created_at.desc())
                )
                return [row.id for row in rows if under(where(row), base, "")][:MAX_RUNS]

            pipeline_ids = started_in(PipelineRun, lambda run: run.pipeline_path)
            job_ids = started_in(TrainingJob, lambda job: (job.info or {}).get("cwd"))
            experiment_ids = started_in(TuningExperiment, lambda e: (e.spec or {}).get("code_dir"))
        home = self.home(caller.username)

        def shown(path: str) -> str:  # as the student's lab shows it: relative to the home
            return Path(path).relative_to(home).as_posix() if under(path, home, "") else path

        records = []
        for run_id in pipeline_ids:
            view = ws.pipelines.get_run(caller, run_id, shown)
            records.append({"kind": "pipeline", "name": view.pipeline, **to_jsonable(view)})
        for job_id in job_ids:
            job = to_jsonable(ws.training.get(caller, job_id))
            records.append({"kind": "training", **job})
        for experiment_id in experiment_ids:
            found = to_jsonable(ws.tuning.get(caller, experiment_id))
            records.append({"kind": "tuning", **found})
        return records

    def _logs(self, caller: Caller, runs: list[dict[str, Any]]) -> dict[str, str]:
        """The tails of the runs' logs, by ``<kind>-<id>/<node>.log``."""
        ws = self.workspace
        logs = {}
        for run in runs:
            folder = f"{run['kind']}-{run['id']}"
            if run["kind"] == "pipeline":
                for node in run.get("nodes") or ():
                    chunk = ws.pipelines.tail_log(caller, run["id"], node["id"], 0, LOG_TAIL)
                    if chunk.text:
                        logs[f"{folder}/{_file_name(node['id'])}.log"] = chunk.text
            elif run["kind"] == "training":
                chunk = ws.training.tail_log(caller, run["id"], 0, LOG_TAIL)
                if chunk.text:
                    logs[f"{folder}/log.txt"] = chunk.text
        return logs

    def _models(
        self, caller: Caller, base: Path, folder: str, run_ids: set[str]
    ) -> list[tuple[VersionView, Path]]:
        """The caller's model versions registered from the folder (a notebook or script in
        it) or by one of its runs; each with its artifact."""
        ws = self.workspace
        with ws.store.read() as s:
            visible = ws.projects.visible_ids(s, caller)
            rows = s.execute(
                select(ModelVersion.version, ModelVersion.source, ModelVersion.pipeline_run_id,
                       ModelVersion.training_job_id, RegisteredModel.name,
                       RegisteredModel.project_id)
                .join(RegisteredModel, RegisteredModel.id == ModelVersion.model_id)
                .where(ModelVersion.created_by == caller.username,
                       RegisteredModel.project_id.in_(visible))
                .order_by(ModelVersion.created_at)
            ).all()  # fmt: skip
            projects = s.execute(select(Project.id, Project.name).where(Project.id.in_(visible)))
            names = {project_id: name for project_id, name in projects}
        found = []
        for number, source, run_id, job_id, name, project_id in rows:
            if under(source, base, folder) or run_id in run_ids or job_id in run_ids:
                project = names[project_id]
                try:
                    version = ws.registry.get_version(caller, project, name, number)
                    path = ws.registry.download(caller, project, name, number).path
                except NotFound:  # deleted, or its files gone, meanwhile
                    continue
                found.append((version, path))
        return found


def _model_ref(view: VersionView) -> dict[str, Any]:
    return {"project": view.project, "name": view.model, "version": view.version}


def _file_name(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", node_id)[:100] or "node"
