"""The local backend: launch a job's processes on this machine, aggregate their logs, stop them.

- PyTorch: ``python -m torch.distributed.run --standalone`` (torchrun) with
  ``workers x nproc`` processes; it tees each rank to ``ranks/`` and prints its lines
  prefixed ``[rank N]``. One process runs without torchrun, with the environment torchrun
  would give it. The script picks gloo or nccl from ``$CUBE_DIST_BACKEND``.
- TensorFlow: one process per rank with its own ``TF_CONFIG`` (MultiWorkerMirrored).
- MPI / Horovod: ``mpirun -np N``; DeepSpeed: its launcher. Both only when installed.
- plain: the command once per rank, with ``RANK`` / ``WORLD_SIZE`` set.

Every process starts in its own process group and carries ``CUBE_TRAINING_JOB_ID`` in
its environment: stopping kills the groups, then any process still carrying the marker
(torchrun starts each rank in a session of its own, out of reach of ``killpg``). The groups
of a running attempt are handed to ``on_groups`` (the service records them, so a server that
starts after a crash ends them, if they are still ours: see ``cube_lab.processes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import processes
from ..accounts import RunAs, job_env
from ..errors import InvalidInput
from ..locale.messages import _t
from ..monitoring import files as usage_files
from ..monitoring import watch
from .spec import JobSpec

ENV_JOB_ID = "CUBE_TRAINING_JOB_ID"
ENV_OUTPUT_DIR = "CUBE_OUTPUT_DIR"
ENV_DIST_BACKEND = "CUBE_DIST_BACKEND"
KILL_GRACE_S = 3.0
RETRY_BACKOFF_S = 1.0
LOCAL_GPU_TYPES = ("nvidia-gpu",)


@dataclass
class Proc:
    argv: list[str]
    env: dict[str, str]
    prefix: str  # put before each output line ("" when the launcher prefixes ranks itself)


@dataclass
class LaunchPlan:
    job_id: str
    cwd: Path
    job_dir: Path
    procs: list[Proc]
    gpus: list[int] = field(default_factory=list)
    run_as: RunAs | None = None  # the owner's OS account, when the job runs as it

    @property
    def log_path(self) -> Path:
        return self.job_dir / "log.txt"

    def describe(self) -> list[dict[str, object]]:
        return [{"argv": p.argv, "prefix": p.prefix} for p in self.procs]


def check_local(spec: JobSpec) -> None:
    """What the local backend cannot do, said before anything is recorded."""
    if spec.resources.gpus and spec.resources.accelerator.key not in LOCAL_GPU_TYPES:
        raise InvalidInput(
            _t(
                "the local backend cannot allocate {display_name}",
                display_name=spec.resources.accelerator.display_name,
            ),
            _t(
                "Locally only whole NVIDIA GPUs are assigned (CUDA_VISIBLE_DEVICES); use "
                "--backend kubernetes for MIG, vGPU and NPU resources."
            ),
        )
    if spec.framework == "pytorch" and spec.command:
        raise InvalidInput(
            _t("framework 'pytorch' runs a script"), _t("Use framework 'plain' for a command.")
        )


# What each framework's local launcher runs (see build_plan), checked in the Python that runs
# the job before anything is recorded: (module, what pip installs). One table, so the hint
# names the same install everywhere. torch 2.13.0 is the CPU build on these machines (the
# `torch` extra; `make lab` installs it). mpi runs `mpirun -np N <python> script`: the
# launcher needs the mpirun program only; mpi4py / Horovod are the script's own imports.
FRAMEWORK_PACKAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "pytorch": (("torch", "torch==2.13.0"),),  # python -m torch.distributed.run
    "deepspeed": (("torch", "torch==2.13.0"), ("deepspeed", "deepspeed")),
    "tensorflow": (("tensorflow", "tensorflow"),),
    "mpi": (),
    "plain": (),
}
FRAMEWORK_PROGRAMS: dict[str, tuple[tuple[str, str], ...]] = {
    "mpi": (("mpirun", "apt-get install openmpi-bin (Open MPI) or apt-get install mpich"),),
}
_FIND_SPECS = (
    "import importlib.util, sys\n"
    "print('\\n'.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"
)


def job_python() -> str:
    """The interpreter the local launcher runs jobs with (torchrun, scripts, ranks)."""
    return sys.executable


def missing_modules(
    modules: list[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    run_as: RunAs | None = None,
) -> list[str]:
    """Which of ``modules`` the job's Python cannot import (found, not imported: fast),
    under the job's environment and in its working directory (both add to sys.path).
    ``run_as``: asked as the job's account (the job's env may name code to run at start)."""
    if not modules:
        return []
    extra: dict[str, Any] = {}
    if run_as is not None:
        env = job_env(dict(env or os.environ), run_as)
        extra = run_as.popen_kwargs()
    try:
        done = subprocess.run(
            [job_python(), "-c", _FIND_SPECS, *modules],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            **extra,
        )
    except (OSError, subprocess.SubprocessError):  # cannot ask it: ask this process instead
        return [m for m in modules if importlib.util.find_spec(m) is None]
    if done.returncode != 0:
        return [m for m in modules if importlib.util.find_spec(m) is None]
    return [line for line in done.stdout.splitlines() if line]


def check_packages(
    spec: JobSpec,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    run_as: RunAs | None = None,
) -> None:
    """Refuse a job whose framework's launcher cannot run here, naming the install."""
    for program, install in FRAMEWORK_PROGRAMS.get(spec.framework, ()):
        if not shutil.which(program):
            raise InvalidInput(
                _t(
                    "framework {framework!r} needs {program}, which is not installed here",
                    framework=spec.framework,
                    program=program,
                ),
                _t(
                    "Install it ({install}), or run with --backend kubernetes (MPIJob).",
                    install=install,
                ),
            )
    needed = FRAMEWORK_PACKAGES.get(spec.framework, ())
    missing = set(missing_modules([module for module, _ in needed], env, cwd, run_as))
    if not missing:
        return
    packages = [package for module, package in needed if module in missing]
    modules = [module for module, _ in needed if module in missing]
    python = job_python()
    command = f"{shlex.quote(python)} -m pip install {' '.join(packages)}"
    raise InvalidInput(
        _t(
            (
                "framework {framework!r} needs the {value} package{value2}, which {value3} "
                "not installed in the Python that runs jobs ({python})"
            ),
            framework=spec.framework,
            value=" and ".join(modules),
            value2="s" if len(modules) > 1 else "",
            value3="are" if len(modules) > 1 else "is",
            python=python,
        ),
        _t(
            (
                "Install {value}: {command} - then submit the job again. Or choose framework "
                "'plain' for a script that needs no launcher."
            ),
            value="them" if len(modules) > 1 else "it",
            command=command,
        ),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_plan(
    spec: JobSpec,
    job_id: str,
    job_dir: Path,
    cwd: Path,
    base_env: dict[str, str],
    gpus: list[int],
) -> LaunchPlan:
    output_dir = Path(spec.output_dir) if spec.output_dir else job_dir / "output"
    env = dict(base_env)
    env.update(spec.env)
    env.update(
        {
            ENV_JOB_ID: job_id,
            ENV_OUTPUT_DIR: str(output_dir if output_dir.is_absolute() else cwd / output_dir),
            ENV_DIST_BACKEND: "nccl" if gpus else "gloo",
            "CUBE_METRICS_FILE": str(job_dir / "metrics.jsonl"),
            "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus)),
            "PYTHONUNBUFFERED": "1",  # lines reach the log as they are printed
        }
    )
    n = spec.processes
    user = spec.argv()
    py = [sys.executable] if user[0].endswith(".py") else []
    procs: list[Proc]
    if spec.framework == "pytorch":
        # torchrun sets 1 thread per rank with a banner a user must read past (accelerate
        # warns likewise when it is unset); share the CPUs among the ranks instead, unless the
        # job says otherwise
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // max(1, n))))
    if spec.framework == "pytorch" and n == 1:
        # one process: torchrun's agent would only add an interpreter that imports torch
        # (about 2 s of CPU before the script starts); the script gets what torchrun gives
        # a rank and makes the process group's store itself, on a port free now
        rank_env = _rank_env(0, 1) | _torchrun_env(str(free_port()))
        procs = [Proc([sys.executable, *user], env | rank_env, "[rank 0] ")]  # as torchrun runs it
    elif spec.framework == "pytorch":
        env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = "[rank ${rank}] "
        launcher = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nnodes=1",
            f"--nproc-per-node={n}",
            "--max-restarts=0",  # retries are ours, with a fresh log section
            "--tee=3",
            f"--log-dir={job_dir / 'ranks'}",
        ]
        procs = [Proc([*launcher, *user], env, "")]
    elif spec.framework == "deepspeed":
        launcher = [sys.executable, "-m", "deepspeed.launcher.runner", "--num_nodes=1"]
        launcher += [f"--num_gpus={n}", f"--master_port={free_port()}"]
        procs = [Proc([*launcher, *user], env, "")]
    elif spec.framework == "mpi":
        procs = [Proc(["mpirun", "-np", str(n), *_mpi_tag_args(), *py, *user], env, "")]
    elif spec.framework == "tensorflow":
        hosts = [f"127.0.0.1:{free_port()}" for _ in range(n)]
        per = _split(gpus, n)
        procs = []
        for rank in range(n):
            tf_config = {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": rank}}
            rank_env = env | _rank_env(rank, n) | {"TF_CONFIG": json.dumps(tf_config)}
            rank_env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, per[rank]))
            procs.append(Proc([*py, *user], rank_env, f"[rank {rank}] "))
    else:
        port = str(free_port())
        procs = [
            Proc([*py, *user], env | _rank_env(r, n) | {"MASTER_PORT": port}, f"[rank {r}] ")
            for r in range(n)
        ]
    return LaunchPlan(job_id, cwd, job_dir, procs, gpus)


