"""cube-lab: a one-stop machine-learning workspace inside JupyterLab."""

from __future__ import annotations

from typing import Any

try:
    from ._version import __version__
except ImportError:  # running from a source tree that was never built
    __version__ = "0.0.0.dev0"

# cube_lab.datasets.path(name) / .load(name): light to import (stdlib only until called)
from . import datasets as datasets


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "cube-lab"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from .app import CubeLab
    from .locale import serve_package_catalog

    serve_package_catalog()  # the Settings editor's cube-lab titles in the user's language

    return [{"module": "cube_lab", "app": CubeLab}]


def report(step: int | None = None, **metrics: Any) -> None:
    """Record training metrics from a job: ``cube_lab.report(step=3, loss=0.12)``."""
    from .training.metrics import report as _report

    _report(step, **metrics)


_LAZY = {
    "models": ("cube_lab.sdk.models", "models"),
    "train": ("cube_lab.sdk.training", "train"),
    "tune": ("cube_lab.sdk.tuning", "tune"),
    "deploy": ("cube_lab.sdk.serving", "deploy"),
    "deployments": ("cube_lab.sdk.serving", "deployments"),
    "connect": ("cube_lab.sdk", "connect"),
    "disconnect": ("cube_lab.sdk", "disconnect"),
    "CubeError": ("cube_lab.errors", "CubeError"),
}


def __getattr__(name: str) -> Any:
    """The SDK, imported on first use: ``cl.models``, ``cl.pipelines.run(...)``,
    ``cl.train(...)``, ``cl.tune(...)``, ``cl.finetune(...)``, ``cl.deploy(...)``,
    ``cl.connect(url, token=...)``
    (``import cube_lab`` stays light)."""
    import importlib

    if name in ("pipelines", "training", "tuning", "finetune", "labeling", "kb", "chat", "alerts"):
        # the packages; their run/runs/jobs/experiments/get delegate to cube_lab.sdk, and
        # cube_lab.finetune(config) is callable
        return importlib.import_module(f"cube_lab.{name}")
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'cube_lab' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext cube_lab``: registers the cube-lab magics."""
    from .magics import CubeMagics
    from .magics_data import DataMagics
    from .magics_kb import KbMagics

    ipython.register_magics(CubeMagics)
    ipython.register_magics(DataMagics)
    ipython.register_magics(KbMagics)
