"""CPU and memory amounts as people write them ("2", "500m", "4G", "512Mi")."""

from __future__ import annotations

import re
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

# KubeSpawner reads "4G" as 4 * 1024**3 (ByteSpecification); take the same reading so a
# quota of "64G" and a profile of "4G" mean the same bytes in both shapes.
_SUFFIX = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_MEM_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B?\s*$", re.IGNORECASE)
_GIB = 1024**3


def parse_memory(value: Any, what: str = "memory") -> int:
    """Bytes from 4294967296, "4G", "4Gi" or "4096M"."""
    if isinstance(value, bool):
        raise InvalidInput(
            _t("{what} must be an amount like 4G", what=what), _t("got {value!r}", value=value)
        )
    if isinstance(value, int | float):
        if value < 0:
            raise InvalidInput(
                _t("{what} must not be negative", what=what), _t("got {value!r}", value=value)
            )
        return int(value)
    match = _MEM_RE.match(str(value))
    if not match:
        raise InvalidInput(
            _t("{what} must be an amount like 4G, 512M or 4Gi", what=what),
            _t("got {value!r} (K/M/G/T = 1024^n)", value=value),
        )
    return int(float(match.group(1)) * _SUFFIX[match.group(2).upper()])


def parse_cpu(value: Any, what: str = "cpu") -> float:
    """Cores from 2, 0.5 or "500m"."""
    if isinstance(value, bool):
        raise InvalidInput(
            _t("{what} must be a number of cores", what=what), _t("got {value!r}", value=value)
        )
    if isinstance(value, str) and value.strip().endswith("m"):
        try:
            return float(value.strip()[:-1]) / 1000
        except ValueError:
            pass
    try:
        cores = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(
            _t("{what} must be a number of cores like 2 or 500m", what=what),
            _t("got {value!r}", value=value),
        ) from None
    if cores < 0:
        raise InvalidInput(
            _t("{what} must not be negative", what=what), _t("got {value!r}", value=value)
        )
    return cores


def format_memory(num_bytes: float) -> str:
    gib = num_bytes / _GIB
    return f"{gib:g}" if gib == round(gib, 2) else f"{gib:.2f}"
