"""The catalog of job templates found in one or more ``templates/`` folders."""

from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import NotFound
from ..locale.messages import _t
from .loader import TEMPLATE_FILE, TemplateLoadError, load_template
from .model import JobTemplate

ENV_TEMPLATE_PATH = "CUBE_LAB_TEMPLATE_PATH"


def default_template_dirs() -> list[Path]:
    """Folders from ``CUBE_LAB_TEMPLATE_PATH`` first (so users can override a shipped
    template), then the project's own ``templates/`` folder."""
    dirs = [Path(p).expanduser() for p in os.environ.get(ENV_TEMPLATE_PATH, "").split(os.pathsep)]
    dirs = [d for d in dirs if str(d) not in ("", ".")]
    # Source checkouts and editable installs (the folder beside the package: cube_lab/../);
    # a wheel may carry them as shared data.
    candidates = [
        Path(__file__).resolve().parents[2] / "templates",
        Path(sys.prefix) / "share" / "cube-lab" / "templates",
    ]
    for candidate in candidates:
        if candidate.is_dir() and candidate not in dirs:
            dirs.append(candidate)
    return dirs


@dataclass(frozen=True)
class TemplateProblem:
    path: Path
    problems: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "problems": list(self.problems)}


class TemplateCatalog:
    """Every template in ``dirs``; a broken one is listed in ``errors`` and skipped.

    When two folders hold a template of the same name, the earlier folder wins.
    """

    def __init__(self, dirs: list[Path] | None = None) -> None:
        self.dirs = [Path(d) for d in (default_template_dirs() if dirs is None else dirs)]
        self._templates: dict[str, JobTemplate] = {}
        self.errors: list[TemplateProblem] = []
        self.reload()

    def reload(self) -> None:
        """Scan the folders again (templates may be edited while the server runs)."""
        templates: dict[str, JobTemplate] = {}
        errors: list[TemplateProblem] = []
        for root in self.dirs:
            if not root.is_dir():
                continue
            for folder in sorted(root.iterdir()):
                if folder.name.startswith((".", "_")) or not (folder / TEMPLATE_FILE).is_file():
                    continue
                try:
                    template = load_template(folder)
                except TemplateLoadError as exc:
                    errors.append(TemplateProblem(exc.path, exc.problems))
                    continue
                templates.setdefault(template.name, template)
        self._templates = dict(sorted(templates.items()))
        self.errors = errors

    def list(self) -> list[JobTemplate]:
        return list(self._templates.values())

    def names(self) -> list[str]:
        return list(self._templates)

    def get(self, name: str) -> JobTemplate:
        template = self._templates.get(name)
        if template is None:
            searched = ", ".join(str(d) for d in self.dirs) or "(no folders)"
            known = ", ".join(self._templates) or "none"
            broken = [str(e.path) for e in self.errors]
            detail = f"Known templates: {known}. Searched: {searched}."
            close = difflib.get_close_matches(name, self._templates, n=1)
            if close:
                detail = f"Did you mean {close[0]!r}? " + detail
            if broken:
                detail += f" Templates that failed to load: {', '.join(broken)}."
            raise NotFound(_t("no job template named {name!r}", name=name), detail)
        return template

    def __contains__(self, name: object) -> bool:
        return name in self._templates

    def to_json(self) -> dict[str, Any]:
        return {
            "templates": [t.to_json() for t in self.list()],
            "errors": [e.to_json() for e in self.errors],
        }
