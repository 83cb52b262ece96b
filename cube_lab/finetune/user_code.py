"""A function from the user's Python file (a GRPO reward, an evaluation scorer), loaded with
errors that say which config key, which file, and what to write."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t


def load_function(path: str, key: str, name: str, signature: str) -> Callable[..., Any]:
    """``name`` from the file at ``path`` (the config's ``key``); ``signature`` is what the
    error asks for when the file has none."""
    spec = importlib.util.spec_from_file_location(f"cube_user_{name}", path)
    if spec is None or spec.loader is None:
        raise InvalidInput(_t("{key}: {path} is not a Python file", key=key, path=path))
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's code: say where it failed
        raise InvalidInput(
            _t("{key}: {path} failed to load", key=key, path=path),
            _t("{kind}: {exc}", kind=type(exc).__name__, exc=exc),
        ) from None
    func = getattr(module, name, None)
    if not callable(func):
        raise InvalidInput(
            _t("{key}: {path} has no function {name}", key=key, path=path, name=name),
            _t("Define def {signature}.", signature=signature),
        )
    return func
