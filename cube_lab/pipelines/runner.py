"""The local DAG runner: independent nodes in parallel, retries, timeouts, cancellation.

Plain asyncio. Each node is a subprocess in its own process group (so cancelling
kills everything it started) whose output goes straight to a log file the API
tails. Nothing here touches the database: a ``Recorder`` persists state changes,
among them the process groups a node runs in (its own; a notebook node's kernel, which
``notebook_exec`` reports through ``$CUBE_PROCESS_FD``), so a server that starts after
a crash can end them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from .. import accounts, containment, processes
from ..errors import CubeError
from ..locale.messages import _t
from ..monitoring import files as usage_files
from ..monitoring import watch
from .model import Node, Pipeline
from .nodekinds import NodeCommand, NodeContext, kind_for, kind_name

OK = frozenset({"succeeded", "cached", "reused"})
FINAL = OK | {"failed", "cancelled", "skipped", "interrupted"}
MAX_VALUES_BYTES = 64 * 1024
KILL_GRACE_S = 3.0
# A node's process group is recorded once it has run this long: the hundreds of short nodes
# of a pipeline cost neither a read of /proc nor a row (a crash that soon after a start
# leaves at most that node running).
RECORD_AFTER_S = 0.05
_REF = re.compile(r"\{\{\s*(params|nodes)\.([A-Za-z0-9_.:-]+?)\s*\}\}")


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class SavedOutput:
    path: str  # where the node wrote it (absolute)
    saved: str  # the copy, relative to the runs folder (so later runs can reuse it)


@dataclass
class Prior:
    """A node result from an earlier run, reused by a partial run or a cache hit."""

    run_id: str
    values: dict[str, Any]
    outputs: list[SavedOutput]
    cache_key: str | None = None


@dataclass
class NodeState:
    node: Node
    position: int
    kind: str
    log_path: Path
    status: str = "pending"
    attempts: int = 0
    exit_code: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    values: dict[str, Any] = field(default_factory=dict)
    outputs: list[SavedOutput] = field(default_factory=list)
    cache_key: str | None = None
    reused_from: str | None = None
    error: str | None = None


class Recorder(Protocol):
    def node_changed(self, state: NodeState) -> None: ...

    def run_changed(self, status: str, error: str | None = None) -> None: ...

    def groups_changed(self, node_id: str, groups: list[tuple[str, processes.Group]]) -> None:
        """The process groups (role, group) the node runs in now; [] once it ended."""
        ...


@dataclass
class RunPlan:
    run_id: str
    runs_root: Path  # holds every run's folder
    root: Path  # nothing may escape it
    parallelism: int
    selected: set[str]  # nodes to execute
    priors: dict[str, Prior]  # outputs of unselected ancestors, reused
    params: dict[str, Any]  # pipeline parameters after defaults and overrides
    base_env: dict[str, str]
    catalog: Any
    cache_lookup: Callable[[str], Prior | None] | None = None
    # the owner's OS account, when nodes run as it (``Settings.os_accounts``); ``store`` is
    # the folder the run folders lie under, made passable for the account
    run_as: accounts.RunAs | None = None
    store: Path | None = None

    @property
    def run_dir(self) -> Path:
        return self.runs_root / self.run_id


class LocalRunner:
    def __init__(
        self,
        pipeline: Pipeline,
        plan: RunPlan,
        recorder: Recorder,
        listeners: list[Callable[[NodeState], None]] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.plan = plan
        self.recorder = recorder
        self.listeners = listeners or []
        self.cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._groups: dict[str, list[tuple[str, processes.Group]]] = {}
        self.states = {
            n.id: NodeState(
                n,
                i,
                kind_name(n.op),
                plan.run_dir / "nodes" / node_folder(n.id) / "log.txt",
            )
            for i, n in enumerate(pipeline.nodes)
        }
        self._in_scope = plan.selected | set(plan.priors)

    # -- public --------------------------------------------------------------------------

    async def run(self) -> str:
        self._loop = asyncio.get_running_loop()
        self.recorder.run_changed("running")
        for node_id, prior in self.plan.priors.items():
            self._reuse(self.states[node_id], prior, "reused")
        for state in self.states.values():
            if state.node.id not in self._in_scope:
                state.status = "skipped"
                state.error = "not part of this partial run"
                self._changed(state)
        sem = asyncio.Semaphore(max(1, self.plan.parallelism))
        pending = set(self.plan.selected)
        running: dict[asyncio.Task[None], str] = {}
        children: dict[str, list[str]] = {node_id: [] for node_id in self.states}
        for state in self.states.values():
            for up in state.node.upstream:
                children[up].append(state.node.id)

        def settle(candidates: set[str]) -> None:
            """Start (in file order) or skip each candidate whose upstream nodes are final.
            Only nodes downstream of what just finished are looked at: a 200-node chain
            would otherwise rescan every pending node after every node."""
            queue = sorted(candidates & pending, key=lambda i: self.states[i].position)
            while queue:
                node_id = queue.pop(0)
                ups = [self.states[u] for u in self.states[node_id].node.upstream]
                if self.cancelled or any(u.status in FINAL - OK for u in ups):
                    pending.discard(node_id)
                    self._finish(
                        self.states[node_id],
                        "cancelled" if self.cancelled else "skipped",
                        error="an upstream node did not succeed",
                    )
                    queue.extend(c for c in children[node_id] if c in pending)
                elif all(u.status in OK for u in ups):
                    pending.discard(node_id)
                    task = asyncio.create_task(self._guarded(self.states[node_id], sem))
                    running[task] = node_id

        settle(pending)
        while running:
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            finished = {running.pop(task) for task in done}
            settle(set(pending) if self.cancelled else {c for f in finished for c in children[f]})
        statuses = [s.status for s in self.states.values() if s.node.id in self.plan.selected]
        if self.cancelled:
            status = "cancelled"
        elif all(s in OK for s in statuses):
            status = "succeeded"
        else:
            status = "failed"
        failed = [s for s in self.states.values() if s.status == "failed"]
        error = f"{len(failed)} node(s) failed: " + ", ".join(s.node.label for s in failed)
        self.recorder.run_changed(status, error if failed else None)
        return status

    def cancel(self) -> None:
        """Stop the run: kill every node's process group; nothing new starts.

        Safe to call from any thread (a REST handler's worker, a signal handler)."""
        loop = self._loop
        if loop is None:
            self.cancelled = True
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._cancel_now()
        else:
            loop.call_soon_threadsafe(self._cancel_now)

    def _cancel_now(self) -> None:
        self.cancelled = True
        for proc in list(self._procs.values()):
            processes.kill_group(proc, signal.SIGTERM)
        assert self._loop is not None
        self._loop.call_later(KILL_GRACE_S, self._kill_all)

    # -- one node --------------------------------------------------------------------------

    async def _guarded(self, state: NodeState, sem: asyncio.Semaphore) -> None:
        try:
            async with sem:
                if self.cancelled:
                    self._finish(state, "cancelled")
                    return
                await self._run_node(state)
        except CubeError as exc:
            self._fail_before_start(state, f"{exc.error}. {exc.detail or ''}".strip())
        except Exception as exc:  # a bug or an OS error must fail the node, not the runner
            self._fail_before_start(state, f"{type(exc).__name__}: {exc}")

    def _fail_before_start(self, state: NodeState, message: str) -> None:
        state.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(state.log_path, "a") as log:
            log.write(f"cube-lab: {message}\n")
        self._finish(state, "failed", error=message)

    async def _run_node(self, state: NodeState) -> None:
        node = state.node
        node_dir = state.log_path.parent
        if self.plan.run_as is not None:
            # the node (as its owner) writes here; root's log and values file stay root's
            top = self.plan.store or self.plan.runs_root
            accounts.job_folder(node_dir, self.plan.run_as, top, ("log.txt", "values.json"))
        else:
            node_dir.mkdir(parents=True, exist_ok=True)
        params = self._node_params(node)
        ctx = NodeContext(
            self.pipeline.folder or self.plan.root,
            self.plan.root,
            self.plan.catalog,
            run_dir=node_dir,
            params=params,
        )
        kind = kind_for(node.op)
        cmd = kind.command(node, ctx)
        env = self._env(node, cmd, node_dir)
        outputs = self._output_paths(node, cmd)
        if self.plan.cache_lookup is not None:
            state.cache_key = self._cache_key(node, cmd, env, kind.inputs(node, ctx))
            prior = self.plan.cache_lookup(state.cache_key)
            if prior is not None and self._restorable(prior):
                self._reuse(state, prior, "cached")
                return
        timeout = node.timeout_s
        backoff = float(node.cube.get("retry_backoff_s", 1.0))
        state.started_at = now()
        for attempt in range(1, node.retries + 2):
            state.attempts, state.status = attempt, "running"
            self._changed(state)
            rc, error = await self._spawn(
                node.id, cmd, env, state.log_path, attempt, timeout, state.kind == "notebook"
            )
            state.exit_code = rc
            if rc == 0:
                missing = [str(p) for p in outputs if not p.exists()]
                if not missing:
                    state.outputs = self._save_outputs(outputs, node_dir)
                    state.values = _read_values(
                        node_dir / "values.json", as_owner=self.plan.run_as is not None
                    )
                    self._finish(state, "succeeded")
                    return
                error = "declared outputs not produced: " + ", ".join(missing)
                _append(state.log_path, f"cube-lab: {error}\n")
            if self.cancelled:
                self._finish(state, "cancelled", error="cancelled")
                return
            state.error = error
            if attempt <= node.retries:
                delay = backoff * 2 ** (attempt - 1)
                _append(
                    state.log_path,
                    f"cube-lab: attempt {attempt} failed ({error}); retrying in {delay:g} s\n",
                )
                self._changed(state)
                await asyncio.sleep(delay)
        self._finish(state, "failed", error=state.error)

    async def _spawn(
        self,
        node_id: str,
        cmd: NodeCommand,
        env: dict[str, str],
        log_path: Path,
        attempt: int,
        timeout: float | None,
        reports_groups: bool = False,
    ) -> tuple[int | None, str | None]:
        """Run one attempt. Its process group is recorded while it runs (from
        ``RECORD_AFTER_S`` on); a node that ``reports_groups`` (a notebook's kernel runs in
        a session of its own) names the other groups it starts on a pipe, and they are
        recorded too, and killed with it."""
        report_r = report_w = -1
        if reports_groups:
            report_r, report_w = os.pipe()
            env = {**env, "CUBE_PROCESS_FD": str(report_w)}
        with open(log_path, "ab", buffering=0) as log:
            if attempt > 1:
                log.write(f"\n--- attempt {attempt} ---\n".encode())
            try:
                proc = processes.start(
                    cmd.argv,
                    cmd.cwd,
                    env,
                    log,
                    (report_w,) if reports_groups else (),
                    self.plan.run_as,
                )
            finally:
                if reports_groups:
                    os.close(report_w)
            self._procs[node_id] = proc
            usage = watch(  # CPU, memory, GPUs of the node's process tree, while it runs
                usage_files.pipeline_file(self.plan.run_dir, node_folder(node_id)),
                [proc.pid], kind="pipeline", object_id=self.plan.run_id, node=node_id,
            )  # fmt: skip
            assert self._loop is not None
            later = self._loop.call_later(RECORD_AFTER_S, self._record_group, node_id, proc)
            if reports_groups:
                self._read_reports(node_id, report_r)
            try:
                rc: int | None = await asyncio.wait_for(processes.wait(proc), timeout)
            except TimeoutError:
                processes.kill_group(proc, signal.SIGKILL)
                await processes.wait(proc)
                log.write(f"\ncube-lab: timed out after {timeout:g} s\n".encode())
                return None, f"timed out after {timeout:g} s"
            finally:
                later.cancel()
                usage.stop()
                self._procs.pop(node_id, None)
                processes.kill_group(proc, signal.SIGKILL)  # leave no stray children behind
                if reports_groups:
                    self._loop.remove_reader(report_r)
                    os.close(report_r)
                recorded = self._groups.pop(node_id, None)
                for role, other in recorded or []:
                    if role != "node" and processes.still_ours(other):
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.killpg(other.pgid, signal.SIGKILL)
                if recorded is not None:
                    self.recorder.groups_changed(node_id, [])
        return rc, (None if rc == 0 else f"exit code {rc}")

    def _record_group(self, node_id: str, proc: subprocess.Popen[bytes]) -> None:
        """Record the node's own group. On the event loop, which alone waits for the node:
        while ``returncode`` is None the pid is not reaped, so it cannot be another's yet."""
        if proc.returncode is not None or self._procs.get(node_id) is not proc:
            return
        group = processes.group_of(proc.pid)
        if group is None:
            return
        groups = self._groups.setdefault(node_id, [])
        groups.insert(0, ("node", group))
        self.recorder.groups_changed(node_id, list(groups))

    def _read_reports(self, node_id: str, fd: int) -> None:
        """Groups the node reports: JSON lines ``{"role", "pgid", "pid", "start_ticks"}``."""
        assert self._loop is not None
        os.set_blocking(fd, False)
        pending = bytearray()

        def readable() -> None:
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                return
            if not chunk:
                assert self._loop is not None
                self._loop.remove_reader(fd)
            pending.extend(chunk)
            while b"\n" in pending:
                line, _, rest = bytes(pending).partition(b"\n")
                pending[:] = rest
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    data = json.loads(line)
                    group = processes.Group.of(data)
                    if group.pgid > 0 and group.start_ticks > 0:
                        groups = self._groups.setdefault(node_id, [])
                        groups.append((str(data.get("role") or "child")[:16], group))
                        self.recorder.groups_changed(node_id, list(groups))

        self._loop.add_reader(fd, readable)

    # -- helpers ----------------------------------------------------------------------------

    def _node_params(self, node: Node) -> dict[str, Any]:
        """Template parameters or notebook parameters, with references resolved."""
        raw = node.params.get("parameters") if node.op.endswith("template") else None
        if raw is None:
            names = list(node.params.get("pipeline_parameters") or [])
            # catalog components take parameters per input ({"widget": "parameter"})
            names += [v.get("value") for v in node.params.values()
                      if isinstance(v, dict) and v.get("widget") == "parameter"
                      and isinstance(v.get("value"), str)]  # fmt: skip
            raw = {n: self.plan.params.get(n) for n in names if n in self.plan.params}
            raw.update(node.cube.get("parameters") or {})
        return {k: self._resolve(v) for k, v in (raw or {}).items()}

    def _resolve(self, value: Any) -> Any:
        if not isinstance(value, str) or "{{" not in value:
            return value
        whole = _REF.fullmatch(value.strip())
        if whole:
            return self._lookup(whole.group(1), whole.group(2))
        return _REF.sub(lambda m: str(self._lookup(m.group(1), m.group(2))), value)

    def _lookup(self, scope: str, path: str) -> Any:
        if scope == "params":
            if path not in self.plan.params:
                raise CubeError(
                    _t("unknown pipeline parameter {path!r}", path=path),
                    _t("Known: {value}.", value=", ".join(sorted(self.plan.params)) or "none"),
                )
            return self.plan.params[path]
        ref, _, rest = path.partition(".values.")
        target = self.pipeline.find(ref)
        if target is None or not rest:
            raise CubeError(
                _t("bad reference nodes.{path}", path=path),
                _t("Write {{{{ nodes.<node id or label>.values.<key> }}}}."),
            )
        values = self.states[target.id].values
        if rest not in values:
            raise CubeError(
                _t("node {label!r} published no value {rest!r}", label=target.label, rest=rest),
                _t("It published: {value}.", value=", ".join(sorted(values)) or "nothing"),
            )
        return values[rest]

    def _env(self, node: Node, cmd: NodeCommand, node_dir: Path) -> dict[str, str]:
        env = dict(self.plan.base_env)
        for source in (self.pipeline.defaults.get("env_vars"), node.params.get("env_vars")):
            for item in source or []:
                if isinstance(item, dict) and item.get("env_var"):
                    env[str(item["env_var"])] = str(self._resolve(item.get("value") or ""))
        for name in node.params.get("pipeline_parameters") or []:
            if name in self.plan.params:  # Elyra hands pipeline parameters over as env vars
                env[str(name)] = str(self.plan.params[name])
        env.update(cmd.env)
        env.update(
            {
                "CUBE_RUN_ID": self.plan.run_id,
                "CUBE_NODE_ID": node.id,
                "CUBE_RUN_DIR": str(self.plan.run_dir),
                "CUBE_VALUES_FILE": str(node_dir / "values.json"),
                "PYTHONUNBUFFERED": "1",
            }
        )
        return env

    def _output_paths(self, node: Node, cmd: NodeCommand) -> list[Path]:
        if node.op.endswith("template"):
            template = self.plan.catalog.get(node.params.get("template"))
            names = [
                getattr(o, "parameter", None)
                or (o.get("parameter") if isinstance(o, dict) else None)
                for o in getattr(template, "outputs", [])
            ]
            wanted = [(f"parameters.{n}", cmd.params[n]) for n in names if n and cmd.params.get(n)]
        else:
            wanted = [(f"outputs[{i}]", o) for i, o in enumerate(node.outputs)]
        # What a node writes stays in the project, whatever its references resolved to.
        return [
            containment.resolve(
                self.plan.root, raw, base=cmd.cwd, absolute="refuse", what=what, where="the project"
            )
            for what, raw in wanted
        ]

    def _save_outputs(self, outputs: list[Path], node_dir: Path) -> list[SavedOutput]:
        """Copy what the node wrote into the run folder, by the containment rule: a link in
        an output that leads out of it is left out (and served from nowhere)."""
        saved = []
        for i, path in enumerate(outputs):
            target = node_dir / "outputs" / f"{i}-{path.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            if not containment.is_inside(path, self.plan.root):
                raise CubeError(
                    _t("output {path} became a link leading out of the project", path=path),
                    _t("A node's outputs must be files or folders inside the project."),
                )
            containment.copy_tree(path, target)
            saved.append(SavedOutput(str(path), target.relative_to(self.plan.runs_root).as_posix()))
        return saved

    def _restorable(self, prior: Prior) -> bool:
        return all((self.plan.runs_root / o.saved).exists() for o in prior.outputs)

    def _reuse(self, state: NodeState, prior: Prior, status: str) -> None:
        """Put an earlier result back in place: its files where the node wrote them."""
        for out in prior.outputs:
            source, target = self.plan.runs_root / out.saved, Path(out.path)
            if not containment.is_inside(target, self.plan.root):
                continue  # never write outside the project, whatever a record says
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            elif source.exists():
                shutil.copy2(source, target)
        state.values, state.outputs = dict(prior.values), list(prior.outputs)
        state.reused_from = prior.run_id
        if prior.cache_key and not state.cache_key:
            state.cache_key = prior.cache_key
        self._finish(state, status)

    def _cache_key(
        self, node: Node, cmd: NodeCommand, env: dict[str, str], inputs: list[Path]
    ) -> str:
        digest = hashlib.sha256()
        node_env = {
            k: v
            for k, v in env.items()
            if k not in self.plan.base_env and not k.startswith("CUBE_")
        }
        settings = {
            k: v
            for k, v in node.cube.items()
            if k not in ("retries", "timeout_s", "retry_backoff_s", "cache")
        }
        digest.update(
            json.dumps(
                [node.op, node.params, cmd.params, node_env, settings], sort_keys=True, default=str
            ).encode()
        )
        for path in inputs:
            digest.update(path.name.encode())
            digest.update(_file_hash(path).encode())
        for up in node.upstream:
            upstream = self.states[up]
            digest.update(
                json.dumps(
                    [upstream.cache_key, upstream.values], sort_keys=True, default=str
                ).encode()
            )
            for out in upstream.outputs:
                digest.update(_file_hash(Path(out.path)).encode())
        return digest.hexdigest()

    def _finish(self, state: NodeState, status: str, error: str | None = None) -> None:
        state.status = status
        state.error = error if status != "succeeded" else None
        state.finished_at = now()
        self._changed(state)

    def _changed(self, state: NodeState) -> None:
        self.recorder.node_changed(state)
        for listener in self.listeners:
            listener(state)

    def _kill_all(self) -> None:
        for proc in list(self._procs.values()):
            processes.kill_group(proc, signal.SIGKILL)


def _append(path: Path, text: str) -> None:
    with open(path, "a") as fh:
        fh.write(text)


def _read_values(path: Path, as_owner: bool = False) -> dict[str, Any]:
    """Small JSON values a node published through $CUBE_VALUES_FILE (ignored when absent).
    ``as_owner`` (a node run as its owner's account): root made the file, empty, and a link
    there is never followed."""
    if not path.is_file() or (as_owner and path.is_symlink()):
        return {}
    if as_owner and path.stat().st_size == 0:
        return {}
    if path.stat().st_size > MAX_VALUES_BYTES:
        raise CubeError(
            _t("published values are larger than 64 KiB"),
            _t("Write big results to files and declare them as outputs."),
        )
    try:
        values = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise CubeError(_t("published values are not valid JSON"), str(exc)) from None
    if not isinstance(values, dict):
        raise CubeError(
            _t("published values must be a JSON object"),
            _t("got {name__}", name__=type(values).__name__),
        )
    return values


def _file_hash(path: Path) -> str:
    if not path.exists():
        return "missing"
    if path.is_dir():
        digest = hashlib.sha256()
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(child.relative_to(path).as_posix().encode())
            digest.update(_file_hash(child).encode())
        return digest.hexdigest()
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def node_folder(node_id: str) -> str:
    """A node's folder name inside its run folder (node ids are free text in Elyra)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", node_id)[:100] or "node"
