"""NNI search spaces (``{"lr": {"_type": "loguniform", "_value": [1e-4, 0.1]}, ...}``), checked.

NNI itself accepts a malformed space and fails later inside a tuner with a stack trace;
here every entry is checked up front and a bad one is named with what it needs.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

# _type -> what _value must be
SHAPES = {
    "choice": "a non-empty list of options",
    "randint": "[lower, upper] integers with lower < upper",
    "uniform": "[low, high] with low < high",
    "quniform": "[low, high, q] with low < high and q > 0",
    "loguniform": "[low, high] with 0 < low < high",
    "qloguniform": "[low, high, q] with 0 < low < high and q > 0",
    "normal": "[mu, sigma] with sigma > 0",
    "qnormal": "[mu, sigma, q] with sigma > 0 and q > 0",
    "lognormal": "[mu, sigma] with sigma > 0",
    "qlognormal": "[mu, sigma, q] with sigma > 0 and q > 0",
}

EXAMPLE = {
    "learning_rate": {"_type": "loguniform", "_value": [0.0001, 0.1]},
    "batch_size": {"_type": "choice", "_value": [16, 32, 64]},
    "dropout": {"_type": "uniform", "_value": [0.0, 0.5]},
    "layers": {"_type": "randint", "_value": [1, 5]},
}


def _numbers(value: Any, count: int) -> list[float] | None:
    if not isinstance(value, list) or len(value) != count:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    if not all(math.isfinite(v) for v in value):
        return None
    return [float(v) for v in value]


def _entry_ok(kind: str, value: Any) -> bool:
    if kind == "choice":
        return isinstance(value, list) and len(value) > 0
    if kind == "randint":
        nums = _numbers(value, 2)
        return bool(nums) and all(float(v).is_integer() for v in value) and nums[0] < nums[1]
    if kind in ("uniform", "quniform", "loguniform", "qloguniform"):
        nums = _numbers(value, 3 if kind.startswith("q") else 2)
        if not nums or not nums[0] < nums[1]:
            return False
        if kind.endswith("loguniform") and nums[0] <= 0:
            return False
        return not kind.startswith("q") or nums[2] > 0
    nums = _numbers(value, 3 if kind.startswith("q") else 2)  # the normal family
    return bool(nums) and nums[1] > 0 and (not kind.startswith("q") or nums[2] > 0)


def check(space: Any, where: str = "searchSpace") -> dict[str, Any]:
    """The space, or InvalidInput naming the first bad entry and what it should be."""
    if not isinstance(space, dict) or not space:
        raise InvalidInput(
            _t(
                "{where} must be a non-empty mapping of parameter -> {{_type, _value}}", where=where
            ),
            {"example": EXAMPLE},
        )
    for name, entry in space.items():
        at = f"{where}.{name}"
        if not isinstance(entry, dict) or "_type" not in entry or "_value" not in entry:
            raise InvalidInput(
                _t("{at} must be an object with _type and _value", at=at),
                {"got": entry, "example": EXAMPLE},
            )
        kind, value = entry["_type"], entry["_value"]
        if kind not in SHAPES:
            raise InvalidInput(
                _t("{at}: unknown _type {kind!r}", at=at, kind=kind),
                _t("Use one of: {value}.", value=", ".join(SHAPES)),
            )
        if kind == "choice" and isinstance(value, list):
            for i, option in enumerate(value):  # nested spaces: choice of sub-spaces
                if isinstance(option, dict) and "_name" in option:
                    inner = {k: v for k, v in option.items() if k != "_name"}
                    if inner:
                        check(inner, f"{at}[{i}]")
        if not _entry_ok(kind, value):
            raise InvalidInput(
                _t("{at}: {kind} needs _value = {value}", at=at, kind=kind, value=SHAPES[kind]),
                {"got": value},
            )
    return space
