"""Checks on what a caller hands the registry, each naming the field and the fix."""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import InvalidInput

ALIAS_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
RESERVED_ALIASES = {"latest"}


def check_alias(alias: object) -> str:
    if not isinstance(alias, str) or not ALIAS_RE.match(alias) or alias in RESERVED_ALIASES:
        raise InvalidInput(
            f"invalid alias {alias!r}",
            "An alias starts with a letter, then up to 63 letters, digits, '_' or '-' "
            "(e.g. 'production', 'staging'); 'latest' is reserved.",
        )
    return alias


def check_metrics(metrics: object) -> dict[str, float]:
    if metrics is None:
        return {}
    if not isinstance(metrics, dict):
        raise InvalidInput("metrics must be an object of name -> number", 'e.g. {"accuracy": 0.93}')
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if not isinstance(key, str) or not key:
            raise InvalidInput("metric names must be non-empty strings")
        if isinstance(value, bool) or not isinstance(value, int | float):
            try:
                value = float(value)  # "0.93" from the CLI or a form
            except (TypeError, ValueError):
                raise InvalidInput(
                    f"metric {key!r} must be a number, got {value!r}", 'e.g. {"accuracy": 0.93}'
                ) from None
        if not math.isfinite(value):
            raise InvalidInput(f"metric {key!r} must be finite, got {value!r}")
        out[key] = value
    return out


def check_mapping(value: object, what: str, scalar_only: bool = True) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(
            f"{what} must be an object of name -> value", f'e.g. {{"n_estimators": 100}} for {what}'
        )
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise InvalidInput(f"{what} names must be non-empty strings")
        if scalar_only and not (item is None or isinstance(item, str | int | float | bool)):
            raise InvalidInput(
                f"{what}[{key!r}] must be a string, number, boolean or null",
                f"got {type(item).__name__}",
            )
    return dict(value)


def check_text(value: object, what: str, max_len: int = 10_000) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > max_len:
        raise InvalidInput(f"{what} must be a string of at most {max_len} characters")
    return value


def check_optional_id(value: object, what: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str | int) or len(str(value)) > 128:
        raise InvalidInput(f"{what} must be a string of at most 128 characters")
    return str(value)
