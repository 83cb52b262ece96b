"""Turn service results (dataclasses, datetimes) into JSON-ready values."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any


def aware(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything cube-lab stores is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return aware(value).isoformat()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value
