"""The "tuning" node kind: a pipeline node that runs a hyperparameter search.

Registered through the ``cube_lab.node_kinds`` entry point. The node names an NNI-style
experiment config (a YAML/JSON file of the project); running it runs
``cube-lab tune CONFIG --json`` (the experiment is recorded and shows in the Tuning
panel) and publishes the best trial as node values: ``best_metric``, ``best_trial``,
``experiment``, and ``param_<name>`` for each best parameter, which later nodes reference
as ``{{ nodes.<node>.values.param_lr }}`` (e.g. a training node's arguments).
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from ..errors import InvalidInput
from ..locale.messages import _t
from ..pipelines.model import Node
from ..pipelines.nodekinds import FileNodeKind, NodeCommand, NodeContext, Problem
from . import spec as specs

OP_TUNING = "cube-lab:tuning"

PARAMETERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["filename"],
    "properties": {
        "filename": {"type": "string", "title": "Experiment config (NNI YAML)", "format": "file"},
        "max_trials": {"type": "integer", "minimum": 1, "title": "Max trials (overrides)"},
        "concurrency": {"type": "integer", "minimum": 1, "title": "Trials at a time"},
    },
}


class TuningKind(FileNodeKind):
    name = "tuning"
    ops = (OP_TUNING,)
    display_name = "Hyperparameter search"
    suffixes = (".yml", ".yaml", ".json")
    schema = PARAMETERS_SCHEMA

    def check(self, node: Node, ctx: NodeContext) -> list[Problem]:
        problems = super().check(node, ctx)
        if problems:
            return problems
        path = self.file(node, ctx)
        try:
            specs.parse(yaml.safe_load(path.read_text()), path.parent)
        except yaml.YAMLError as exc:
            message = _t("not valid YAML: {error}", error=str(exc))
            return [Problem(node.id, "filename", message, node.label)]
        except InvalidInput as exc:
            message = _t("{file}: {error}", file=path.name, error=exc.error)
            return [Problem(node.id, "filename", message, node.label)]
        for key in ("max_trials", "concurrency"):
            value = node.params.get(key)
            if value not in (None, "") and (not isinstance(value, int) or value < 1):
                message = _t("{what} must be a whole number of at least {low}", what=key, low=1)
                return [Problem(node.id, key, message, node.label)]
        return []

    def command(self, node: Node, ctx: NodeContext) -> NodeCommand:
        path = self.file(node, ctx)
        argv = [sys.executable, "-m", "cube_lab.tuning.node_main", str(path)]
        for key, flag in (("max_trials", "--max-trials"), ("concurrency", "--concurrency")):
            if node.params.get(key):
                argv += [flag, str(node.params[key])]
        return NodeCommand(argv, path.parent, params={"config": str(path)})
