"""What a run needs before its first node starts, none of which touches the database.

Reading and validating the pipeline, its parameters, the selected nodes, the run id and
the nodes' environment are pure work on files. Keeping them apart from the store lets
``cube-lab pipeline run`` start nodes while another thread imports SQLAlchemy, opens
(and migrates) the store and writes the run record: most of a CLI call's start-up.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import accounts, containment
from ..alerts import events
from ..config import ENV_DATA_DIR, ENV_DB_URL, ENV_ROOT_DIR, ENV_USER, Settings
from ..errors import CubeError, InvalidInput, NotFound
from ..identity import Caller
from ..locale.messages import _t
from . import elyra_format, validation
from .model import Pipeline
from .nodekinds import NodeContext, Problem, safe_path
from .recorder import StoreRecorder
from .runner import LocalRunner, NodeState, Prior, RunPlan


@dataclass
class Launch:
    """A validated request to run a pipeline, not yet recorded or started."""

    run_id: str
    path: Path
    root: Path
    pipeline: Pipeline
    params: dict[str, Any]
    parallelism: int
    selected: set[str]
    options: dict[str, Any]  # what the run record keeps of the request

    def make_folder(self, runs_root: Path) -> Path:
        """The run's folder, with the pipeline file as it was when the run started (a copy
        of the bytes: re-serialising a 200-node pipeline costs a CLI run a tenth of a second).
        """
        folder = runs_root / self.run_id
        folder.mkdir(parents=True)
        shutil.copyfile(self.path, folder / "pipeline.json")
        return folder


def build_runner(
    launch: Launch,
    settings: Settings,
    caller: Caller,
    catalog: Any,
    recorder: StoreRecorder,
    priors: dict[str, Prior] | None = None,
    cache_lookup: Callable[[str], Prior | None] | None = None,
) -> LocalRunner:
    """The runner of a launch, its folder made (not started). With ``settings.os_accounts``
    the nodes run as the caller's OS account, in a run folder only it (and root) enters."""
    folder = launch.make_folder(settings.runs_dir)
    run_as = None
    if settings.os_accounts:
        run_as = accounts.run_as(caller.username, caller.groups, job=("run", launch.run_id, folder))
        accounts.job_folder(folder, run_as, settings.data_dir)
    plan = RunPlan(
        run_id=launch.run_id,
        runs_root=settings.runs_dir,
        root=launch.root,
        parallelism=launch.parallelism,
        selected=launch.selected,
        priors=priors or {},
        params=launch.params,
        base_env=node_env(settings, caller.username, launch.root, launch.options["logical_date"]),
        catalog=catalog,
        cache_lookup=cache_lookup,
        run_as=run_as,
        store=settings.data_dir,
    )
    return LocalRunner(launch.pipeline, plan, recorder)


async def execute(runner: LocalRunner, recorder: StoreRecorder) -> str:
    """Run to the end; the record is complete on disk when this returns. A run whose
    record cannot be written is cancelled, and the reason raised."""
    recorder.start(on_error=lambda _exc: runner.cancel())
    try:
        status = await runner.run()
    except BaseException as exc:
        runner.cancel()
        recorder.run_changed("failed", f"the runner stopped: {type(exc).__name__}: {exc}")
        raise
    finally:
        await asyncio.to_thread(recorder.close)
        events.finished(getattr(recorder, "store", None), "run", recorder.run_id)  # alert rules
    if recorder.error is not None:
        raise recorder.error
    return status


def run_foreground(
    runner: LocalRunner,
    recorder: StoreRecorder,
    listener: Callable[[NodeState], None] | None = None,
    run: Callable[[LocalRunner, StoreRecorder], Awaitable[str]] = execute,
) -> str:
    """Run in this process (the CLI); Ctrl-C or SIGTERM cancel the run cleanly."""
    if listener:
        runner.listeners.append(listener)

    async def main() -> str:
        loop = asyncio.get_running_loop()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, runner.cancel)
        return await run(runner, recorder)

    # The runner is latency-bound (a node exits, the next must start now); the recorder
    # thread is busy importing SQLAlchemy and migrating. With Python's default 5 ms switch
    # interval the runner waits for the GIL after every system call; 0.5 ms cuts a
    # 200-node chain by about 0.2 s.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, 0.0005))
    try:
        return asyncio.run(main())
    finally:
        sys.setswitchinterval(interval)


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def open_pipeline(path: Path, root: Path) -> Pipeline:
    path = containment.resolve(root, path, what="pipeline", where=f"the project folder {root}")
    return elyra_format.load(path)


def node_context(
    pipeline: Pipeline, root: Path, catalog: Any, caller: Any = None, services: Any = None
) -> NodeContext:
    return NodeContext(pipeline.folder or root, root, catalog, caller=caller, services=services)


