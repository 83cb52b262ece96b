"""The checks of what a chat request carries: sampling parameters and targets.

Every caller (REST, SDK, magic) goes through these, so a bad value is the same 400 anywhere.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidInput
from ..locale.messages import _t

PARAMS = ("temperature", "top_p", "max_tokens", "seed", "stop")
MAX_TOKENS = 32768
MAX_STOPS = 4
MASK = "***"
MAX_TEXT = 200_000  # characters of one message or system prompt
MAX_TITLE = 255


def _number(name: str, value: object, low: float, high: float, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(
            _t("params.{name} must be a number", name=name), _t("got {value!r}", value=value)
        )
    if value > high or value < low or (low_open and value == low):
        raise InvalidInput(
            _t("params.{name} must be in {low}..{high}", name=name, low=low, high=high),
            _t("got {value!r}", value=value),
        )
    return float(value)


def _integer(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(
            _t("params.{name} must be an integer", name=name), _t("got {value!r}", value=value)
        )
    if not low <= value <= high:
        raise InvalidInput(
            _t("params.{name} must be in {low}..{high}", name=name, low=low, high=high),
            _t("got {value!r}", value=value),
        )
    return value


def check_params(raw: object) -> dict[str, Any]:
    """``{"temperature", "top_p", "max_tokens", "seed", "stop"}``, each optional; None
    values are dropped (the conversation's or the model's default applies)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InvalidInput(
            _t("params must be an object"), _t('e.g. {{"temperature": 0.7, "max_tokens": 256}}')
        )
    unknown = sorted(set(raw) - set(PARAMS))
    if unknown:
        raise InvalidInput(
            _t("unknown params {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(PARAMS)),
        )
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if value is None:
            continue
        if name == "temperature":
            out[name] = _number(name, value, 0.0, 2.0)
        elif name == "top_p":
            out[name] = _number(name, value, 0.0, 1.0, low_open=True)
        elif name == "max_tokens":
            out[name] = _integer(name, value, 1, MAX_TOKENS)
        elif name == "seed":
            out[name] = _integer(name, value, -(2**63), 2**63 - 1)
        else:  # stop
            stops = [value] if isinstance(value, str) else value
            if (
                not isinstance(stops, list)
                or not 1 <= len(stops) <= MAX_STOPS
                or not all(isinstance(s, str) and s for s in stops)
            ):
                raise InvalidInput(
                    _t(
                        "params.stop must be a non-empty string or a list of up to {n} of them",
                        n=MAX_STOPS,
                    ),
                    _t("got {value!r}", value=value),
                )
            out[name] = stops
    return out


def check_text(name: str, value: object, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidInput(
            _t("{name} must be a non-empty string", name=name)
            if required
            else _t("{name} must be a string", name=name),
            _t("got {value!r}", value=value),
        )
    if len(value) > MAX_TEXT:
        raise InvalidInput(
            _t("{name} is too long ({n} characters)", name=name, n=len(value)),
            _t("At most {max} characters.", max=MAX_TEXT),
        )
    return value


def check_title(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(_t("title must be a string"), _t("got {value!r}", value=value))
    return value.strip()[:MAX_TITLE]


def check_target(raw: object) -> tuple[dict[str, Any], str | None]:
    """The target without its key, and the key (None when none was given; ``MASK`` when the
    client sent back what a view showed)."""
    example = _t(
        'Give {{"deployment": "NAME"}} (a deployment of the project) or '
        '{{"base_url": "https://host/v1", "model": "NAME", "api_key": "..."}}.'
    )
    if not isinstance(raw, dict) or not raw:
        raise InvalidInput(_t("target must be an object"), example)
    if "deployment" in raw:
        unknown = sorted(set(raw) - {"deployment", "model"})
        if unknown:
            raise InvalidInput(_t("unknown target fields {unknown}", unknown=unknown), example)
        name = raw["deployment"]
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput(_t("target.deployment must be a deployment's name"), example)
        target: dict[str, Any] = {"deployment": name}
        model = raw.get("model")
        if model is not None:
            if not isinstance(model, str) or not model.strip():
                raise InvalidInput(_t("target.model must be a model name"), example)
            target["model"] = model
        return target, None
    if "base_url" in raw:
        unknown = sorted(set(raw) - {"base_url", "model", "api_key"})
        if unknown:
            raise InvalidInput(_t("unknown target fields {unknown}", unknown=unknown), example)
        url = raw["base_url"]
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInput(
                _t("target.base_url must be an http(s) URL"),
                _t("got {value!r}; e.g. https://api.example.com/v1", value=url),
            )
        model = raw.get("model")
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput(
                _t("target.model is required with base_url"),
                _t("The model name the server at base_url serves."),
            )
        key = raw.get("api_key")
        if key is not None and not isinstance(key, str):
            raise InvalidInput(_t("target.api_key must be a string"))
        return {"base_url": url.rstrip("/"), "model": model}, key or None
    raise InvalidInput(_t("target needs deployment or base_url"), example)
