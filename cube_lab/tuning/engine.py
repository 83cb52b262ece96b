"""The local tuning engine: NNI's own tuners and assessors, driven in-process, with trials
launched by cube-lab instead of NNI's manager (node.js REST server + file polling).

Why drive NNI directly rather than run ``Experiment('local')``: NNI's local mode starts a
node.js manager, polls trial folders every few seconds and starts each trial as a fresh
Python that imports ``nni`` (2 s here). Here trials fork from a warm host
(``trialhost.py``), metrics arrive the moment a trial prints them, and the next trial
starts the moment a slot frees: 12 trials at concurrency 2 take well under half NNI's
time (``benchmarks/tuning.py``). The trial code is unchanged NNI code: it calls
``nni.get_next_parameter()`` and ``nni.report_*_result()`` and NNI's own trial runtime
carries them (parameters from ``$NNI_SYS_DIR/parameter.cfg``; metrics as ``NNISDK_MEb``
lines on stdout, what NNI's runtime prints on a non-``local`` platform).

The trial host and every trial run in process groups of their own; each is handed to
``on_groups`` while it runs (the service records them, so a server that starts after a
crash ends them, if they are still ours: see ``cube_lab.processes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import accounts, processes
from ..errors import InvalidInput
from ..locale.messages import _t
from ..monitoring import files as usage_files
from ..monitoring import watch
from .spec import ASSESSORS, TUNERS, ExperimentSpec

PLATFORM = "cube-lab"  # any value but "local" makes NNI's trial runtime print its metrics
_MARK = "NNISDK_MEb'"
KILL_GRACE_S = 3.0
FINAL = ("succeeded", "failed", "early_stopped", "cancelled")


@dataclass
class Trial:
    id: str
    seq: int
    parameter_id: int
    parameters: dict[str, Any]
    status: str = "waiting"
    intermediate: list[float] = field(default_factory=list)
    final: float | None = None
    final_raw: Any = None
    exit_code: int | None = None
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None:
            return None
        return (self.finished_at or time.time()) - self.started_at


def _load(path: str) -> Any:
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def make_tuner(spec: ExperimentSpec) -> Any:
    path, fixed = TUNERS[spec.tuner.name]
    args = {**fixed, **spec.tuner.class_args}
    if spec.tuner.name not in ("GridSearch",) and "optimize_mode" not in args:
        args["optimize_mode"] = spec.mode
    try:
        tuner = _load(path)(**args)
    except ImportError as exc:
        raise InvalidInput(
            _t(
                "tuner {name} needs a package that is not installed: {name2}",
                name=spec.tuner.name,
                name2=exc.name,
            ),
            _t("pip install {name}", name=exc.name),
        ) from None
    except TypeError as exc:
        raise InvalidInput(_t("tuner.classArgs: {exc}", exc=exc)) from None
    tuner.update_search_space(spec.search_space)
    return tuner


def make_assessor(spec: ExperimentSpec) -> Any | None:
    if spec.assessor is None:
        return None
    args = dict(spec.assessor.class_args)
    if spec.assessor.name == "Medianstop":
        args.setdefault("optimize_mode", spec.mode)
    try:
        return _load(ASSESSORS[spec.assessor.name])(**args)
    except TypeError as exc:
        raise InvalidInput(_t("assessor.classArgs: {exc}", exc=exc)) from None


def _as(run_as: accounts.RunAs | None) -> dict[str, Any]:
    return {} if run_as is None else run_as.popen_kwargs()


def objective(value: Any, metric: str) -> float | None:
    """The number a reported metric stands for (NNI: a float, or a dict's ``default``)."""
    if isinstance(value, dict):
        value = value.get(metric, value.get("default"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _python_argv(command: str, code_dir: str) -> list[str] | None:
    """``python[3] script.py args`` / ``python -m mod args`` as argv for the trial host,
    or None when the command is something else (it then runs as a plain process)."""
    argv = shlex.split(command)
    if len(argv) < 2 or Path(argv[0]).name not in ("python", "python3", Path(sys.executable).name):
        return None
    if argv[1] == "-m" and len(argv) > 2:
        return argv[1:]
    if argv[1].endswith(".py") and (Path(code_dir) / argv[1]).is_file():
        return [str(Path(code_dir) / argv[1]), *argv[2:]]
    return None


class TrialHost:
    """The engine's side of ``trialhost.py``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.exits: dict[str, asyncio.Future[int]] = {}
        self.pids: dict[str, asyncio.Future[int]] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls, env: dict[str, str], run_as: accounts.RunAs | None = None) -> TrialHost:
        """``run_as``: the host (and so every trial it forks) runs as that account."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cube_lab.tuning.trialhost",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
            **_as(run_as),
        )
        assert proc.stdout is not None
        line = await proc.stdout.readline()
        if json.loads(line or b"{}").get("event") != "ready":
            raise RuntimeError("the trial host did not start")
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            event = json.loads(line)
            if event["event"] == "started":
                self.pids.pop(event["id"]).set_result(event["pid"])
            elif event["event"] == "exited":
                self.exits.pop(event["id"]).set_result(event["code"])
            elif event["event"] == "preloaded":
                self.pids.pop("preload").set_result(0)
        for fut in [*self.pids.values(), *self.exits.values()]:  # the host died
            if not fut.done():
                fut.set_exception(RuntimeError("the trial host exited"))

    def _send(self, request: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode())

    async def preload(self, script: str) -> None:
        done = self.pids["preload"] = asyncio.get_running_loop().create_future()
        self._send({"op": "preload", "script": script})
        await done

    async def run(
        self, trial_id: str, argv: list[str], cwd: str, env: dict[str, str], out: str
    ) -> int:
        loop = asyncio.get_running_loop()
        started = self.pids[trial_id] = loop.create_future()
        self.exits[trial_id] = loop.create_future()
        self._send({"op": "run", "id": trial_id, "argv": argv, "cwd": cwd, "env": env, "log": out})
        return await started

    async def wait(self, trial_id: str) -> int:
        return await self.exits[trial_id]

    async def close(self) -> None:
        """The host holds no state worth a graceful exit (its shutdown of scipy and pandas
        takes most of a second): kill it. Trials live in their own sessions."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        await self.proc.wait()
        self._reader.cancel()


class Engine:
    """Runs one experiment to its end (or until stopped); reports every change."""

    def __init__(
        self,
        spec: ExperimentSpec,
        folder: Path,
        experiment_id: str,
        on_change: Callable[[Trial | None], None] | None = None,
        done: list[Trial] | None = None,
        base_env: dict[str, str] | None = None,
        on_groups: Callable[[str, list[tuple[str, processes.Group]]], None] | None = None,
        run_as: accounts.RunAs | None = None,
        store: Path | None = None,
    ) -> None:
        """``run_as``: the trials run as the experiment owner's account, in trial folders
        only it (and root) enters; ``store``: the folder the experiment folders lie under."""
        self.spec = spec
        self.run_as = run_as
        self.store = store or folder.parent
        self.folder = folder
        self.experiment_id = experiment_id
        self.on_change = on_change or (lambda _t: None)
        # (part, [(role, group)]): the groups a trial (part = its id) or the trial host
        # (part "host") runs in now; [] once it ended. Called on the event loop: keep it quick.
        self.on_groups = on_groups or (lambda _part, _groups: None)
        self.trials: list[Trial] = list(done or [])  # earlier trials, when resuming
        self.base_env = dict(base_env or os.environ)
        if run_as is not None:
            self.base_env = accounts.job_env(self.base_env, run_as)
        self.stopping = False
        self.status = "running"
        self._pids: dict[str, int] = {}
        self._wake = asyncio.Event()

    # -- public ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop launching and kill the running trials (thread-safe via call_soon_threadsafe)."""
        self.stopping = True
        for pid in list(self._pids.values()):
            _kill(pid, signal.SIGTERM)
        self._wake.set()

    def best(self) -> Trial | None:
        scored = [t for t in self.trials if t.final is not None]
        if not scored:
            return None
        pick = max if self.spec.mode == "maximize" else min
        return pick(scored, key=lambda t: t.final)  # type: ignore[arg-type,return-value]

    async def run(self) -> str:
        argv = _python_argv(self.spec.trial_command, self.spec.code_dir)
        # The host's start (it imports NNI's dependencies) overlaps the tuner's import.
        starting = (
            asyncio.create_task(TrialHost.start(self.base_env, self.run_as)) if argv else None
        )
        try:
            tuner = await asyncio.to_thread(make_tuner, self.spec)
            assessor = make_assessor(self.spec)
        except BaseException:
            if starting:
                await (await starting).close()
            raise
        finished = [t for t in self.trials if t.final is not None]
        if finished:  # resume: the tuner learns from what earlier runs found
            tuner.import_data([{"parameter": t.parameters, "value": t.final} for t in finished])
        host = await starting if starting else None
        if host:
            self._report("host", "host", host.proc.pid)
        if host and argv and argv[0] != "-m":
            await host.preload(argv[0])
        deadline = time.monotonic() + self.spec.max_duration_s if self.spec.max_duration_s else None
        running: set[asyncio.Task[None]] = set()
        next_pid = max((t.parameter_id for t in self.trials), default=-1) + 1
        exhausted = False
        try:
            while True:
                while (
                    not self.stopping
                    and not exhausted
                    and len(running) < self.spec.concurrency
                    and len(self.trials) < self.spec.max_trials
                ):
                    try:
                        params = tuner.generate_parameters(next_pid)
                    except Exception as exc:  # NNI's NoMoreTrialError: the space is covered
                        if type(exc).__name__ != "NoMoreTrialError":
                            raise
                        exhausted = True
                        break
                    seq = max((t.seq for t in self.trials), default=-1) + 1
                    trial = Trial(f"{self.experiment_id}-{seq:04d}", seq, next_pid, params)
                    next_pid += 1
                    self.trials.append(trial)
                    task = asyncio.create_task(self._run_trial(trial, tuner, assessor, host))
                    running.add(task)
                if not running:
                    break
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                done, _ = await asyncio.wait(
                    running, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                running -= done
                for task in done:
                    task.result()
                if deadline is not None and time.monotonic() >= deadline and not self.stopping:
                    self.stop()
                    self.status = "done"  # reached its time budget: a normal end
        finally:
            if running:
                self.stop()
                await asyncio.gather(*running, return_exceptions=True)
            if host:
                await host.close()
                self.on_groups("host", [])
        if self.status == "running":
            self.status = "stopped" if self.stopping else "done"
        self.on_change(None)
        return self.status

    # -- one trial --------------------------------------------------------------------------

    def _env(self, trial: Trial, sys_dir: Path) -> dict[str, str]:
        return {
            **self.base_env,
            "NNI_PLATFORM": PLATFORM,
            "NNI_EXP_ID": self.experiment_id,
            "NNI_TRIAL_JOB_ID": trial.id,
            "NNI_TRIAL_SEQ_ID": str(trial.seq),
            "NNI_SYS_DIR": str(sys_dir),
            "NNI_OUTPUT_DIR": str(sys_dir / "output"),
            "CUBE_TRIAL_ID": trial.id,
            "PYTHONUNBUFFERED": "1",
        }

    async def _run_trial(
        self, trial: Trial, tuner: Any, assessor: Any, host: TrialHost | None
    ) -> None:
        sys_dir = self.folder / "trials" / trial.id
        if self.run_as is not None:  # the trial writes here; root's files stay root's
            accounts.job_folder(sys_dir, self.run_as, self.store, ("parameter.cfg", "log.txt"))
        else:
            sys_dir.mkdir(parents=True, exist_ok=True)
        record = {
            "parameter_id": trial.parameter_id,
            "parameter_source": "algorithm",
            "parameters": trial.parameters,
            "parameter_index": 0,
        }
        (sys_dir / "parameter.cfg").write_text(json.dumps(record))
        fifo = sys_dir / "stdout.pipe"  # the trial's stdout and stderr, read as they come
        with contextlib.suppress(FileNotFoundError):
            fifo.unlink()
        os.mkfifo(fifo)
        if self.run_as is not None:
            accounts.share_file(fifo, self.run_as)
        read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        keep_fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # no EOF before the trial ends
        reader = asyncio.create_task(self._read_output(trial, read_fd, sys_dir, assessor))
        env = self._env(trial, sys_dir)
        trial.status, trial.started_at = "running", time.time()
        self.on_change(trial)
        argv = _python_argv(self.spec.trial_command, self.spec.code_dir)
        code: int | None = None
        usage = None
        try:
            if host and argv:
                pid = await host.run(trial.id, argv, self.spec.code_dir, env, str(fifo))
                self._pids[trial.id] = pid
                self._report(trial.id, "trial", pid)
                usage = self._watch(sys_dir, trial, pid)
                if self.stopping:
                    _kill(pid, signal.SIGTERM)
                code = await host.wait(trial.id)
            else:
                proc = await asyncio.create_subprocess_shell(
                    self.spec.trial_command,
                    cwd=self.spec.code_dir,
                    env=env,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=keep_fd,
                    stderr=keep_fd,
                    start_new_session=True,
                    **_as(self.run_as),
                )
                self._pids[trial.id] = proc.pid
                self._report(trial.id, "trial", proc.pid)
                usage = self._watch(sys_dir, trial, proc.pid)
                if self.stopping:
                    _kill(proc.pid, signal.SIGTERM)
                code = await proc.wait()
        finally:
            if usage is not None:
                usage.stop()
            os.close(keep_fd)
            await reader
            pid = self._pids.pop(trial.id, None)
            if pid:
                _kill(pid, signal.SIGKILL)  # leave no stray children behind
                self.on_groups(trial.id, [])
        trial.exit_code, trial.finished_at = code, time.time()
        if trial.status == "running":
            if self.stopping:
                trial.status = "cancelled"
            elif code == 0:
                trial.status = "succeeded"
            else:
                trial.status, trial.error = "failed", f"exit code {code}"
        if trial.final is not None:
            tuner.receive_trial_result(trial.parameter_id, trial.parameters, trial.final_raw)
        else:
            tuner.trial_end(trial.parameter_id, False)
        if assessor is not None:
            assessor.trial_end(trial.id, trial.status == "succeeded")
        self.on_change(trial)

    def _watch(self, sys_dir: Path, trial: Trial, pid: int) -> Any:
        """CPU, memory and GPUs of the trial's process tree while it runs."""
        return watch(
            usage_files.trial_file(sys_dir),
            [pid],
            kind="trial",
            object_id=self.experiment_id,
            node=trial.id,
        )

    def _report(self, part: str, role: str, pid: int) -> None:
        group = processes.group_of(pid, leads_own=True)  # a forked trial: maybe not yet
        if group is not None:
            self.on_groups(part, [(role, group)])

    async def _read_output(self, trial: Trial, fd: int, sys_dir: Path, assessor: Any) -> None:
        """Copy the trial's output to its log, taking NNI's metric lines out of it."""
        loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        loop.add_reader(fd, readable.set)
        pending = b""
        try:
            with open(sys_dir / "log.txt", "ab") as log:
                while True:
                    await readable.wait()
                    readable.clear()
                    try:
                        chunk = os.read(fd, 65536)
                    except BlockingIOError:
                        continue
                    if not chunk:  # every writer closed: the trial is over
                        break
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if line.startswith(_MARK.encode()):
                            self._metric(trial, line.decode(errors="replace"), assessor)
                        else:
                            log.write(line + b"\n")
                    log.flush()
                if pending:
                    log.write(pending)
        finally:
            loop.remove_reader(fd)
            os.close(fd)

    def _metric(self, trial: Trial, line: str, assessor: Any) -> None:
        try:
            outer = json.loads(line[len(_MARK) : line.rindex("'")])
            value = json.loads(outer["value"])
        except (ValueError, KeyError, TypeError):
            return
        score = objective(value, self.spec.metric)
        if outer.get("type") == "FINAL":
            trial.final, trial.final_raw = score, value
        elif score is not None:
            trial.intermediate.append(score)
            if assessor is not None and trial.status == "running":
                verdict = assessor.assess_trial(trial.id, list(trial.intermediate))
                if getattr(verdict, "name", "Good") == "Bad":
                    trial.status = "early_stopped"
                    pid = self._pids.get(trial.id)
                    if pid:
                        _kill(pid, signal.SIGTERM)
        self.on_change(trial)


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def trial_dict(trial: Trial) -> dict[str, Any]:
    data = asdict(trial)
    data["duration_s"] = trial.duration_s
    return data
