"""What every part of the Elyra format shares: the versions it speaks and the error it raises."""

from __future__ import annotations

from typing import Any

from ...errors import InvalidInput
from ...locale.messages import _t

ELYRA_VERSION = 8
SCHEMA_VERSION = "3.0"
SCHEMA_URL = (
    "http://api.dataplatform.ibm.com/schemas/common-pipeline/pipeline-flow/"
    "pipeline-flow-v3-schema.json"
)
# Before version 7 these sat directly in a node's app_data.


class PipelineFormatError(InvalidInput):
    """The file is not a pipeline cube-lab can read; ``detail`` names the field."""


def expect(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise PipelineFormatError(
            _t("{where} must be a {value}", where=where, value=json_name(names)),
            _t("found {value}", value=json_name(type(value).__name__)),
        )
    return value


def json_name(python_name: str) -> str:
    names = {
        "dict": "object",
        "list": "array",
        "str": "string",
        "int": "number",
        "float": "number",
        "bool": "boolean",
        "NoneType": "null",
    }
    return " or ".join(names.get(n.strip(), n) for n in python_name.split(" or "))
