"""What several commands print, local and remote alike (from the REST JSON of a result)."""

from __future__ import annotations

import sys
from typing import Any


def _stamp(value: str | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """An ISO time of the JSON form, as the tables show it ("" when there is none)."""
    from datetime import datetime

    return datetime.fromisoformat(value).strftime(fmt) if value else ""


def job_finished_line(job_id: str, status: str, view: dict[str, Any]) -> str:
    error = f" ({view['error']})" if view.get("error") else ""
    took = f" in {view['duration_s']:.1f}s" if view.get("duration_s") is not None else ""
    return f"job {job_id} {status}{took}{error}"


def _print_problems(problems: list[Any]) -> None:
    """Validation problems, one a line, in $LANG's language."""
    from ..locale.messages import _t, env_locale

    locale = env_locale()
    for p in problems:
        node = p.node_label or p.node_id
        where = _t("node {node!r}: ", node=node).translated(locale) if p.node_id else ""
        message = p.message.translated(locale) if hasattr(p.message, "translated") else p.message
        print(f"  {where}{p.field}: {message}", file=sys.stderr)
