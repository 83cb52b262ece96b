"""Turn service results (dataclasses, datetimes) into JSON-ready values."""

from __future__ import annotations

import dataclasses
import functools
from datetime import UTC, datetime
from typing import Any

_SCALARS = (str, int, float, bool, type(None))


def aware(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything cube-lab stores is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """A dataclass's field names (None for any other class), worked out once per class."""
    if not dataclasses.is_dataclass(cls):
        return None
    return tuple(f.name for f in dataclasses.fields(cls))


def to_jsonable(value: Any) -> Any:
    if isinstance(value, _SCALARS):  # most values: answered before any other check
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return aware(value).isoformat()
    names = None if isinstance(value, type) else _field_names(type(value))
    if names is not None:
        return {name: to_jsonable(getattr(value, name)) for name in names}
    return value
