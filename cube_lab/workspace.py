"""The composition root: one place that builds the store and every service.

The server extension, the CLI and the in-kernel Python API all start here, so
they share one data dir, one database and the same rules.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .config import Settings
from .projects import ProjectService
from .registry.artifacts import ArtifactStore
from .registry.service import RegistryService
from .store import Store


@dataclass
class Workspace:
    settings: Settings
    store: Store
    projects: ProjectService
    registry: RegistryService

    @classmethod
    def open(cls, settings: Settings) -> Workspace:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store(settings.db_url)
        store.migrate()
        artifacts = ArtifactStore(settings.artifacts_dir)
        projects = ProjectService(store)
        return cls(settings, store, projects, RegistryService(store, projects, artifacts))

    def close(self) -> None:
        self.store.dispose()


@functools.cache
def default_workspace() -> Workspace:
    """The workspace of this process (kernel or CLI), resolved from the environment."""
    return Workspace.open(Settings.resolve())
