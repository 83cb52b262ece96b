"""The ``CubeLab`` jupyter-server extension: configuration and the composition root.

Configure it like any Jupyter app, e.g. in ``jupyter_server_config.py``::

    c.CubeLab.data_dir = "/srv/cube-lab"
    c.CubeLab.db_url = "postgresql+psycopg://cube@db/cube"
    c.CubeLab.backend = "kubernetes"
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from jupyter_server.auth.identity import (
    IdentityProvider,
    LegacyIdentityProvider,
    PasswordIdentityProvider,
)
from jupyter_server.extension.application import ExtensionApp
from traitlets import Enum, Unicode, default

from . import config, lab_links, startup, terminals
from .handlers import forward, routes
from .handlers.base import LOCAL_USER, ROOT_DIR, WORKSPACE
from .handlers.forward import CONNECTIONS, SERVICE, ServiceConnections
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
        root_dir = Path(self.serverapp.root_dir).expanduser().resolve()
        os.environ[config.ENV_ROOT_DIR] = str(root_dir)
        terminals.put_bin_on_path()  # `!cube-lab` and `python` in kernels are this venv's
        service = os.environ.get(config.ENV_SERVICE_URL)
        token = os.environ.get("JUPYTERHUB_API_TOKEN")
        if service and token:
            # Under the hub: the store is the cube-lab service's; this server only forwards.
            # Nothing it or its kernels hold reaches the store except as this user.
            for name in (config.ENV_DATA_DIR, config.ENV_DB_URL, config.ENV_USER):
                os.environ.pop(name, None)
            self.settings[SERVICE] = (service, token)
            self.settings[CONNECTIONS] = ServiceConnections(service)  # kept open, reused
            if not os.environ.get("JUPYTERHUB_HOST"):
                # the panels call the service straight at the same path through the hub's
                # proxy (src/api.ts; cube_lab/hub/browser_session.py); with subdomains it is
                # another origin, and they keep to the forward
                page_config = self.serverapp.web_app.settings.setdefault("page_config_data", {})
                page_config["cubeLabService"] = urlparse(service).path
            self.log.info("cube-lab: the store is the cube-lab service's, at %s", service)
            return
        settings = config.Settings.resolve(self.data_dir, self.db_url, self.backend)
        workspace = startup.open_workspace(settings, self.log)
        local_user = None
        if type(self.serverapp.identity_provider) in _ANONYMOUS_PROVIDERS:
            local_user = config.local_username()
        # Kernels and terminals started by this server inherit these, so
        # `%cube_register` and the `cube-lab` CLI use the same store as the UI.
        os.environ[config.ENV_DATA_DIR] = str(settings.data_dir)
        os.environ[config.ENV_DB_URL] = settings.db_url
        if local_user:
            os.environ[config.ENV_USER] = local_user
        self.settings.update(
            {WORKSPACE: workspace, ROOT_DIR: str(root_dir), LOCAL_USER: local_user}
        )
        # This server's notebook kernels in GET /resources and /metrics, sampled like jobs
        # (monitoring/kernels.py). Started on the server's loop once it runs: a callback, not
        # the start hook, which a server started without start_ioloop (pytest-jupyter) skips.
        from .monitoring.kernels import KernelSampler

        self._kernels = KernelSampler(
            self.serverapp.kernel_manager,
            self.serverapp.session_manager,
            settings.data_dir,
            local_user or config.local_username(),
        )
        self.serverapp.io_loop.add_callback(self._kernels.start)
        self.log.info(
            "cube-lab: data in %s, store %s, backend %s, user %s",
            settings.data_dir,
            settings.store_label,
            settings.backend,
            local_user or "from the identity provider",
        )

    def initialize_handlers(self) -> None:
        self.handlers.extend(forward.routes() if SERVICE in self.settings else routes())

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Runs inside the server's event loop: start the pipeline scheduler there."""
        # Every extension has loaded by now, the terminals' one included.
        terminals.adopt_terminal_manager(
            serverapp.web_app.settings, serverapp.terminado_settings, serverapp.root_dir
        )
        # Kernels and terminals start after this: their handles' `.url` opens a view here.
        os.environ[lab_links.ENV_LAB_URL] = lab_links.lab_url(
            serverapp.base_url,
            serverapp.connection_url,
            under_hub=bool(os.environ.get("JUPYTERHUB_SERVICE_PREFIX")),
        )
        workspace: Workspace | None = self.settings.get(WORKSPACE)
        if workspace is not None:
            self._scheduler = startup.start_background(workspace)

    async def stop_extension(self) -> None:
        service_connections: ServiceConnections | None = self.settings.get(CONNECTIONS)
        if service_connections is not None:
            service_connections.close()
        if getattr(self, "_scheduler", None) is not None:
            self._scheduler.cancel()
        if getattr(self, "_kernels", None) is not None:
            self._kernels.stop()
        workspace: Any = self.settings.get(WORKSPACE)
        if workspace is not None:
            workspace.close()
