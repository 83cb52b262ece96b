"""The ``CubeLab`` jupyter-server extension: configuration and the composition root.

Configure it like any Jupyter app, e.g. in ``jupyter_server_config.py``::

    c.CubeLab.data_dir = "/srv/cube-lab"
    c.CubeLab.db_url = "postgresql+psycopg://cube@db/cube"
    c.CubeLab.backend = "kubernetes"
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from jupyter_server.auth.identity import (
    IdentityProvider,
    LegacyIdentityProvider,
    PasswordIdentityProvider,
)
from jupyter_server.extension.application import ExtensionApp
from traitlets import Enum, Unicode, default

from . import config, terminals
from .handlers import routes
from .handlers.base import LOCAL_USER, ROOT_DIR, WORKSPACE
from .workspace import Workspace

# Providers that give every browser a random "anonymous" user: in the embedded
# shape cube-lab then acts as the one local user instead.
_ANONYMOUS_PROVIDERS = (IdentityProvider, PasswordIdentityProvider, LegacyIdentityProvider)


class CubeLab(ExtensionApp):
    name = "cube_lab"
    load_other_extensions = True

    data_dir = Unicode(
        help="Where cube-lab keeps its database, artifacts and run folders "
        "(default: $CUBE_LAB_DATA_DIR, else <jupyter data dir>/cube-lab).",
    ).tag(config=True)

    db_url = Unicode(
        help="SQLAlchemy URL of the store (default: $CUBE_LAB_DB_URL, else SQLite in WAL mode "
        "under data_dir). PostgreSQL works too: postgresql+psycopg://user@host/db",
    ).tag(config=True)

    backend = Enum(
        list(config.BACKENDS),
        default_value="local",
        help="Where jobs run: 'local' processes (embedded) or 'kubernetes' objects (cluster).",
    ).tag(config=True)

    @default("data_dir")
    def _default_data_dir(self) -> str:
        return str(config.default_data_dir())

    @default("db_url")
    def _default_db_url(self) -> str:
        return config.default_db_url(Path(self.data_dir).expanduser())

    def initialize_settings(self) -> None:
        settings = config.Settings.resolve(self.data_dir, self.db_url, self.backend)
        workspace = Workspace.open(settings)
        workspace.registry.artifacts.sweep()
        interrupted = workspace.pipelines.recover()
        if interrupted:
            self.log.warning("cube-lab: marked %d pipeline run(s) interrupted", len(interrupted))
        jobs = workspace.training.recover()
        if jobs:
            self.log.warning("cube-lab: marked %d training job(s) interrupted", len(jobs))
        experiments = workspace.tuning.recover()
        if experiments:
            self.log.warning("cube-lab: marked %d experiment(s) interrupted", len(experiments))
        served = workspace.serving.recover()
        workspace.serving.prewarm()  # the first deploy after a restart need not start cold
        if served["adopted"] or served["dead"]:
            self.log.warning("cube-lab: deployments adopted %s, dead %s", *served.values())
        self._join_hub_projects(workspace)
        root_dir = Path(self.serverapp.root_dir).expanduser().resolve()
        local_user = None
        if type(self.serverapp.identity_provider) in _ANONYMOUS_PROVIDERS:
            local_user = config.local_username()
        # Kernels and terminals started by this server inherit these, so
        # `%cube_register` and the `cube-lab` CLI use the same store as the UI.
        os.environ[config.ENV_DATA_DIR] = str(settings.data_dir)
        os.environ[config.ENV_DB_URL] = settings.db_url
        os.environ[config.ENV_ROOT_DIR] = str(root_dir)
        if local_user:
            os.environ[config.ENV_USER] = local_user
        terminals.put_bin_on_path()  # `!cube-lab` and `python` in kernels are this venv's
        self.settings.update(
            {WORKSPACE: workspace, ROOT_DIR: str(root_dir), LOCAL_USER: local_user}
        )
        self.log.info(
            "cube-lab: data in %s, store %s, backend %s, user %s",
            settings.data_dir,
            settings.store_label,
            settings.backend,
            local_user or "from the identity provider",
        )

    def initialize_handlers(self) -> None:
        self.handlers.extend(routes())

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Runs inside the server's event loop: start the pipeline scheduler there."""
        workspace: Workspace = self.settings[WORKSPACE]
        # Every extension has loaded by now, the terminals' one included.
        terminals.adopt_terminal_manager(serverapp.web_app.settings, serverapp.terminado_settings)
        self._scheduler = asyncio.get_running_loop().create_task(workspace.schedules.run_forever())
        workspace.training.resume_cluster_jobs()  # cluster jobs found by recover(), if any

    def _join_hub_projects(self, workspace: Workspace) -> None:
        """Under the cube-lab hub: the user's project groups become their team projects."""
        from .hub.labside import hub_user, project_groups

        user = hub_user()
        if user is None:
            return
        try:
            joined = workspace.projects.join_groups(user, project_groups(user))
        except (OSError, ValueError) as exc:
            self.log.warning(
                "cube-lab: cannot read %s's project groups from the hub: %s", user, exc
            )
            return
        if joined:
            self.log.info("cube-lab: %s joined project(s) %s from the hub", user, joined)

    async def stop_extension(self) -> None:
        if getattr(self, "_scheduler", None) is not None:
            self._scheduler.cancel()
        workspace: Any = self.settings.get(WORKSPACE)
        if workspace is not None:
            workspace.close()