def _rank_env(rank: int, world: int) -> dict[str, str]:
    return {
        "RANK": str(rank),
        "WORLD_SIZE": str(world),
        "LOCAL_RANK": str(rank),
        "MASTER_ADDR": "127.0.0.1",
    }


def _torchrun_env(port: str) -> dict[str, str]:
    """The rest of what torchrun tells its only rank: one node, one process, no agent store."""
    return {
        "MASTER_PORT": port,
        "LOCAL_WORLD_SIZE": "1",
        "GROUP_RANK": "0",
        "GROUP_WORLD_SIZE": "1",
        "ROLE_RANK": "0",
        "ROLE_WORLD_SIZE": "1",
        "ROLE_NAME": "default",
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_USE_AGENT_STORE": "False",
    }


def _split(gpus: list[int], n: int) -> list[list[int]]:
    if not gpus:
        return [[] for _ in range(n)]
    per = max(1, len(gpus) // n)
    return [gpus[(r * per) % len(gpus) :][:per] for r in range(n)]


def _mpi_tag_args() -> list[str]:
    """Rank-tagged output: Open MPI says ``--tag-output``, MPICH and Intel MPI ``-l``."""
    try:
        version = subprocess.run(
            ["mpirun", "--version"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    return ["--tag-output", "--oversubscribe"] if "Open MPI" in version else ["-l"]


# -- running ------------------------------------------------------------------------------


class LocalJob:
    """Runs a plan to the end (with retries and a timeout); ``cancel`` from any thread."""

    def __init__(
        self,
        plan: LaunchPlan,
        retries: int = 0,
        timeout_s: float | None = None,
        on_line: Callable[[str], None] | None = None,
        on_attempt: Callable[[int], None] | None = None,
        on_groups: Callable[[list[processes.Group]], None] | None = None,
    ) -> None:
        self.plan = plan
        self.retries = retries
        self.timeout_s = timeout_s
        self.on_line = on_line
        self.on_attempt = on_attempt
        self.on_groups = on_groups  # called in a worker thread: it may write to the store
        self.cancelled = False
        self.attempts = 0
        self.exit_code: int | None = None
        self.error: str | None = None
        self.first_output_at: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._procs: list[asyncio.subprocess.Process] = []

    async def run(self) -> str:
        self._loop = asyncio.get_running_loop()
        self.plan.job_dir.mkdir(parents=True, exist_ok=True)
        with open(self.plan.log_path, "ab", buffering=0) as log:
            for attempt in range(1, self.retries + 2):
                if self.cancelled:
                    break
                self.attempts = attempt
                if self.on_attempt:
                    self.on_attempt(attempt)
                if attempt > 1:
                    self._write(log, f"--- attempt {attempt} ---\n")
                self.exit_code, self.error = await self._attempt(log)
                if self.exit_code == 0 or self.cancelled:
                    break
                if attempt <= self.retries:
                    self._write(log, f"cube-lab: {self.error}; retrying\n")
                    await asyncio.sleep(RETRY_BACKOFF_S * 2 ** (attempt - 1))
        if self.cancelled:
            self.error = "stopped"
            return "cancelled"
        return "succeeded" if self.exit_code == 0 else "failed"

    async def _attempt(self, log: object) -> tuple[int | None, str | None]:
        self._procs = []
        pumps = []
        groups: list[processes.Group] = []
        usage = None
        try:
            who = self.plan.run_as
            for spec in self.plan.procs:
                proc = await asyncio.create_subprocess_exec(
                    *spec.argv,
                    cwd=self.plan.cwd,
                    env=spec.env if who is None else job_env(spec.env, who),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,
                    **({} if who is None else who.popen_kwargs()),
                )
                self._procs.append(proc)
                group = processes.group_of(proc.pid)
                if group is not None:
                    groups.append(group)
                assert proc.stdout is not None
                pumps.append(asyncio.create_task(self._pump(proc.stdout, spec.prefix, log)))
            if self.cancelled:  # stopped while starting
                self._signal_all(signal.SIGKILL)
            usage = watch(  # CPU, memory, GPUs of every rank's process tree, while they run
                usage_files.training_file(self.plan.job_dir), [p.pid for p in self._procs],
                kind="training", object_id=self.plan.job_id,
            )  # fmt: skip
            if self.on_groups and groups:
                await asyncio.to_thread(self.on_groups, groups)
            waits = asyncio.gather(*(p.wait() for p in self._procs))
            try:
                codes = await asyncio.wait_for(waits, self.timeout_s)
            except TimeoutError:
                self._signal_all(signal.SIGKILL)
                await asyncio.gather(*(p.wait() for p in self._procs))
                await asyncio.gather(*pumps)
                message = f"timed out after {self.timeout_s:g} s"
                self._write(log, f"cube-lab: {message}\n")
                return None, message
            await asyncio.gather(*pumps)
        except FileNotFoundError as exc:
            message = f"cannot start {exc.filename}: not found"
            self._write(log, f"cube-lab: {message}\n")
            return 127, message
        finally:
            if usage is not None:
                usage.stop()
            self._signal_all(signal.SIGKILL)  # leave no stray rank behind
            await asyncio.to_thread(kill_marked, self.plan.job_id)
            if self.on_groups and groups:
                await asyncio.to_thread(self.on_groups, [])
        bad = [c for c in codes if c != 0]
        if not bad:
            return 0, None
        return bad[0], f"exit code {bad[0]}"

    async def _pump(self, stream: asyncio.StreamReader, prefix: str, log: object) -> None:
        pending = b""
        while chunk := await stream.read(65536):
            if self.first_output_at is None:
                self.first_output_at = time.monotonic()
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if lines:
                self._write(
                    log, "".join(f"{prefix}{ln.decode(errors='replace')}\n" for ln in lines)
                )
        if pending:
            self._write(log, f"{prefix}{pending.decode(errors='replace')}\n")

    def _write(self, log: object, text: str) -> None:
        log.write(text.encode())  # type: ignore[attr-defined]
        if self.on_line:
            self.on_line(text)

    # -- stopping -----------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop every process of the job. Safe from any thread and from signal handlers."""
        self.cancelled = True
        loop = self._loop
        if loop is None:
            return
        try:
            same = asyncio.get_running_loop() is loop
        except RuntimeError:
            same = False
        if same:
            self._cancel_now()
        else:
            loop.call_soon_threadsafe(self._cancel_now)

    def _cancel_now(self) -> None:
        self._signal_all(signal.SIGTERM)  # torchrun passes SIGTERM on to its ranks
        assert self._loop is not None
        self._loop.call_later(KILL_GRACE_S, self._signal_all, signal.SIGKILL)

    def _signal_all(self, sig: int) -> None:
        for proc in self._procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)


def marked_pids(job_id: str) -> list[int]:
    """Processes (of this user) whose environment carries this job's marker."""
    marker = f"{ENV_JOB_ID}={job_id}\0".encode()
    found = []
    proc_root = Path("/proc")
    if not proc_root.is_dir():
        return found
    me = os.getpid()
    for entry in proc_root.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or another user's
            continue
        if marker in environ or environ.startswith(marker):
            found.append(int(entry.name))
    return found


def kill_marked(job_id: str) -> int:
    pids = marked_pids(job_id)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)
