"""A loaded job template: what the pipeline editor shows and what a runner executes."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import params as _params

CATEGORIES = ("Data", "Training", "Evaluation", "Registry", "Inference")
PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
TEMPLATE_DIR = "template_dir"
PYTHON_NAMES = ("python", "python3")


@dataclass(frozen=True)
class TemplateOutput:
    name: str
    parameter: str  # the output file is the value of this parameter
    description: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "parameter": self.parameter, "description": self.description}


@dataclass(frozen=True)
class JobTemplate:
    name: str
    display_name: str
    category: str
    description: str
    directory: Path
    command_template: tuple[str, ...]
    parameters: dict[str, Any]
    outputs: tuple[TemplateOutput, ...] = ()
    image: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys prefixed "x-", kept for tools

    def validate_params(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """The parameters with defaults filled in; raises InvalidInput naming what broke."""
        return _params.validate(self.name, self.parameters, params)

    def command(self, params: dict[str, Any] | None, *, python: str | None = None) -> list[str]:
        """argv with ``{template_dir}`` and ``{<parameter>}`` substituted.

        ``python`` replaces a leading ``python``/``python3``, so local runs use the
        server's interpreter (with its libraries) rather than whatever is on PATH.
        """
        values = self.validate_params(params)

        def substitute(match: re.Match[str]) -> str:
            key = match.group(1)
            if key == TEMPLATE_DIR:
                return str(self.directory)
            if key in values:
                value = values[key]
                return value if isinstance(value, str) else json.dumps(value)
            return match.group(0)  # unknown names were refused at load; optional ones stay

        argv = [PLACEHOLDER_RE.sub(substitute, arg) for arg in self.command_template]
        if python and argv and argv[0] in PYTHON_NAMES:
            argv[0] = python
        return argv

    def output_paths(self, params: dict[str, Any]) -> dict[str, str]:
        """Output name -> the path the node writes (as given, relative to the pipeline folder)."""
        return {o.name: str(params[o.parameter]) for o in self.outputs if params.get(o.parameter)}

    def path_parameters(self) -> list[str]:
        """Parameters whose value is a file path (``format: path``), in schema order."""
        props = self.parameters.get("properties", {})
        return [n for n, p in props.items() if isinstance(p, dict) and p.get("format") == "path"]

    def check_paths(self, params: dict[str, Any], folder: Path, root: Path) -> dict[str, Path]:
        """Each path parameter's value (references already resolved) as the real path it
        names inside ``root``, relative to ``folder``; raises ``PathRefused`` (an
        InvalidInput) for one that is absolute, holds a NUL byte, or leads out of ``root``
        through ``..`` or a symbolic link (the rule of ``cube_lab.containment``)."""
        from .. import containment

        found: dict[str, Path] = {}
        for name in self.path_parameters():
            value = params.get(name)
            if value in (None, ""):
                continue
            found[name] = containment.resolve(
                root,
                value,
                base=folder,
                absolute="refuse",
                what=f"parameters.{name}",
                where="the project",
            )
        return found

    def input_parameters(self) -> list[str]:
        """Path parameters that are read, not written: what a cache should hash."""
        written = {o.parameter for o in self.outputs}
        return [n for n in self.path_parameters() if n not in written]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "display_name": self.display_name,
            "category": self.category,
            "description": self.description,
            "image": self.image,
            "parameters": copy.deepcopy(self.parameters),
            "outputs": [o.to_json() for o in self.outputs],
        }
