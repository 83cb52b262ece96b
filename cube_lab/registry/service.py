"""The model registry: models, numbered versions, aliases, lineage and artifacts.

Plain Python: the REST handlers, the CLI, the magics and ``cube_lab.registry.register``
all call this class. Every method takes the ``Caller`` and sees only the caller's projects.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from sqlalchemy import Select, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from ..errors import Conflict, Forbidden, InvalidInput, NotFound
from ..identity import Caller, check_name
from ..locale.messages import _t
from ..projects import ProjectService, check_page_limit
from ..store import Store
from ..store.models import ModelAlias, ModelVersion, Project, RegisteredModel, utcnow
from .artifacts import ArtifactStore, StagedArtifact
from .flavors import check_flavor, detect_path, save_object
from .validation import (
    EmptyArtifact,
    check_alias,
    check_datasets,
    check_mapping,
    check_metrics,
    check_optional_id,
    check_text,
)
from .views import Comparison, Download, ModelDetail, ModelPage, ModelView, VersionView

UNSET: Any = object()
MAX_PAGE = 500
ORIGIN_TAG = "cube_lab.origin"  # a copied version's original: "<project>/<model>:v<N>"


class RegistryService:
    def __init__(self, store: Store, projects: ProjectService, artifacts: ArtifactStore) -> None:
        self.store = store
        self.projects = projects
        self.artifacts = artifacts

    # -- register ----------------------------------------------------------------------

    def register(
        self,
        caller: Caller,
        *,
        name: object,
        path: Path | None = None,
        obj: Any = None,
        project: str | None = None,
        flavor: object = None,
        description: object = None,
        params: object = None,
        metrics: object = None,
        tags: object = None,
        aliases: object = None,
        source: object = None,
        pipeline_run_id: object = None,
        training_job_id: object = None,
        datasets: object = None,
    ) -> VersionView:
        """Store a new version of model ``name``: version numbers never repeat, even under races.

        ``datasets``: the dataset versions it was trained on (lineage), each
        ``{"name", "version", "path", "project"}``. An empty folder or a 0-byte file is
        refused (``EmptyArtifact``), and nothing is recorded."""
        check_name(name, "model name")
        assert isinstance(name, str)
        fields = {
            "flavor": check_flavor(flavor),
            "description": check_text(description, "description"),
            "params": check_mapping(params, "params"),
            "metrics": check_metrics(metrics),
            "tags": {k: str(v) for k, v in check_mapping(tags, "tags").items()},
            "source": check_text(source, "source", 1024) or None,
            "pipeline_run_id": check_optional_id(pipeline_run_id, "pipeline_run_id"),
            "training_job_id": check_optional_id(training_job_id, "training_job_id"),
            "datasets": check_datasets(datasets),
        }
        if aliases is not None and not isinstance(aliases, list | tuple):
            raise InvalidInput(_t("aliases must be a list of names"), _t('e.g. ["staging"]'))
        alias_list = [check_alias(a) for a in aliases or []]
        self.projects.ensure_personal(caller)
        with self.store.read() as s:  # fail on a bad project before copying anything
            self.projects.resolve(s, caller, project)
        staged, detected_flavor, fmt = self._stage(path, obj)
        try:
            if staged.size_bytes == 0:  # a model of nothing would only fail to deploy later
                empty = (
                    EmptyArtifact.of(path)
                    if path is not None
                    else EmptyArtifact(_t("nothing to register: the model saved as 0 bytes"))
                )
                if staged.skipped and path is not None:  # what the containment rule left out
                    shown = ", ".join(staged.skipped[:5]) + (", ..." if staged.skipped[5:] else "")
                    empty = EmptyArtifact(
                        _t(
                            "nothing to register: the folder {path} holds no files of its own",
                            path=path,
                        ),
                        path=str(path),
                    ).with_hint(
                        f"Its symbolic links lead outside the folder and were left out "
                        f"({shown}): copy those files into the folder."
                    )
                raise empty
            for attempt in range(3):
                try:
                    return self._insert(
                        caller,
                        name,
                        project,
                        staged,
                        fmt,
                        fields["flavor"] or detected_flavor,
                        fields,
                        alias_list,
                    )
                except IntegrityError:  # a concurrent writer created the same model first
                    if attempt == 2:
                        raise
            raise AssertionError("unreachable")
        finally:
            self.artifacts.discard(staged)

    def register_copy(
        self,
        caller: Caller,
        original: VersionView,
        artifact: Path,
        *,
        name: str,
        project: str | None,
        tags: dict[str, str] | None = None,
        description: str | None = None,
        read_only: bool = False,
    ) -> tuple[VersionView, bool]:
        """A version of ``name`` in ``project`` holding ``original``'s artifact (``artifact``,
        what ``download`` gives: linked, not copied, since a version never changes), metrics,
        params and lineage, tagged with its origin. Asked again, the copy made before is
        returned: ``(view, False)``. The caller registers it; that the original may be read
        is for whoever calls this to have checked (``get_version`` as its reader)."""
        check_name(name, "model name")
        origin = f"{original.project}/{original.model}:v{original.version}"
        with self.store.read() as s:
            target = self.projects.resolve(s, caller, project)
            model = s.scalars(
                select(RegisteredModel)
                .where(RegisteredModel.project_id == target.id, RegisteredModel.name == name)
                .options(selectinload(RegisteredModel.versions))
            ).first()
            for row in model.versions if model is not None else ():
                if row.checksum == original.checksum and (row.tags or {}).get(ORIGIN_TAG) == origin:
                    return VersionView.of(row, target.name, name, []), False
        staged = self.artifacts.stage_link(artifact)
        fields = {
            "description": original.description if description is None else description,
            "params": dict(original.params),
            "metrics": dict(original.metrics),
            "tags": {**original.tags, **(tags or {}), ORIGIN_TAG: origin},
            "source": original.lineage.source,
            "pipeline_run_id": original.lineage.pipeline_run_id,
            "training_job_id": original.lineage.training_job_id,
            "datasets": list(original.lineage.datasets) or None,
        }
        try:
            view = self._insert(caller, name, project, staged, original.format, original.flavor,
                                fields, [], read_only=read_only)  # fmt: skip
        finally:
            self.artifacts.discard(staged)
        return view, True

    def _stage(self, path: Path | None, obj: Any) -> tuple[StagedArtifact, str, str]:
        if (path is None) == (obj is None):
            raise InvalidInput(_t("give exactly one of a path or an object to register"))
        if path is not None:
            if not path.exists():
                raise InvalidInput(
                    _t("path {value!r} does not exist", value=str(path)),
                    _t(
                        "Check the file or folder name (relative paths start at the "
                        "server's root folder or your working directory)."
                    ),
                )
            staged = self.artifacts.stage_path(path)
            try:  # read the copy: it holds only what the containment rule let in
                flavor, fmt = detect_path(staged.path)
            except BaseException:
                self.artifacts.discard(staged)
                raise
            return staged, flavor, fmt
        folder = self.artifacts.new_staging()
        try:
            artifact_name, flavor, fmt = save_object(obj, folder)
            return self.artifacts.finish_staging(folder, artifact_name), flavor, fmt
        except BaseException:
            self.artifacts.discard(StagedArtifact(folder, "", False, 0, ""))
            raise

    def _insert(
        self,
        caller: Caller,
        name: str,
        project_name: str | None,
        staged: StagedArtifact,
        fmt: str,
        flavor: str,
        fields: dict[str, Any],
        aliases: list[str],
        read_only: bool = False,
    ) -> VersionView:
        """``read_only``: the model becomes course material (``_check_may_change``); it must be
        the caller's own, or new."""
        final: Path | None = None
        try:
            with self.store.write() as s:
                project = self.projects.resolve(s, caller, project_name)
                model = self._lock_model(s, project.id, name)
                if model is not None:
                    self._check_may_change(model, caller)
                    if read_only and model.owner != caller.username:
                        raise Conflict(
                            _t(
                                "model {name!r} in project {project!r} is {owner}'s",
                                name=name,
                                project=project.name,
                                owner=model.owner,
                            ),
                            _t("Hand out your model under a name nobody uses in that project."),
                        )
                if model is None:
                    model = RegisteredModel(
                        project_id=project.id, name=name, description="", owner=caller.username
                    )
                    s.add(model)
                    s.flush()
                if read_only:
                    model.read_only = True
                number = (
                    s.scalar(
                        select(func.max(ModelVersion.version)).where(
                            ModelVersion.model_id == model.id
                        )
                    )
                    or 0
                ) + 1
                row = ModelVersion(
                    model_id=model.id,
                    version=number,
                    format=fmt,
                    flavor=flavor,
                    artifact_name=staged.name,
                    size_bytes=staged.size_bytes,
                    checksum=staged.checksum,
                    created_by=caller.username,
                    archived=False,
                    artifact_path=self.artifacts.relative(
                        self.artifacts.version_dir(model.id, number) / staged.name
                    ),
                    description=fields["description"],
                    params=fields["params"],
                    metrics=fields["metrics"],
                    tags=fields["tags"],
                    source=fields["source"],
                    pipeline_run_id=fields["pipeline_run_id"],
                    training_job_id=fields["training_job_id"],
                    datasets=fields["datasets"] or None,
                )
                s.add(row)
                model.updated_at = utcnow()
                model.archived = False
                s.flush()
                for alias in aliases:
                    self._point_alias(s, model, alias, row, caller)
                final = self.artifacts.promote(staged, model.id, number)
                s.flush()
                return VersionView.of(row, project.name, name, aliases)
        except BaseException:
            if final is not None:
                self.artifacts.purge(final)
            raise

    # -- read ----------------------------------------------------------------------------

    def list_models(
        self,
        caller: Caller,
        *,
        q: str | None = None,
        project: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> ModelPage:
        check_page_limit(limit, MAX_PAGE)
        if offset < 0:
            raise InvalidInput(_t("offset must be 0 or more"), _t("got {offset}", offset=offset))
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            project_ids = self.projects.scope_ids(s, caller, project)
            where: list[Any] = [RegisteredModel.project_id.in_(project_ids)]
            if not include_archived:
                where.append(RegisteredModel.archived.is_(False))
            if q:
                pattern = f"%{q.strip()}%"
                where.append(
                    or_(
                        RegisteredModel.name.ilike(pattern),
                        RegisteredModel.description.ilike(pattern),
                    )
                )
            total = s.scalar(select(func.count(RegisteredModel.id)).where(*where)) or 0
            order = (RegisteredModel.updated_at.desc(), RegisteredModel.id.desc())
            # Pick the page first, so the per-model look-ups run for its rows only.
            page = select(RegisteredModel.id).where(*where).order_by(*order)
            models = s.execute(
                self._summary_query()
                .where(RegisteredModel.id.in_(page.limit(limit).offset(offset).scalar_subquery()))
                .order_by(*order)
            ).all()
            return ModelPage(self._summaries(s, models), total, limit, offset)

    def get_model(self, caller: Caller, project: str, name: str) -> ModelDetail:
        with self.store.read() as s:
            model = self._model(s, caller, project, name)
            summary = self._summaries(
                s, s.execute(self._summary_query().where(RegisteredModel.id == model.id)).all()
            )[0]
            by_version = self._aliases_by_version(model)
            versions = [
                VersionView.of(v, project, name, by_version.get(v.id, [])) for v in model.versions
            ]
            return ModelDetail(**vars(summary), versions=versions)

    def list_versions(
        self, caller: Caller, project: str, name: str, include_archived: bool = True
    ) -> list[VersionView]:
        versions = self.get_model(caller, project, name).versions
        return [v for v in versions if include_archived or not v.archived]

    def get_version(self, caller: Caller, project: str, name: str, ref: str | int) -> VersionView:
        with self.store.read() as s:
            model = self._model(s, caller, project, name)
            row = self._version(model, ref)
            return VersionView.of(
                row, project, name, self._aliases_by_version(model).get(row.id, [])
            )

    def compare(self, caller: Caller, project: str, name: str, refs: list[str]) -> Comparison:
        if len(refs) < 1:
            raise InvalidInput(_t("give the versions to compare"), _t("e.g. ?versions=1,2,3"))
        versions = [self.get_version(caller, project, name, ref) for ref in refs]
        metrics = sorted({k for v in versions for k in v.metrics})
        params = sorted({k for v in versions for k in v.params})
        return Comparison(versions, metrics, params)

    def download(self, caller: Caller, project: str, name: str, ref: str | int) -> Download:
        with self.store.read() as s:
            model = self._model(s, caller, project, name)
            row = self._version(model, ref)
            path = self.artifacts.absolute(row.artifact_path)
            if not path.exists():
                raise NotFound(
                    _t(
                        "the artifact of {name} v{version} is missing on disk",
                        name=name,
                        version=row.version,
                    ),
                    str(path),
                )
            return Download(path, f"{name}-v{row.version}-{row.artifact_name}", path.is_dir())

    # -- change ----------------------------------------------------------------------------

    def update_model(
        self,
        caller: Caller,
        project: str,
        name: str,
        *,
        description: object = UNSET,
        archived: object = UNSET,
        read_only: object = UNSET,
    ) -> ModelView:
        with self.store.write() as s:
            model = self._model(s, caller, project, name, lock=True)
            if description is not UNSET:
                model.description = check_text(description, "description")
            if archived is not UNSET:
                if not isinstance(archived, bool):
                    raise InvalidInput(_t("archived must be true or false"))
                model.archived = archived
            if read_only is not UNSET:
                if not isinstance(read_only, bool):
                    raise InvalidInput(_t("read_only must be true or false"))
                if not caller.may_change(model.owner):
                    raise Forbidden(
                        _t("only {owner}, its owner, may make {name!r} read-only or not",
                           owner=model.owner, name=name),
                        _t("Ask them, or register a model of your own."),
                    )  # fmt: skip
                model.read_only = read_only
            model.updated_at = utcnow()
        return self.get_model(caller, project, name)

    def update_version(
        self,
        caller: Caller,
        project: str,
        name: str,
        ref: str | int,
        *,
        description: object = UNSET,
        tags: object = UNSET,
        archived: object = UNSET,
    ) -> VersionView:
        with self.store.write() as s:
            model = self._model(s, caller, project, name, lock=True)
            row = self._version(model, ref)
            if description is not UNSET:
                row.description = check_text(description, "description")
            if tags is not UNSET:
                row.tags = {k: str(v) for k, v in check_mapping(tags, "tags").items()}
            if archived is not UNSET:
                if not isinstance(archived, bool):
                    raise InvalidInput(_t("archived must be true or false"))
                row.archived = archived
            number = row.version
        return self.get_version(caller, project, name, number)

    def set_alias(
        self,
        caller: Caller,
        project: str,
        name: str,
        alias: object,
        version: object,
        expected_version: object = UNSET,
    ) -> ModelDetail:
        """Point ``alias`` at ``version``; with ``expected_version``, only if nobody moved it."""
        check_alias(alias)
        assert isinstance(alias, str)
        if isinstance(version, bool) or not isinstance(version, int | str):
            raise InvalidInput(_t("version must be a version number"), _t('e.g. {{"version": 3}}'))
        with self.store.write() as s:
            model = self._model(s, caller, project, name, lock=True)
            row = self._version(model, version)
            current = next((a for a in model.aliases if a.alias == alias), None)
            current_number = current.version.version if current else None
            if expected_version is not UNSET and expected_version != current_number:
                raise Conflict(
                    _t(
                        "alias {alias!r} of {name} now points to {value}",
                        alias=alias,
                        name=name,
                        value="v" + str(current_number) if current_number else "no version",
                    ),
                    {
                        "alias": alias,
                        "current_version": current_number,
                        "hint": "Someone moved it meanwhile; reload and try again.",
                    },
                )
            self._point_alias(s, model, alias, row, caller)
            model.updated_at = utcnow()
        return self.get_model(caller, project, name)

    def delete_alias(self, caller: Caller, project: str, name: str, alias: str) -> ModelDetail:
        with self.store.write() as s:
            model = self._model(s, caller, project, name, lock=True)
            current = next((a for a in model.aliases if a.alias == alias), None)
            if current is None:
                raise NotFound(_t("model {name!r} has no alias {alias!r}", name=name, alias=alias))
            model.aliases.remove(current)
            model.updated_at = utcnow()
        return self.get_model(caller, project, name)

    def delete_model(self, caller: Caller, project: str, name: str) -> None:
        with self.store.read() as s:
            model_id = self._model(s, caller, project, name).id
        self._delete_with_files(
            caller,
            project,
            name,
            self.artifacts.models / str(model_id),
            lambda s, model: s.delete(model),
        )

    def delete_version(self, caller: Caller, project: str, name: str, ref: str | int) -> None:
        with self.store.read() as s:
            model = self._model(s, caller, project, name)
            row = self._version(model, ref)
            folder, number = self.artifacts.version_dir(model.id, row.version), row.version

        def remove(s: Session, model: RegisteredModel) -> None:
            s.delete(self._version(model, number))

        self._delete_with_files(caller, project, name, folder, remove)

    def _delete_with_files(
        self, caller: Caller, project: str, name: str, folder: Path, remove: Any
    ) -> None:
        """Rows and files go together: files move to trash first and come back on failure."""
        trashed = None
        try:
            with self.store.write() as s:
                model = self._model(s, caller, project, name, lock=True)
                remove(s, model)
                s.flush()
                trashed = self.artifacts.move_to_trash(folder)
        except BaseException:
            self.artifacts.restore(trashed, folder)
            raise
        self.artifacts.purge(trashed)

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    @functools.cache
    def _summary_query() -> Select[Any]:
        """Models with their latest version, count and flavor: correlated look-ups that use
        the (model_id, version) index, so a page costs the same with 10 or 10,000 versions."""
        versions = ModelVersion.__table__.alias("v")
        of_model = versions.c.model_id == RegisteredModel.id
        latest = select(func.max(versions.c.version)).where(of_model).scalar_subquery()
        count = select(func.count()).select_from(versions).where(of_model).scalar_subquery()
        flavor = (
            select(versions.c.flavor)
            .where(of_model)
            .order_by(versions.c.version.desc())
            .limit(1)
            .scalar_subquery()
        )
        return select(RegisteredModel, Project.name, latest, count, flavor).join(
            Project, Project.id == RegisteredModel.project_id
        )

    @staticmethod
    def _summaries(s: Session, rows: Any) -> list[ModelView]:
        ids = [row[0].id for row in rows]
        aliases: dict[int, dict[str, int]] = {i: {} for i in ids}
        if ids:
            for model_id, alias, number in s.execute(
                select(ModelAlias.model_id, ModelAlias.alias, ModelVersion.version)
                .join(ModelVersion, ModelVersion.id == ModelAlias.version_id)
                .where(ModelAlias.model_id.in_(ids))
            ):
                aliases[model_id][alias] = number
        return [
            ModelView.of(model, project, latest, n or 0, flavor, aliases[model.id])
            for model, project, latest, n, flavor in rows
        ]

    def _model(
        self, s: Session, caller: Caller, project: str, name: str, lock: bool = False
    ) -> RegisteredModel:
        project_row = self.projects.resolve(s, caller, project)
        query = (
            select(RegisteredModel)
            .where(RegisteredModel.project_id == project_row.id, RegisteredModel.name == name)
            .options(
                selectinload(RegisteredModel.versions),
                selectinload(RegisteredModel.aliases).selectinload(ModelAlias.version),
            )
        )
        model = s.scalars(query.with_for_update() if lock else query).first()
        if model is None:
            raise NotFound(
                _t("model {name!r} not found in project {project!r}", name=name, project=project),
                _t("GET /cube/api/v1/models lists the models you can see."),
            )
        if lock:  # taken to change it
            self._check_may_change(model, caller)
        return model

    @staticmethod
    def _check_may_change(model: RegisteredModel, caller: Caller) -> None:
        """Course material (``read_only``, a teacher's hand-out) is changed by its owner or an
        admin only; everyone who sees it may still read, download and deploy it."""
        if model.read_only and not caller.may_change(model.owner):
            raise Forbidden(
                _t(
                    "model {name!r} is read-only course material of {owner}",
                    name=model.name,
                    owner=model.owner,
                ),
                _t(
                    "Use it as it is (download, deploy, fine-tune from it); register your "
                    "own model under another name or in your personal project."
                ),
            )

    @staticmethod
    def _lock_model(s: Session, project_id: int, name: str) -> RegisteredModel | None:
        return s.scalars(
            select(RegisteredModel)
            .where(RegisteredModel.project_id == project_id, RegisteredModel.name == name)
            .with_for_update()
        ).first()

    @staticmethod
    def _version(model: RegisteredModel, ref: str | int) -> ModelVersion:
        text = str(ref).strip()
        if text == "latest":
            row = model.versions[0] if model.versions else None
        elif text.isascii() and text.isdigit():  # "²" is a digit int() refuses
            row = next((v for v in model.versions if str(v.version) == text.lstrip("0")), None)
        else:
            alias = next((a for a in model.aliases if a.alias == text), None)
            row = alias.version if alias else None
        if row is None:
            known = ", ".join(str(v.version) for v in model.versions[:10]) or "none"
            raise NotFound(
                _t("model {name!r} has no version {text!r}", name=model.name, text=text),
                _t(
                    "Versions: {known}; aliases: {value}.",
                    known=known,
                    value=", ".join(a.alias for a in model.aliases) or "none",
                ),
            )
        return row

    @staticmethod
    def _aliases_by_version(model: RegisteredModel) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for alias in model.aliases:
            out.setdefault(alias.version_id, []).append(alias.alias)
        return out

    @staticmethod
    def _point_alias(
        s: Session, model: RegisteredModel, alias: str, row: ModelVersion, caller: Caller
    ) -> None:
        current = next((a for a in model.aliases if a.alias == alias), None)
        if current is None:
            model.aliases.append(
                ModelAlias(alias=alias, version=row, version_id=row.id, updated_by=caller.username)
            )
        else:
            current.version = row
            current.version_id = row.id
            current.updated_by = caller.username
            current.updated_at = utcnow()
