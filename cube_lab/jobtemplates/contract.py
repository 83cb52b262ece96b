"""The runtime contract between a runner and template code (see templates/README.md).

A runner starts the template's ``command`` with the pipeline's folder as working
directory and these environment variables; template code reads nothing else from us.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

ENV_PARAMS = "CUBE_PARAMS"  # the validated parameters, as a JSON object
ENV_VALUES_FILE = "CUBE_VALUES_FILE"  # where the node may write a small JSON object of values
ENV_RUN_ID = "CUBE_RUN_ID"  # the pipeline run, for lineage (e.g. the model registry)
MAX_VALUES_BYTES = 1 << 20  # values are for small things (metrics, counts), not data


def node_env(
    params: dict[str, Any], values_file: Path | None = None, run_id: str | None = None
) -> dict[str, str]:
    """The variables to add to a node's environment."""
    env = {ENV_PARAMS: json.dumps(params)}
    if values_file is not None:
        env[ENV_VALUES_FILE] = str(values_file)
    if run_id:
        env[ENV_RUN_ID] = run_id
    return env


def read_values(path: Path) -> dict[str, Any]:
    """The values a node published; {} when it wrote none. Raises InvalidInput when bad."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return {}
    if size > MAX_VALUES_BYTES:
        raise InvalidInput(
            _t(
                "values file {path} is {size} bytes, over the {MAX_VALUES_BYTES} byte limit",
                path=path,
                size=size,
                MAX_VALUES_BYTES=MAX_VALUES_BYTES,
            ),
            _t("Publish small values (metrics, counts, names); write data to an output file."),
        )

    def refuse_constant(name: str) -> float:
        raise ValueError(f"{name} is not valid JSON")

    try:
        values = json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            _t("values file {path} is not valid JSON", path=path), str(exc)
        ) from None
    if not isinstance(values, dict):
        raise InvalidInput(
            _t("values file {path} must hold a JSON object", path=path),
            _t("got {name__}", name__=type(values).__name__),
        )
    bad = [k for k, v in values.items() if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        raise InvalidInput(_t("values {bad} are not finite numbers", bad=bad))
    return values
