"""The "training" node kind: a pipeline node that runs a distributed training job.

Registered through the ``cube_lab.node_kinds`` entry point (see pyproject.toml), the
same way any other package adds a kind. The node's parameters are a job spec (script,
framework, workers, processes, GPUs); running the node runs
``python -m cube_lab.training.node_main``, which records the job like ``cube-lab train``
does (so it shows in the Training panel with its per-rank logs and metrics), streams
the ranks' output into the node's log, and publishes the job id, status, output folder
and last metrics as node values that downstream nodes can reference, e.g.
``{{ nodes.train.values.job_id }}`` for a "register model" node.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any

from .. import accelerators
from ..errors import InvalidInput
from ..locale.messages import _t
from ..pipelines.model import Node
from ..pipelines.nodekinds import FileNodeKind, NodeCommand, NodeContext, Problem
from .spec import FRAMEWORKS, JobSpec

OP_TRAINING = "cube-lab:training"
ENV_SPEC = "CUBE_TRAINING_SPEC"

# What the pipeline editor's properties panel builds its form from.
PARAMETERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["filename"],
    "properties": {
        "filename": {"type": "string", "title": "Training script", "format": "file"},
        "framework": {
            "type": "string",
            "enum": list(FRAMEWORKS),
            "default": "pytorch",
            "title": "Framework",
        },
        "arguments": {
            "type": "string",
            "title": "Arguments",
            "description": "The script's arguments, quoted as in a shell.",
        },
        "workers": {"type": "integer", "minimum": 1, "default": 1, "title": "Workers"},
        "nproc_per_worker": {
            "type": "integer",
            "minimum": 1,
            "default": 1,
            "title": "Processes per worker",
        },
        "gpus": {"type": "integer", "minimum": 0, "default": 0, "title": "GPUs per worker"},
        "gpu_type": {
            "type": "string",
            "enum": [a.key for a in accelerators.all_accelerators()],
            "default": "nvidia-gpu",
            "title": "GPU type",
        },
    },
}


class TrainingKind(FileNodeKind):
    name = "training"
    ops = (OP_TRAINING,)
    display_name = "Training job"
    suffixes = (".py",)
    schema = PARAMETERS_SCHEMA

    def spec(self, node: Node, ctx: NodeContext) -> dict[str, Any]:
        """The job spec (as ``JobSpec.from_dict`` takes it) that the node's parameters say."""
        p = node.params
        script = self.file(node, ctx)
        raw_args = p.get("arguments") or ""
        try:
            args = shlex.split(raw_args) if isinstance(raw_args, str) else list(raw_args)
        except ValueError as exc:
            raise InvalidInput(_t("arguments: {exc}", exc=exc)) from None
        spec: dict[str, Any] = {
            "framework": p.get("framework") or "pytorch",
            "script": str(script),
            "args": [str(a) for a in args],
            "working_dir": str(script.parent),
            "workers": p.get("workers", 1),
            "nproc_per_worker": p.get("nproc_per_worker", 1),
            "resources": {"gpus": p.get("gpus", 0), "gpu_type": p.get("gpu_type") or "nvidia-gpu"},
        }
        if ctx.run_dir is not None:  # checkpoints land in the node's folder of the run
            spec["output_dir"] = str(ctx.run_dir / "output")
        return spec

    def check(self, node: Node, ctx: NodeContext) -> list[Problem]:
        problems = super().check(node, ctx)
        if problems:
            return problems
        try:
            JobSpec.from_dict(self.spec(node, ctx))
        except InvalidInput as exc:
            return [Problem(node.id, _field_of(exc.error), exc.error, node.label)]
        return []

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand:
        spec = self.spec(node, ctx)
        return NodeCommand(
            [sys.executable, "-m", "cube_lab.training.node_main"],
            self.file(node, ctx).parent,
            env={ENV_SPEC: json.dumps(spec)},
            params=spec,
        )


def _field_of(message: str) -> str:
    """The parameter a spec error is about (its messages start with the field's name)."""
    head = message.split(" ", 1)[0].split(":", 1)[0].split(".", 1)[0]
    return head if head in PARAMETERS_SCHEMA["properties"] else "parameters"
