"""Jupyter server configuration for the cube-lab Galata tests.

`jlpm start` (and Playwright's webServer) runs `jupyter lab` with this file:
port 8888 (or $CUBE_LAB_UI_PORT), no token, allowed to run as root (CI does), and every folder the
server, the kernels and cube-lab write to lives in a temporary directory so
the tests never touch $HOME. Never use this configuration in production: it
turns security protections off.
"""

import os
import tempfile
from pathlib import Path

from jupyterlab.galata import configure_jupyter_server

# Playwright's webServer passes CUBE_LAB_UI_TMP (and the JUPYTER_* variables
# below); `jlpm start` on its own gets a fresh temporary directory.
tmp = Path(os.environ.get("CUBE_LAB_UI_TMP") or tempfile.mkdtemp(prefix="cube-lab-ui-"))
folders = {
    "JUPYTER_CONFIG_DIR": tmp / "config",
    "JUPYTER_DATA_DIR": tmp / "data",
    "JUPYTER_RUNTIME_DIR": tmp / "runtime",
    "IPYTHONDIR": tmp / "ipython",
    "MPLCONFIGDIR": tmp / "matplotlib",
}
for name, folder in folders.items():
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(name, str(folder))
os.environ.setdefault("MLFLOW_TRACKING_URI", (tmp / "mlruns").as_uri())
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

root = tmp / "root"
root.mkdir(parents=True, exist_ok=True)
os.environ.setdefault("JUPYTERLAB_GALATA_ROOT_DIR", str(root))

configure_jupyter_server(c)  # noqa: F821

# `make galata` runs the specs in shards side by side, each with a server of its own
c.ServerApp.port = int(os.environ.get("CUBE_LAB_UI_PORT", "8888"))  # noqa: F821
c.ServerApp.port_retries = 0  # noqa: F821  (a busy port is an error, not another server)
c.ServerApp.root_dir = str(root)  # noqa: F821
c.ServerApp.allow_root = True  # noqa: F821
c.LabApp.workspaces_dir = str(tmp / "workspaces")  # noqa: F821

# cube-lab keeps its database and model artifacts here, not under $HOME.
c.CubeLab.data_dir = str(tmp / "cube-lab")  # noqa: F821
