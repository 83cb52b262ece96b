"""register-model: add a model file or folder to cube-lab's registry as a new version.

The one template that imports cube_lab: registering is a call into the registry.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, NoReturn


def fail(message: str, code: int = 2) -> NoReturn:
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def load_params() -> dict[str, Any]:
    try:
        params = json.loads(os.environ["CUBE_PARAMS"])
    except (KeyError, ValueError):
        fail("CUBE_PARAMS must hold the parameters as a JSON object (run through cube-lab)")
    if not isinstance(params, dict):
        fail("CUBE_PARAMS must be a JSON object")
    return params


def publish(values: dict[str, Any]) -> None:
    target = os.environ.get("CUBE_VALUES_FILE")
    if target:
        tmp = Path(f"{target}.tmp")
        tmp.write_text(json.dumps(values), encoding="utf-8")
        tmp.replace(target)


def read_metrics(path: Path) -> dict[str, float]:
    """The numeric entries of a metrics JSON file; other entries are reported and skipped."""
    if not path.is_file():
        fail(f"metrics file {str(path)!r} does not exist (paths are relative to {Path.cwd()})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        fail(f"cannot read {path} as JSON: {exc}")
    if not isinstance(data, dict):
        fail(f"{path} must hold a JSON object of metric name -> number")
    metrics: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            print(f"skipping {key!r} from {path}: not a number", flush=True)
        elif not math.isfinite(value):
            print(f"skipping {key!r} from {path}: {value} is not finite", flush=True)
        else:
            metrics[key] = float(value)
    return metrics


def main() -> None:
    params = load_params()
    model_path = Path(params["model_path"])
    if not model_path.exists():
        fail(f"model {str(model_path)!r} does not exist (paths are relative to {Path.cwd()})")
    metrics: dict[str, float] = {}
    if params.get("metrics_path"):
        metrics.update(read_metrics(Path(params["metrics_path"])))
    metrics.update(params.get("metrics") or {})

    from cube_lab.errors import CubeError
    from cube_lab.registry import register

    print(f"registering {model_path} as {params['name']!r}", flush=True)
    try:
        version = register(
            model_path,
            name=params["name"],
            project=params.get("project") or None,
            metrics=metrics,
            params=params.get("params") or {},
            tags=params.get("tags") or {},
            description=params.get("description") or "",
            aliases=params.get("aliases") or [],
            pipeline_run_id=os.environ.get("CUBE_RUN_ID") or None,
        )
    except CubeError as exc:
        detail = f" ({exc.detail})" if exc.detail else ""
        fail(f"{exc.error}{detail}", code=2 if exc.status < 500 else 1)
    print(
        f"registered {version.model} version {version.version} in project {version.project} "
        f"({version.flavor}, {version.size_bytes} bytes)",
        flush=True,
    )
    publish(
        {
            "name": version.model,
            "project": version.project,
            "version": version.version,
            "flavor": version.flavor,
        }
    )


if __name__ == "__main__":
    main()