def plan_launch(
    path: Path,
    root: Path,
    catalog: Any,
    *,
    params: dict[str, Any] | None = None,
    only: str | None = None,
    from_node: str | None = None,
    cache: bool = False,
    parallelism: int | None = None,
    logical_date: str | None = None,
    caller: Any = None,
    services: Any = None,
) -> Launch:
    """Validate everything about a run request; raise a clear error or return the plan."""
    pipeline = open_pipeline(path, root)
    ctx = node_context(pipeline, root, catalog, caller, services)
    problems = validation.check(pipeline, ctx, params)
    if problems:
        raise validation.PipelineInvalid(problems)
    if only and from_node:
        raise InvalidInput(_t("give --only or --from, not both"))
    values = coerce_params(pipeline, params or {})
    problems = path_param_problems(pipeline, ctx, values)
    if problems:
        raise validation.PipelineInvalid(problems)
    width = parallelism or pipeline.parallelism or os.cpu_count() or 1
    if width < 1:
        raise InvalidInput(_t("parallelism must be at least 1"), _t("got {width}", width=width))
    options = {
        "params": values,
        "only": only,
        "from": from_node,
        "cache": cache,
        "parallelism": width,
        "logical_date": logical_date,
        "alert_rules": pipeline.alert_rules,  # told when the run fails (alerts/engine.py)
    }
    return Launch(
        new_run_id(),
        path,
        root,
        pipeline,
        values,
        width,
        select_nodes(pipeline, only, from_node),
        options,
    )


_PARAM_REF = re.compile(r"\{\{\s*params\.([A-Za-z0-9_.:-]+?)\s*\}\}")


def path_param_problems(
    pipeline: Pipeline, ctx: NodeContext, values: dict[str, Any]
) -> list[Problem]:
    """Template path parameters given as ``{{ params.x }}``, checked with this run's values
    before anything runs (validation skips references). Those naming node values
    (``{{ nodes.n.values.v }}``) are checked when their node starts."""
    problems: list[Problem] = []
    for node in pipeline.nodes:
        raw = node.params.get("parameters") if node.op.endswith("template") else None
        if not isinstance(raw, dict):
            continue
        try:
            template = ctx.catalog.get(node.params.get("template"))
        except CubeError:
            continue  # validation has said so
        for name in template.path_parameters():
            given = raw.get(name)
            if not isinstance(given, str) or "{{" not in given or "nodes." in given:
                continue
            refs = _PARAM_REF.findall(given)
            if not refs or any(ref not in values for ref in refs):
                continue  # an unknown parameter fails the node with its own message
            whole = _PARAM_REF.fullmatch(given.strip())
            value = (
                values[whole.group(1)]
                if whole
                else _PARAM_REF.sub(lambda m: str(values[m.group(1)]), given)
            )
            if value in (None, ""):
                continue
            found = safe_path(value, ctx, node, f"parameters.{name}")[1]
            problems.extend(replace(p, message=f"{p.message} (from {given})") for p in found)
    return problems


def select_nodes(pipeline: Pipeline, only: str | None, from_node: str | None) -> set[str]:
    ref = only or from_node
    if not ref:
        return {n.id for n in pipeline.nodes}
    node = pipeline.find(ref)
    if node is None:
        raise NotFound(
            _t("no node {ref!r} in pipeline {name!r}", ref=ref, name=pipeline.name),
            _t("Give a node id, or a label that only one node has."),
        )
    return {node.id} if only else pipeline.downstream(node.id)


def coerce_params(pipeline: Pipeline, given: dict[str, Any]) -> dict[str, Any]:
    """Pipeline parameters: defaults, then overrides, converted to their declared types."""
    known = {p.name: p for p in pipeline.parameters}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise InvalidInput(
            _t("unknown pipeline parameters {unknown}", unknown=unknown),
            _t("This pipeline declares: {value}.", value=", ".join(known) or "none"),
        )
    out: dict[str, Any] = {}
    for name, param in known.items():
        value = given.get(name, param.default)
        if value is None or value == "":
            if param.required:
                raise InvalidInput(
                    _t("pipeline parameter {name!r} is required", name=name),
                    _t("Pass it with --param {name}=VALUE.", name=name),
                )
            out[name] = value
            continue
        try:
            if param.type == "Integer":
                value = int(value)
            elif param.type == "Float":
                value = float(value)
            elif param.type == "Bool" and isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(value)
                value = value.lower() in ("true", "1", "yes")
        except (TypeError, ValueError):
            raise InvalidInput(
                _t("pipeline parameter {name!r} must be {type}", name=name, type=param.type),
                _t("got {value!r}", value=value),
            ) from None
        out[name] = value
    return out


def node_env(
    settings: Settings, username: str, root: Path, logical_date: str | None
) -> dict[str, str]:
    """The environment every node of a run starts with. Nodes run as their owner's account
    (``settings.os_accounts``) get no keys to the store."""
    env = dict(os.environ)
    env.update(
        {
            ENV_DATA_DIR: str(settings.data_dir),
            ENV_DB_URL: settings.db_url,
            ENV_USER: username,
            ENV_ROOT_DIR: str(root),
        }
    )
    if settings.os_accounts:
        env.pop(ENV_DATA_DIR)
        env.pop(ENV_DB_URL)
    if logical_date:  # the cron time a scheduled run stands for
        env["CUBE_LOGICAL_DATE"] = logical_date
    return env
