"""cube-lab: a one-stop machine-learning workspace inside JupyterLab.

``import cube_lab as cl`` is light (the standard library only): every capability is imported
on first use, as an attribute of the package (PEP 562), so ``cl.registry.register(...)``,
``cl.datasets.load(...)``, ``cl.pipelines.run(...)``, ``cl.train(...)`` or ``cl.deploy(...)``
work after the one import, and ``dir(cl)`` (tab completion) lists them all.
"""

from __future__ import annotations

# typing.TYPE_CHECKING without importing typing: most of what `import cube_lab` costs otherwise
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:
    from ._version import __version__
except ImportError:  # running from a source tree that was never built
    __version__ = "0.0.0.dev0"

# ``cl.<name>`` is the package ``cube_lab.<name>``, imported on first use: the capabilities
# (docs/architecture.md: where each one lives) and the modules a notebook reaches for.
_CAPABILITIES = (
    "registry",  # models and versions: cl.registry.register(model, name=...)
    "datasets",  # cl.datasets.path(name) / .load(name)
    "pipelines",  # cl.pipelines.run(path), .runs()
    "training",  # cl.training.jobs()
    "tuning",  # cl.tuning.experiments()
    "finetune",  # cl.finetune(config), cl.finetune.preview(config)
    "labeling",  # cl.labeling.projects(), datasets of images and texts
    "kb",  # knowledge bases: cl.kb.search(...)
    "chat",  # cl.chat.conversations()
    "alerts",  # cl.alerts.list(), .add(...)
    "serving",  # deployments (cl.deploy / cl.deployments are the SDK's calls)
    "projects",  # projects: the unit of sharing
    "monitoring",  # resources now, GPU hours, Prometheus metrics
)
_MODULES = (
    "sdk",  # the notebook API behind cl.train, cl.deploy, ...
    "errors",  # cube_lab.errors.CubeError and its kinds
    "hub",  # cube_lab.hub.client.admit(...) under JupyterHub
)

# ``cl.<name>``: one object of the SDK, imported on first use
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


def __getattr__(name: str) -> Any:
    """A capability or SDK name, imported on first use (``import cube_lab`` stays light):
    ``cl.registry``, ``cl.pipelines.run(...)``, ``cl.models``, ``cl.train(...)``,
    ``cl.tune(...)``, ``cl.finetune(...)``, ``cl.deploy(...)``, ``cl.connect(url, token=...)``.
    """
    import importlib

    if name in _CAPABILITIES or name in _MODULES:
        # importing it also binds it here, so this runs once per name
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """What tab completion offers: the module's own names and every lazy one."""
    names = {*globals(), *_CAPABILITIES, *_MODULES, *_LAZY} - {"annotations", "TYPE_CHECKING"}
    return sorted(names)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext cube_lab``: registers the cube-lab magics."""
    from .magics import CubeMagics
    from .magics_data import DataMagics
    from .magics_kb import KbMagics

    ipython.register_magics(CubeMagics)
    ipython.register_magics(DataMagics)
    ipython.register_magics(KbMagics)
