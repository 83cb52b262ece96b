"""The composition root: one place that builds the store and every service.

The server extension, the CLI and the in-kernel Python API all start here, so
they share one data dir, one database and the same rules.
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import TYPE_CHECKING, Any

from .config import Settings
from .errors import StoreUnavailable
from .locale.messages import _t

if TYPE_CHECKING:
    from .alerts.engine import AlertEngine
    from .alerts.rules import AlertRuleService
    from .alerts.watch import Watcher as AlertWatcher
    from .chat.service import ChatService
    from .kb.service import KnowledgeBaseService
    from .labeling.dataset_service import DatasetService
    from .labeling.service import LabelingService
    from .pipelines.schedules import ScheduleService
    from .pipelines.service import PipelineService
    from .projects import ProjectService
    from .registry.service import RegistryService
    from .serving.service import DeploymentService
    from .store import Store
    from .training.service import TrainingService
    from .tuning.service import TuningService


class LazyCatalog:
    """The job-template catalog, loaded on first use: reading the templates (and importing
    jsonschema) costs a CLI call about a second it doesn't need for script-only pipelines."""

    @functools.cached_property
    def _catalog(self) -> Any:
        from .jobtemplates import TemplateCatalog

        return TemplateCatalog()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)

    def __contains__(self, name: object) -> bool:
        return name in self._catalog


class Workspace:
    """The store and the services. The store and the services are built (and their
    modules imported) on first use, so a CLI command pays only for what it touches: a
    plain ``pipeline run`` starts its first nodes while another thread opens the store."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.templates: Any = LazyCatalog()
        self._store: Store | None = None
        self._store_lock = threading.Lock()  # the CLI may open it from a recorder thread
        self._alert_engine: AlertEngine | None = None
        self._engine_lock = threading.Lock()

    @classmethod
    def open(cls, settings: Settings) -> Workspace:
        """A workspace whose store is opened (and migrated) now."""
        ws = cls(settings)
        ws.store  # noqa: B018 - open it now, so errors surface here
        return ws

    @property
    def store(self) -> Store:
        with self._store_lock:
            if self._store is None:
                self._store = _open_store(self.settings)
                from .alerts import events

                me = weakref.ref(self)  # the store must not keep its workspace alive
                events.attach(self._store, lambda: (ws := me()) and ws.alert_engine)
            return self._store

    @functools.cached_property
    def projects(self) -> ProjectService:
        from .projects import ProjectService

        return ProjectService(self.store)

    @functools.cached_property
    def registry(self) -> RegistryService:
        from .registry.artifacts import ArtifactStore
        from .registry.service import RegistryService

        artifacts = ArtifactStore(self.settings.artifacts_dir)
        return RegistryService(self.store, self.projects, artifacts)

    @functools.cached_property
    def pipelines(self) -> PipelineService:
        from .pipelines.service import PipelineService

        return PipelineService(self.store, self.projects, self.settings, self.templates)

    @functools.cached_property
    def schedules(self) -> ScheduleService:
        from .pipelines.schedules import ScheduleService

        return ScheduleService(self.store, self.projects, self.pipelines)

    @functools.cached_property
    def training(self) -> TrainingService:
        from .training.service import TrainingService

        return TrainingService(self.store, self.projects, self.settings, self.registry)

    @functools.cached_property
    def serving(self) -> DeploymentService:
        from .serving.service import DeploymentService

        return DeploymentService(self.store, self.projects, self.settings, self.registry)

    @functools.cached_property
    def tuning(self) -> TuningService:
        from .tuning.service import TuningService

        return TuningService(self.store, self.projects, self.settings, lambda: self.registry)

    @functools.cached_property
    def datasets(self) -> DatasetService:
        from .labeling.dataset_service import DatasetService

        return DatasetService(self.store, self.projects, self.settings)

    @functools.cached_property
    def labeling(self) -> LabelingService:
        from .labeling.service import LabelingService

        return LabelingService(
            self.store, self.projects, self.settings, self.datasets, lambda: self.registry
        )

    @functools.cached_property
    def kb(self) -> KnowledgeBaseService:
        from .kb.service import KnowledgeBaseService

        return KnowledgeBaseService(self.store, self.projects, self.settings)

    @property
    def alert_engine(self) -> AlertEngine:
        """Delivers the store's events to alert rules (built on the first event)."""
        from .alerts.engine import AlertEngine

        with self._engine_lock:  # events come from worker threads too
            if self._alert_engine is None:
                self._alert_engine = AlertEngine(self.store)
            return self._alert_engine

    @functools.cached_property
    def alert_watcher(self) -> AlertWatcher:
        """Checks the conditions rules watch while objects run (``start_background``)."""
        from .alerts.watch import Watcher
        from .identity import Caller
        from .monitoring import gpu_hours

        # quota.usage rules: GPU-hours this month from the sampled series of every project
        def hours() -> dict[str, float]:
            return gpu_hours.per_project(self, Caller("cube-lab-alerts", admin=True))

        return Watcher(self.store, self.alert_engine, self.serving, gpu_hours=hours)

    @functools.cached_property
    def alerts(self) -> AlertRuleService:
        from .alerts.rules import AlertRuleService

        return AlertRuleService(self.store, self.projects, self.alert_engine)

    @functools.cached_property
    def chat(self) -> ChatService:
        from .chat.service import ChatService

        return ChatService(
            self.store, self.projects, self.serving, lambda: self.datasets, self.settings.data_dir
        )

    def close(self) -> None:
        if "alert_watcher" in self.__dict__:
            self.alert_watcher.stop()
        if self._alert_engine is not None:
            self._alert_engine.close()  # queued deliveries first (bounded): the store goes next
        if "kb" in self.__dict__:
            self.kb.close()
        if self._store is not None:
            self._store.dispose()


def _open_store(settings: Settings) -> Store:
    from sqlalchemy.exc import SQLAlchemyError

    from .store import Store

    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store(settings.db_url)
        store.migrate()
    except (OSError, SQLAlchemyError) as exc:
        raise StoreUnavailable(
            _t(
                "cannot open the cube-lab database {store_label}: {exc}",
                store_label=settings.store_label,
                exc=exc,
            ),
            _t("Check --db-url / CUBE_LAB_DB_URL and --data-dir / CUBE_LAB_DATA_DIR."),
        ) from exc
    return store


@functools.cache
def default_workspace() -> Workspace:
    """The workspace of this process (kernel or CLI), resolved from the environment."""
    return Workspace.open(Settings.resolve())
