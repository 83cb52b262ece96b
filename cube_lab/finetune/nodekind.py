"""The "finetune" node kind: a pipeline node that fine-tunes an LLM and registers the result.

Registered through the ``cube_lab.node_kinds`` entry point (see pyproject.toml). The node's
file is a fine-tune config (cube-lab's keys or a LLaMA-Factory training YAML, see
docs/finetune.md); its parameters may override ``max_steps``, ``learning_rate`` and
``num_train_epochs``, set the processes (``nproc``) and a model name to ``register`` the
result as. Running the node runs ``python -m cube_lab.finetune.node_main``: the fine-tune
is a recorded training job (its log streams into the node's), and the node publishes
``job_id``, ``status``, ``output_dir``, the final metrics and, when it registered the model,
``model``, ``version``, ``project`` and ``model_ref`` (``NAME:VERSION``), which a later node
references as ``{{ nodes.<node>.values.model_ref }}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..identity import check_name
from ..locale.messages import _t
from ..pipelines.model import Node
from ..pipelines.nodekinds import FileNodeKind, NodeCommand, NodeContext, Problem
from .config import FinetuneConfig

OP_FINETUNE = "cube-lab:finetune"
ENV_SPEC = "CUBE_FINETUNE_SPEC"
OVERRIDES = ("max_steps", "learning_rate", "num_train_epochs")

# What the pipeline editor's properties panel builds its form from.
PARAMETERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["filename"],
    "properties": {
        "filename": {
            "type": "string",
            "title": "Fine-tune config (YAML/JSON, or a LLaMA-Factory YAML)",
            "format": "file",
        },
        "register": {
            "type": "string",
            "title": "Register as model",
            "description": "The model name to register the result as (empty: not registered).",
        },
        "nproc": {"type": "integer", "minimum": 1, "default": 1, "title": "Processes"},
        "max_steps": {"type": "integer", "minimum": 1, "title": "Max steps (overrides)"},
        "learning_rate": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1,
            "title": "Learning rate (overrides)",
        },
        "num_train_epochs": {
            "type": "number",
            "exclusiveMinimum": 0,
            "title": "Epochs (overrides)",
        },
    },
}


def raw_config(path: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The config file's mapping with the node's overrides applied over its keys."""
    from .service import read_config_file

    raw = read_config_file(path)
    if not isinstance(raw, dict):
        raise InvalidInput(
            _t("a fine-tune config must be a mapping"),
            _t("got {name__}", name__=type(raw).__name__),
        )
    overrides = {k: params[k] for k in OVERRIDES if params.get(k) not in (None, "")}
    return {**raw, **overrides}


class FinetuneKind(FileNodeKind):
    name = "finetune"
    ops = (OP_FINETUNE,)
    display_name = "Fine-tune LLM"
    suffixes = (".yaml", ".yml", ".json")
    schema = PARAMETERS_SCHEMA

    def spec(self, node: Node, ctx: NodeContext) -> dict[str, Any]:
        """What ``node_main`` runs: the config (overrides applied), its folder, the rest."""
        path = self.file(node, ctx)
        config = raw_config(path, node.params)
        if ctx.run_dir is not None and not config.get("output_dir"):
            config["output_dir"] = str(ctx.run_dir / "output")  # in the node's folder of the run
        return {
            "config": config,
            "config_path": str(path),
            "base_dir": str(path.parent),
            "nproc": node.params.get("nproc") or 1,
            "register": node.params.get("register") or None,
        }

    def check(self, node: Node, ctx: NodeContext) -> list[Problem]:
        problems = super().check(node, ctx)
        if problems:
            return problems
        p = node.params
        nproc = p.get("nproc")
        if nproc not in (None, "") and (type(nproc) is not int or nproc < 1):
            message = _t("{what} must be a whole number of at least {low}", what="nproc", low=1)
            return [Problem(node.id, "nproc", message, node.label)]
        if p.get("register") not in (None, ""):
            try:
                check_name(p["register"], "model name")
            except InvalidInput as exc:
                return [Problem(node.id, "register", exc.error, node.label)]
        path = self.file(node, ctx)
        try:
            FinetuneConfig.from_dict(raw_config(path, p), path.parent)
        except InvalidInput as exc:
            field = _field_of(exc.error)
            if field in OVERRIDES and p.get(field) not in (None, ""):
                return [Problem(node.id, field, exc.error, node.label)]
            message = f"{path.name}: {exc.error}"
            return [Problem(node.id, "filename", message, node.label)]
        return []

    def inputs(self, node: Node, ctx: NodeContext) -> list[Path]:
        """The config file and its data files (for the cache: changed data is a new run)."""
        found = super().inputs(node, ctx)
        path = found[0]
        config = FinetuneConfig.from_dict(raw_config(path, node.params), path.parent)
        for source in (config.data, config.eval_data):
            data = Path(source.path) if source is not None and source.path else None
            if data is not None and data.is_file() and data not in found:
                found.append(data)
        return found

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand:
        spec = self.spec(node, ctx)
        return NodeCommand(
            [sys.executable, "-m", "cube_lab.finetune.node_main"],
            Path(spec["base_dir"]),
            env={ENV_SPEC: json.dumps(spec)},
            params={k: v for k, v in spec.items() if k != "base_dir"},
        )


def _field_of(message: str) -> str:
    """The config key an error is about (the config's messages start with its name)."""
    return message.split(" ", 1)[0].split(":", 1)[0].split(".", 1)[0]
