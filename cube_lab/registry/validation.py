"""Checks on what a caller hands the registry, each naming the field and the fix."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

ALIAS_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}\Z")
RESERVED_ALIASES = {"latest"}


def check_alias(alias: object) -> str:
    if not isinstance(alias, str) or not ALIAS_RE.match(alias) or alias in RESERVED_ALIASES:
        raise InvalidInput(
            _t("invalid alias {alias!r}", alias=alias),
            _t(
                "An alias starts with a letter, then up to 63 letters, digits, '_' or '-'"
                " (e.g. 'production', 'staging'); 'latest' is reserved."
            ),
        )
    return alias


def check_metrics(metrics: object) -> dict[str, float]:
    if metrics is None:
        return {}
    if not isinstance(metrics, dict):
        raise InvalidInput(
            _t("metrics must be an object of name -> number"), _t('e.g. {{"accuracy": 0.93}}')
        )
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if not isinstance(key, str) or not key:
            raise InvalidInput(_t("metric names must be non-empty strings"))
        if isinstance(value, bool) or not isinstance(value, int | float):
            try:
                value = float(value)  # "0.93" from the CLI or a form
            except (TypeError, ValueError):
                raise InvalidInput(
                    _t("metric {key!r} must be a number, got {value!r}", key=key, value=value),
                    _t('e.g. {{"accuracy": 0.93}}'),
                ) from None
        if not math.isfinite(value):
            raise InvalidInput(
                _t("metric {key!r} must be finite, got {value!r}", key=key, value=value)
            )
        out[key] = value
    return out


def check_mapping(value: object, what: str, scalar_only: bool = True) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(
            _t("{what} must be an object of name -> value", what=what),
            _t('e.g. {{"n_estimators": 100}} for {what}', what=what),
        )
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise InvalidInput(_t("{what} names must be non-empty strings", what=what))
        if scalar_only and not (item is None or isinstance(item, str | int | float | bool)):
            raise InvalidInput(
                _t("{what}[{key!r}] must be a string, number, boolean or null", what=what, key=key),
                _t("got {name__}", name__=type(item).__name__),
            )
    return dict(value)


def check_text(value: object, what: str, max_len: int = 10_000) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > max_len:
        raise InvalidInput(
            _t(
                "{what} must be a string of at most {max_len} characters",
                what=what,
                max_len=max_len,
            )
        )
    return value


def check_optional_id(value: object, what: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str | int) or len(str(value)) > 128:
        raise InvalidInput(_t("{what} must be a string of at most 128 characters", what=what))
    return str(value)


MAX_DATASETS = 32


def check_datasets(value: object) -> list[dict[str, Any]]:
    """Lineage entries ``{"name", "version", "path", "project"}`` (version and project may be
    null: a dataset used as registered, before any export); duplicates are dropped."""
    if value is None:
        return []
    example = '[{"name": "pets", "version": 2, "path": "/data/datasets/7/v2"}]'
    if not isinstance(value, list | tuple) or len(value) > MAX_DATASETS:
        raise InvalidInput(
            _t(
                "datasets must be a list of at most {MAX_DATASETS} objects",
                MAX_DATASETS=MAX_DATASETS,
            ),
            example,
        )
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(value):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise InvalidInput(_t("datasets[{i}] must be an object with a name", i=i), example)
        unknown = sorted(set(entry) - {"name", "version", "path", "project"})
        if unknown:
            raise InvalidInput(
                _t("datasets[{i}] has unknown fields {unknown}", i=i, unknown=unknown),
                _t("Known: name, version, path, project."),
            )
        version = entry.get("version")
        if version is not None and (
            isinstance(version, bool) or not isinstance(version, int) or version < 1
        ):
            raise InvalidInput(_t("datasets[{i}].version must be a version number or null", i=i))
        clean = {
            "project": check_text(entry.get("project"), f"datasets[{i}].project", 128) or None,
            "name": check_text(entry["name"], f"datasets[{i}].name", 128),
            "version": version,
            "path": check_text(entry.get("path"), f"datasets[{i}].path", 1024) or None,
        }
        if clean not in out:
            out.append(clean)
    return out


class EmptyArtifact(InvalidInput):
    """Nothing to register: an empty folder (or one of empty folders / files), a 0-byte file.
    Callers that know where the model should have been saved add that with ``with_hint``."""

    DETAIL = (
        "A model needs at least one non-empty file. Save the model first (e.g. "
        "joblib.dump(model, 'model.joblib'), torch.save(model.state_dict(), 'model.pt'), "
        "model.save_pretrained(folder)), then register the file or folder it wrote."
    )

    def __init__(self, error: str, detail: str | None = None, path: str = "") -> None:
        super().__init__(error, detail or self.DETAIL)
        self.path = path

    @classmethod
    def of(cls, path: Path) -> EmptyArtifact:
        if path.is_dir():
            entries = list(path.rglob("*"))
            if not entries:
                what = f"the folder {path} is empty"
            elif not any(p.is_file() for p in entries):
                what = f"the folder {path} holds only empty folders"
            else:
                what = f"the folder {path} holds only empty (0-byte) files"
        else:
            what = f"the file {path} is empty (0 bytes)"
        return cls(f"nothing to register: {what}", path=str(path))

    def with_hint(self, hint: str) -> EmptyArtifact:
        """The same refusal, saying first where the model should have been saved."""
        return EmptyArtifact(
            self.error, _t("{hint} {DETAIL}", hint=hint, DETAIL=self.DETAIL), self.path
        )
