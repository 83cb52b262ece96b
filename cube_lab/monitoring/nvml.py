"""Which NVML the GPU reader talks to: ``pynvml`` (from ``nvidia-ml-py``) when it imports and
initialises, none when there is no driver or no GPU, or another module answering the same
calls (``fake_nvml`` in tests).

``$CUBE_LAB_NVML`` chooses: unset or ``auto`` (``pynvml``), ``off`` (no GPU rows), or a module
name (``cube_lab.monitoring.fake_nvml``). Tests may also call ``use(module)``.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from types import ModuleType

ENV_NVML = "CUBE_LAB_NVML"
log = logging.getLogger(__name__)

_lock = threading.Lock()
_chosen: tuple[str, ModuleType | None] | None = None  # (what chose it, the module)
_forced: ModuleType | None = None


def use(module: ModuleType | None) -> None:
    """Answer with ``module`` from now on (None: back to ``$CUBE_LAB_NVML``)."""
    global _forced, _chosen
    with _lock:
        _forced, _chosen = module, None


def load() -> ModuleType | None:
    """The initialised NVML module, or None when there is none to use (no error)."""
    global _chosen
    want = "forced" if _forced is not None else os.environ.get(ENV_NVML, "auto") or "auto"
    with _lock:
        if _chosen is not None and _chosen[0] == want:
            return _chosen[1]
        module = _forced if _forced is not None else _import(want)
        if module is not None:
            try:
                module.nvmlInit()
            except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
                log.debug("NVML unavailable: %s", exc)
                module = None
        _chosen = (want, module)
        return module


def _import(want: str) -> ModuleType | None:
    if want == "off":
        return None
    name = "pynvml" if want == "auto" else want
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if want != "auto":
            log.warning("%s=%s cannot be imported: %s", ENV_NVML, want, exc)
        return None
