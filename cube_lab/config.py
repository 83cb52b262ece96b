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

ENV_DATA_DIR = "CUBE_LAB_DATA_DIR"
ENV_DB_URL = "CUBE_LAB_DB_URL"
ENV_ROOT_DIR = "CUBE_LAB_ROOT_DIR"
ENV_USER = "CUBE_LAB_USER"
# Under the hub: the cube-lab service that owns the store (set for user servers by the
# spawner). Where it is set, the store is reached only through it, with the hub token.
ENV_SERVICE_URL = "CUBE_LAB_SERVICE_URL"
BACKENDS = ("local", "kubernetes")


def default_data_dir() -> Path:
    env = os.environ.get(ENV_DATA_DIR)
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

    @classmethod
    def resolve(
        cls, data_dir: str | Path | None = None, db_url: str | None = None, backend: str = "local"
    ) -> Settings:
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
