"""The composition root: one place that builds the store and every service.

The server extension, the CLI and the in-kernel Python API all start here, so
they share one data dir, one database and the same rules.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .config import Settings
from .pipelines.schedules import ScheduleService
from .pipelines.service import PipelineService
from .projects import ProjectService
from .registry.artifacts import ArtifactStore
from .registry.service import RegistryService
from .store import Store
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


@dataclass
class Workspace:
    settings: Settings
    store: Store
    projects: ProjectService
    registry: RegistryService
    templates: Any  # a LazyCatalog over cube_lab.jobtemplates.TemplateCatalog
    pipelines: PipelineService
    schedules: ScheduleService
    training: TrainingService

    @classmethod
    def open(cls, settings: Settings) -> Workspace:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store(settings.db_url)
        store.migrate()
        artifacts = ArtifactStore(settings.artifacts_dir)
        projects = ProjectService(store)
        templates = LazyCatalog()
        pipelines = PipelineService(store, projects, settings, templates)
        registry = RegistryService(store, projects, artifacts)
        return cls(
            settings,
            store,
            projects,
            registry,
            templates,
            pipelines,
            ScheduleService(store, projects, pipelines),
            TrainingService(store, projects, settings, registry),
        )

    def close(self) -> None:
        self.store.dispose()


@functools.cache
def default_workspace() -> Workspace:
    """The workspace of this process (kernel or CLI), resolved from the environment."""
    return Workspace.open(Settings.resolve())
