"""Where cube-lab keeps its state, resolved the same way by the server, the CLI and kernels.

The server exports what it resolved as environment variables, so kernels and the
CLI started from a JupyterLab terminal use the same data dir and database.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from pathlib import Path

from jupyter_core.paths import jupyter_data_dir

from .errors import StoreIsRemote
from .locale.messages import _t

ENV_DATA_DIR = "CUBE_LAB_DATA_DIR"
ENV_DB_URL = "CUBE_LAB_DB_URL"
ENV_ROOT_DIR = "CUBE_LAB_ROOT_DIR"
ENV_USER = "CUBE_LAB_USER"
# Under the hub: the cube-lab service that owns the store (set for user servers by the
# spawner). Where it is set, the store is reached only through it, with the hub token.
ENV_SERVICE_URL = "CUBE_LAB_SERVICE_URL"
# Set (to the reason) in the environment of a job run as its owner's OS account that has no
# way to the store (no job token: ``job_credentials``), so cube-lab inside it says so rather
# than opening an empty one under its HOME.
ENV_NO_STORE = "CUBE_LAB_NO_STORE"
BACKENDS = ("local", "kubernetes")


def default_data_dir() -> Path:
    env = os.environ.get(ENV_DATA_DIR)
    if not env and os.environ.get(ENV_NO_STORE):
        from .errors import StoreUnavailable

        raise StoreUnavailable(
            _t("no cube-lab store in this job: {value}", value=os.environ[ENV_NO_STORE]),
            _t(
                "Jobs the hub's cube-lab service starts (pipeline runs, training jobs, "
                "tuning experiments) reach it with a token of their own "
                "($CUBE_LAB_TOKEN); this process got none. Register models, read datasets"
                " and start jobs from your notebook or terminal (they reach the cube-lab "
                "service), or have the job write files its pipeline declares as outputs."
            ),
        )
    return Path(env).expanduser() if env else Path(jupyter_data_dir()) / "cube-lab"


def default_db_url(data_dir: Path) -> str:
    return os.environ.get(ENV_DB_URL) or f"sqlite:///{data_dir / 'cube-lab.db'}"


def local_username() -> str:
    """The one user of the embedded shape: the hub user when spawned by JupyterHub."""
    return os.environ.get(ENV_USER) or os.environ.get("JUPYTERHUB_USER") or getpass.getuser()


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    db_url: str
    backend: str = "local"
    # Jobs run as their owner's OS account (``accounts``), without the store's keys: set by
    # the hub's cube-lab service when it runs as root; False keeps the embedded shape.
    os_accounts: bool = False

    @classmethod
    def resolve(
        cls, data_dir: str | Path | None = None, db_url: str | None = None, backend: str = "local"
    ) -> Settings:
        """The store from the arguments, else the environment. Under the hub (a lab server with
        ``$CUBE_LAB_SERVICE_URL``) there is none to take from the environment."""
        service = os.environ.get(ENV_SERVICE_URL)
        if service and not data_dir and not db_url:
            raise StoreIsRemote(
                _t(
                    "under the hub, cube-lab's store belongs to the cube-lab service; "
                    "this lab server cannot open it"
                ),
                _t(
                    (
                        "Use the cube-lab panels, or its REST API: {value}/cube/api/v1/... "
                        'with the header "Authorization: token $JUPYTERHUB_API_TOKEN" (you '
                        "act as yourself)."
                    ),
                    value=service.rstrip("/"),
                ),
            )
        resolved_dir = Path(data_dir).expanduser() if data_dir else default_data_dir()
        return cls(
            data_dir=resolved_dir.resolve(),
            db_url=db_url or default_db_url(resolved_dir.resolve()),
            backend=backend,
        )

    @property
    def store_label(self) -> str:
        """The database URL without its password, for logs."""
        from sqlalchemy.engine import make_url

        return make_url(self.db_url).render_as_string(hide_password=True)

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def runs_dir(self) -> Path:
        """Every pipeline run's folder."""
        return self.data_dir / "runs"
