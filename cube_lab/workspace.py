"""The composition root: one place that builds the store and every service.

The server extension, the CLI and the in-kernel Python API all start here, so
they share one data dir, one database and the same rules.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .config import Settings
from .projects import ProjectService
from .store import Store

if TYPE_CHECKING:
    from .pipelines.schedules import ScheduleService
    from .pipelines.service import PipelineService
    from .registry.service import RegistryService
    from .training.service import TrainingService


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
    """The store and the services. Services are built (and their modules imported) on
    first use, so a CLI command pays only for the capability it touches."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.projects = ProjectService(store)
        self.templates: Any = LazyCatalog()

    @classmethod
    def open(cls, settings: Settings) -> Workspace:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store(settings.db_url)
        store.migrate()
        return cls(settings, store)

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

    def close(self) -> None:
        self.store.dispose()


@functools.cache
def default_workspace() -> Workspace:
    """The workspace of this process (kernel or CLI), resolved from the environment."""
    return Workspace.open(Settings.resolve())
