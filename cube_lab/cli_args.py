"""Shared by the CLI modules and the magics: ``k=v`` pairs, ``NAME[:VERSION]``, and printing
JSON and tables."""

from __future__ import annotations

import json
from typing import Any

from .errors import InvalidInput


def parse_pairs(pairs: list[str] | None, what: str, numeric: bool = False) -> dict[str, Any]:
    """``["lr=0.1", "opt=adam"]`` -> ``{"lr": 0.1, "opt": "adam"}`` (numbers and booleans typed)."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"invalid {what} {pair!r}", f"Write {what}s as KEY=VALUE.")
        if numeric:
            try:
                out[key] = float(raw)
            except ValueError:
                raise InvalidInput(f"{what} {key!r} must be a number, got {raw!r}") from None
            continue
        try:
            value = json.loads(raw)
            out[key] = value if isinstance(value, int | float | bool) else raw
        except json.JSONDecodeError:
            out[key] = raw
    return out


def split_ref(text: str) -> tuple[str, str]:
    """``iris:3`` -> ("iris", "3"); ``iris`` -> ("iris", "latest")."""
    name, _, ref = text.partition(":")
    return name, ref or "latest"


def print_json(value: Any) -> None:
    from .serialize import to_jsonable

    print(json.dumps(to_jsonable(value), indent=2))


def print_table(rows: list[list[str]], header: list[str]) -> None:
    """Left-aligned columns, two spaces apart, the header first."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
