"""The Python API: ``best = cube_lab.tune("config.yml")`` in a notebook or a script."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config import local_username
from ..errors import InvalidInput
from ..identity import Caller


@contextmanager
def _tuners_quiet() -> Iterator[None]:
    """NNI's tuners log INFO lines ("Using random seed ...") to stdout: in a notebook that is
    noise under the cell; their warnings and errors still show."""
    # importing it first sets the "nni" logger's level: do that before we raise it
    from nni.runtime import log  # noqa: F401

    logger = logging.getLogger("nni")
    before = logger.level
    logger.setLevel(max(before, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(before)


def tune(
    config: str | Path | dict[str, Any], base_dir: str | Path | None = None, **overrides: Any
) -> dict[str, Any]:
    """Run an NNI-style experiment to its end; return the best trial's parameters and metric.

    ``config`` is a YAML/JSON file or a dict of NNI v2 config fields; ``overrides`` replace
    fields (e.g. ``maxTrialNumber=20``). Runs in a thread of its own, so it also works
    inside a Jupyter kernel, whose event loop is already running."""
    import yaml

    from ..workspace import default_workspace

    if isinstance(config, str | Path):
        path = Path(config)
        try:
            data = yaml.safe_load(path.read_text())
        except FileNotFoundError:
            raise InvalidInput(f"config file {str(path)!r} not found") from None
        base = Path(base_dir) if base_dir else path.resolve().parent
    else:
        data, base = dict(config), Path(base_dir or ".").resolve()
    if not isinstance(data, dict):
        raise InvalidInput("an experiment config must be a mapping")
    data.update(overrides)
    ws = default_workspace()
    caller = Caller(local_username())
    engine = ws.tuning.prepare(caller, ws.tuning.parse(data, base))
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            with _tuners_quiet():
                result["status"] = ws.tuning.run_foreground(engine)
        except BaseException as exc:  # handed to the caller's thread below
            result["error"] = exc

    thread = threading.Thread(target=work, name=f"tune-{engine.experiment_id}")
    thread.start()
    try:
        thread.join()
    except KeyboardInterrupt:  # Jupyter's interrupt button: stop the trials, then return
        engine.stop()
        thread.join()
    if "error" in result:
        raise result["error"]
    view = ws.tuning.get(caller, engine.experiment_id)
    best = view.best
    return {
        "experiment": view.id,
        "status": view.status,
        "parameters": best.parameters if best else None,
        "metric": best.final if best else None,
        "trials": view.trial_count,
    }
