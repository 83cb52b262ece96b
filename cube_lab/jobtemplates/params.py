"""Parameters of a job template: a JSON Schema (draft 2020-12) object, checked with jsonschema.

The messages name the parameter and the rule it broke, because they end up in the
pipeline editor next to the field a user has to fix.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, SchemaError
from jsonschema.exceptions import ValidationError

from ..errors import InvalidInput
from ..locale.messages import _t

# Only top-level names can be placeholders or outputs, so keep them identifier-like.
PARAM_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class ParamProblem:
    parameter: str  # dotted path, "" for the parameters object itself
    rule: str  # the JSON Schema keyword that failed, e.g. "required", "maximum"
    message: str

    def to_json(self) -> dict[str, str]:
        return {"parameter": self.parameter, "rule": self.rule, "message": self.message}


def check_schema(schema: object) -> list[str]:
    """Problems with a template's ``parameters`` schema itself (empty when it is usable)."""
    if not isinstance(schema, dict):
        return ["'parameters' must be a JSON Schema object (a mapping)"]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return [f"'parameters' is not a valid JSON Schema at {where}: {exc.message}"]
    problems = []
    if schema.get("type") != "object":
        problems.append("'parameters' must have 'type: object'")
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return [*problems, "'parameters' must list its parameters under 'properties'"]
    for name, prop in properties.items():
        if not PARAM_NAME_RE.match(name):
            problems.append(f"parameter name {name!r} must be letters, digits and '_'")
        # A default that breaks its own rule would fail every run that relies on it.
        if isinstance(prop, dict) and "default" in prop:
            for error in Draft202012Validator(prop).iter_errors(prop["default"]):
                problems.append(f"default of parameter {name!r} is invalid: {error.message}")
    for name in schema.get("required", []):
        if name not in properties:
            problems.append(f"required parameter {name!r} is not in 'properties'")
    return problems


def _problems(schema: dict[str, Any], params: dict[str, Any]) -> list[ParamProblem]:
    out = []
    errors = sorted(
        Draft202012Validator(schema).iter_errors(params),
        key=lambda e: [str(p) for p in e.absolute_path],
    )
    for error in errors:
        out.extend(_explain(error, schema))
    return out


def _explain(error: ValidationError, schema: dict[str, Any]) -> list[ParamProblem]:
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required" and not path:
        missing = [n for n in error.validator_value if n not in error.instance]
        return [ParamProblem(n, "required", f"parameter {n!r} is required") for n in missing]
    if error.validator == "additionalProperties" and not path:
        known = set(schema.get("properties", {}))
        extra = sorted(n for n in error.instance if n not in known)
        return [ParamProblem(n, "additionalProperties", f"unknown parameter {n!r}") for n in extra]
    label = f"parameter {path!r}" if path else "parameters"
    return [ParamProblem(path, str(error.validator), f"{label}: {error.message}")]


def validate(template: str, schema: dict[str, Any], params: object) -> dict[str, Any]:
    """``params`` with defaults filled in; raises InvalidInput listing every broken rule."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidInput(
            _t("parameters of template {template!r} must be an object", template=template),
            _t(
                "got {name__}; pass a mapping of parameter name -> value",
                name__=type(params).__name__,
            ),
        )
    filled = copy.deepcopy(params)
    for name, prop in schema.get("properties", {}).items():
        if name not in filled and isinstance(prop, dict) and "default" in prop:
            filled[name] = copy.deepcopy(prop["default"])
    problems = _problems(schema, filled)
    if problems:
        first = problems[0]
        raise InvalidInput(
            _t(
                "template {template!r}: {message} (rule: {rule})",
                template=template,
                message=first.message,
                rule=first.rule,
            ),
            {
                "template": template,
                "problems": [p.to_json() for p in problems],
                "known_parameters": sorted(schema.get("properties", {})),
            },
        )
    return filled
