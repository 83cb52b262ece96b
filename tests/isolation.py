"""The environment that keeps a test, and every process it starts, off $HOME and the real
Jupyter and MLflow folders."""

from __future__ import annotations

from pathlib import Path


def environment(tmp: Path) -> dict[str, str]:
    """The environment under ``tmp`` that keeps a process off $HOME and the real Jupyter and
    MLflow folders: every test's (``isolated_env`` in conftest.py) and a module's server's."""
    (tmp / "home").mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(tmp / "home"),
        "JUPYTER_CONFIG_DIR": str(tmp / "jconfig"),
        "JUPYTER_DATA_DIR": str(tmp / "jdata"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "jruntime"),
        "IPYTHONDIR": str(tmp / "ipython"),
        "MLFLOW_DISABLE_TELEMETRY": "true",
    }
