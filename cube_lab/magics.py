"""Notebook magics: thin callers of the Python SDK (``cube_lab.sdk``), the same API as
``import cube_lab as cl``.

``%cube_pipeline run FLOW.pipeline [--param k=v ...] [--only NODE] [--cache] [--wait]``
``%cube_train [--nproc N ...] SCRIPT [ARGS...]``, ``%%cube_train [options] [-- ARGS]``
``%cube_tune CONFIG.yml [--max-trials N] [--concurrency N] [--wait]``
``%cube_deploy NAME[:VERSION] [--replicas N] [--wait]``
``%cube_finetune CONFIG.yaml [--nproc N] [--set KEY=VALUE ...] [--preview N] [--wait]``
``%cube_register NAME PATH_OR_VARIABLE [--metric k=v ...] [--param k=v ...]``
``%cube_chat DEPLOYMENT "message" [--system S] [--max-tokens N] [--temperature T]``
(``%cube_dataset`` and ``%cube_label``, for data: magics_data.py; ``%cube_kb``: magics_kb.py)

Each starts the work and displays the handle's live view (a text line where widgets cannot
render); the cell returns at once. ``--wait`` (before a training script) blocks until the
work ends and fails the cell when it did not succeed, so "Run All" and papermill stop there.
Options the SDK does not take (cluster settings, ``--dry-run``, traffic changes of a
deployment, the other ``%cube_pipeline`` commands) run the ``cube-lab`` command as before,
its output streamed; it blocks and a non-zero exit fails the cell.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import posixpath
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from .cli.args import parse_pairs
from .errors import CubeError
from .locale.messages import _t
from .sdk.view_locale import view_locale


class CubeFailed(Exception):
    """The work a ``--wait`` magic waited for ended without succeeding: the cell fails with an
    error (its message, no traceback), so "Run All" and papermill stop there."""

    def _render_traceback_(self) -> list[str]:  # what IPython shows instead of a traceback
        return [f"\x1b[31m{type(self).__name__}\x1b[0m: {self}"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise CubeError(message, self.format_usage())


def _parser(prog: str, description: str) -> _Parser:
    return _Parser(prog=prog, add_help=False, description=description)


def _cli_only(p: argparse.ArgumentParser, *flags: str, values: tuple[str, ...] = ()) -> None:
    """Options only the ``cube-lab`` command takes: given, the magic runs it instead."""
    for flag in flags:
        p.add_argument(flag, dest=f"cli_{flag.lstrip('-').replace('-', '_')}", action="store_true")
    for flag in values:
        p.add_argument(flag, dest=f"cli_{flag.lstrip('-').replace('-', '_')}", metavar="X")


def _wants_cli(args: argparse.Namespace) -> bool:
    """Whether an option only the command takes was given (``--backend local`` is not one)."""
    return any(
        v not in (None, False, "local") for k, v in vars(args).items() if k.startswith("cli_")
    )


def _register_parser() -> _Parser:
    p = _parser("%cube_register", "Register a file, folder or in-memory model as a new version.")
    p.add_argument("name")
    p.add_argument("target", help="a path, or the name of a model variable in the notebook")
    p.add_argument("--metric", action="append", default=[])
    p.add_argument("--param", action="append", default=[])
    p.add_argument("--tag", action="append", default=[])
    p.add_argument("--alias", action="append", default=[])
    p.add_argument("--project")
    p.add_argument("--flavor")
    p.add_argument("--description", default="")
    return p


def _pipeline_parser() -> _Parser:
    p = _parser("%cube_pipeline run", "Start a run of a .pipeline file.")
    p.add_argument("path")
    p.add_argument("--param", action="append", default=[])
    p.add_argument("--only")
    p.add_argument("--cache", action="store_true")
    p.add_argument("--project")
    p.add_argument("--wait", action="store_true")
    _cli_only(p, "--quiet", "-q", values=("--parallel", "--from"))
    return p


def _train_parser() -> _Parser:
    p = _parser("%cube_train", "Start a training job.")
    p.add_argument("--framework", choices=["pytorch", "deepspeed", "tensorflow", "mpi", "plain"])
    for flag in ("--workers", "--nproc", "--gpus", "--retries", "--timeout"):
        p.add_argument(flag, type=int)
    for flag in ("--gpu-type", "--workdir", "--name", "--image", "--project"):
        p.add_argument(flag)
    p.add_argument("--backend", choices=["local", "kubernetes"])
    p.add_argument("--env", action="append", default=[], metavar="K=V")
    p.add_argument("--wait", action="store_true")
    _cli_only(
        p,
        "--dry-run",
        "--gang",
        "--rdma",
        "--quiet",
        "-q",
        values=("--cpu", "--memory", "--output-dir", "--kind", "--namespace", "--kubeconfig",
                "--kube-context", "--queue", "--shm-size"),
    )  # fmt: skip
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _tune_parser() -> _Parser:
    p = _parser("%cube_tune", "Start a hyperparameter search.")
    p.add_argument("config")
    p.add_argument("--max-trials", type=int)
    p.add_argument("--concurrency", type=int)
    p.add_argument("--project")
    p.add_argument("--wait", action="store_true")
    p.add_argument("--backend", dest="cli_backend", choices=["local", "kubernetes"])
    _cli_only(p, "--dry-run", "--quiet", "-q", values=("--namespace", "--image"))
    return p


def _finetune_parser() -> _Parser:
    p = _parser("%cube_finetune", "Fine-tune a language model as a training job.")
    p.add_argument("config")
    p.add_argument("--nproc", type=int, default=1)
    p.add_argument("--project")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--preview", type=int, metavar="N")
    p.add_argument("--wait", action="store_true")
    return p


def _deploy_parser() -> _Parser:
    p = _parser("%cube_deploy", "Serve a registered model version.")
    p.add_argument("ref")
    p.add_argument("--name")
    p.add_argument("--replicas", type=int)
    p.add_argument("--port", type=int)
    p.add_argument("--batch-max-rows", type=int)
    p.add_argument("--batch-wait-ms", type=float)
    p.add_argument("--auth", choices=["required", "none"])
    p.add_argument("--project")
    # a bare --wait is the magic's; ``--wait SECONDS`` the command's (kubernetes Ready)
    p.add_argument("--wait", nargs="?", const=True, default=False)
    p.add_argument("--backend", dest="cli_backend", choices=["local", "kubernetes"])
    _cli_only(
        p,
        "--switch",
        "--shadow",
        "--dry-run",
        values=("--canary", "--samples", "--namespace", "--storage-uri", "--min-replicas",
                "--max-replicas", "--gpus", "--gpu-type", "--cpu", "--memory"),
    )  # fmt: skip
    return p


def _chat_parser() -> _Parser:
    p = _parser("%cube_chat", "Ask an LLM deployment; its answer is printed as it streams.")
    p.add_argument("deployment")
    p.add_argument("message", nargs="+")
    p.add_argument("--system")
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--temperature", type=float)
    p.add_argument("--top-p", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument("--stop", action="append")
    p.add_argument("--model", help="another adapter of a multi-LoRA deployment")
    p.add_argument("--project")
    return p


def _parse(parser: _Parser, tokens: list[str]) -> argparse.Namespace:
    try:
        return parser.parse_args(tokens)
    except CubeError as exc:
        raise UsageError(f"{parser.prog}: {exc.error}\n{exc.detail or ''}".rstrip()) from None


def _cube_errors(fn: Any) -> Any:
    """A ``CubeError`` shows as its message and how to fix it, no traceback."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CubeError as exc:  # a clean message, no traceback; stops "Run All"
            from .locale.messages import localize

            locale = view_locale()  # JupyterLab's language, else LANG's
            error, detail = localize(exc.error, locale), localize(exc.detail, locale)
            hint = f"\n{detail}" if detail else ""
            raise UsageError(f"cube-lab: {error}{hint}") from None

    return wrapper


PIPELINE_COMMANDS = ("run", "validate", "runs", "logs", "cancel", "compile", "schedule")
SUCCEEDED = {"run": ("succeeded",), "job": ("succeeded",), "experiment": ("done",)}


def server_project(explicit: str | None) -> str | None:
    """``--project``, else the project group this lab server was started for under the hub
    (the spawner's ``CUBE_LAB_PROJECT``), else None: the personal project."""
    return explicit or os.environ.get("CUBE_LAB_PROJECT") or None


@magics_class
class CubeMagics(Magics):
    @line_magic
    @_cube_errors
    def cube_register(self, line: str) -> None:
        """Register a model version: ``%cube_register iris-rf model.pkl --metric acc=0.9``."""
        from .sdk.models import models

        args = _register_parser().parse_args(shlex.split(line))
        target: Any = args.target
        namespace = self.shell.user_ns if self.shell else {}
        if not Path(target).expanduser().exists() and target in namespace:
            target = namespace[target]
        version = models.register(
            target,
            args.name,
            metrics=parse_pairs(args.metric, "metric", numeric=True),
            params=parse_pairs(args.param, "param"),
            tags=parse_pairs(args.tag, "tag"),
            aliases=args.alias,
            project=server_project(args.project),
            flavor=args.flavor,
            description=args.description,
        )
        print(
            f"Registered {version.name} v{version.version} ({version.flavor}, "
            f"{int(version.data.get('size_bytes') or 0):,} bytes) in project {version.project}"
        )

    @line_magic
    @_cube_errors
    def cube_pipeline(self, line: str) -> None:
        """Start a pipeline run and show its live view:
        ``%cube_pipeline run flow.pipeline --param lr=0.1 [--only NODE] [--cache] [--wait]``.
        The other commands (``validate``, ``runs``, ``logs``...) run ``cube-lab pipeline``."""
        tokens = shlex.split(line)
        if not tokens or tokens[0] not in PIPELINE_COMMANDS:
            raise UsageError(
                f"usage: %cube_pipeline {'|'.join(PIPELINE_COMMANDS)} FILE.pipeline [options] "
                "(see `cube-lab pipeline run --help`)"
            )
        if tokens[0] != "run":
            _stream_cli(["pipeline", *tokens], f"cube-lab pipeline {tokens[0]}")
            return
        args = _parse(_pipeline_parser(), tokens[1:])
        if _wants_cli(args):
            _stream_cli(["pipeline", *_without_wait(tokens)], "cube-lab pipeline run")
            return
        from .sdk import pipelines

        run = pipelines.run(
            args.path,
            params=parse_pairs(args.param, "param") or None,
            only=args.only,
            cache=args.cache or None,
            project=args.project,
        )
        _show(run, args.wait)

    @line_magic("cube_train")
    @_cube_errors
    def cube_train_line(self, line: str) -> None:
        """Start a training job and show its live view:
        ``%cube_train [--wait] --nproc 2 train.py --epochs 3`` (options as ``cube-lab train``,
        before the script; what follows the script is the script's)."""
        tokens = shlex.split(line)
        if not tokens:
            raise UsageError(
                "usage: %cube_train [--wait] [--framework F] [--workers N] [--nproc N] "
                "[--gpus N] SCRIPT [ARGS...] (see `cube-lab train --help`)"
            )
        self._train(tokens, None)

    @cell_magic("cube_train")
    @_cube_errors
    def cube_train_cell(self, line: str, cell: str) -> None:
        """The cell becomes the training script:
        ``%%cube_train [--wait] --nproc 2 [-- SCRIPT ARGS]``; it runs in the current folder."""
        options, _, script_args = line.partition(" -- ")
        if options.strip() == "--":
            options, script_args = "", ""
        path = _cell_file(cell)
        self._train([*shlex.split(options), str(path), *shlex.split(script_args)], path)

    def _train(self, tokens: list[str], cell: Path | None) -> None:
        args = _parse(_train_parser(), tokens)
        if _wants_cli(args):
            _stream_cli(["train", *_without_wait(tokens)], "cube-lab train")
            return
        from . import sdk
        from .sdk import training

        script, working_dir = args.script, args.workdir
        if cell is not None and working_dir is None:  # the cell runs where the notebook is
            working_dir = os.getcwd()
            transport = sdk.current()
            if isinstance(transport, sdk.RestTransport):  # the server takes it from there
                script = posixpath.relpath(
                    transport.relative(cell, "cell file"), transport.relative(working_dir, "cwd")
                )
        given = {
            "framework": args.framework,
            "workers": args.workers,
            "nproc": args.nproc,
            "gpus": args.gpus,
            "retries": args.retries,
            "timeout_s": args.timeout,
            "gpu_type": args.gpu_type,
            "working_dir": working_dir,
            "name": args.name,
            "image": args.image,
            "project": args.project,
            "backend": args.backend,
            "env": {k: str(v) for k, v in parse_pairs(args.env, "env").items()} or None,
            "args": list(args.args) or None,
        }
        job = training.train(script, **{k: v for k, v in given.items() if v is not None})
        _show(job, args.wait)

    @line_magic
    @_cube_errors
    def cube_tune(self, line: str) -> None:
        """Start a hyperparameter search and show its live trials table:
        ``%cube_tune config.yml [--max-trials N] [--concurrency N] [--wait]``."""
        tokens = shlex.split(line)
        if not tokens:
            raise UsageError(
                "usage: %cube_tune CONFIG.yml [--max-trials N] [--concurrency N] [--wait]"
            )
        args = _parse(_tune_parser(), tokens)
        if _wants_cli(args):
            _stream_cli(["tune", *_without_wait(tokens)], "cube-lab tune")
            return
        from .sdk import tuning

        overrides: dict[str, Any] = {}
        if args.max_trials is not None:
            overrides["maxTrialNumber"] = args.max_trials
        if args.concurrency is not None:
            overrides["trialConcurrency"] = args.concurrency
        _show(tuning.tune(args.config, project=args.project, **overrides), args.wait)

    @line_magic
    @_cube_errors
    def cube_finetune(self, line: str) -> None:
        """Start a fine-tune (a cube-lab config or a LLaMA-Factory YAML) and show its job's
        live view: ``%cube_finetune sft.yaml [--nproc 2] [--set max_steps=20] [--wait]``;
        ``--preview N`` shows the first N records with the trained tokens marked instead."""
        tokens = shlex.split(line)
        if not tokens:
            raise UsageError(
                "usage: %cube_finetune CONFIG.yaml [--nproc N] [--set KEY=VALUE ...] "
                "[--preview N] [--wait]"
            )
        args = _parse(_finetune_parser(), tokens)
        from .sdk import finetune

        overrides = parse_pairs(args.set, "set")
        if args.preview is not None:
            from IPython.display import display

            display(finetune.preview(args.config, args.preview, **overrides))
            return
        job = finetune.finetune(args.config, project=args.project, nproc=args.nproc, **overrides)
        _show(job, args.wait)

    @line_magic
    @_cube_errors
    def cube_deploy(self, line: str) -> None:
        """Serve a registered model version and show its live view (it returns once ready):
        ``%cube_deploy iris:3 --replicas 2`` (options as ``cube-lab deploy``)."""
        tokens = shlex.split(line)
        if not tokens:
            raise UsageError(
                "usage: %cube_deploy NAME[:VERSION|ALIAS] [--replicas N] [--port P] [--wait] "
                "[--switch | --canary PERCENT | --shadow] (see `cube-lab deploy --help`)"
            )
        args = _parse(_deploy_parser(), tokens)
        if _wants_cli(args) or args.wait not in (True, False):
            _stream_cli(["deploy", *_without_wait(tokens, keep_valued=True)], "cube-lab deploy")
            return
        from .sdk import serving

        given = {
            "name": args.name,
            "replicas": args.replicas,
            "project": args.project,
            "port": args.port,
            "batch_max_rows": args.batch_max_rows,
            "batch_wait_ms": args.batch_wait_ms,
            "auth": args.auth,
        }
        deployment = serving.deploy(args.ref, **{k: v for k, v in given.items() if v is not None})
        _show(deployment, bool(args.wait))

    @line_magic
    @_cube_errors
    def cube_chat(self, line: str) -> None:
        """Ask an LLM deployment of the project and print the answer as it streams:
        ``%cube_chat my-llm "Write a haiku about GPUs" --max-tokens 64`` (the SDK's
        ``cl.deployments.get(NAME).chat(...)``)."""
        tokens = shlex.split(line)
        if len(tokens) < 2:
            raise UsageError(
                'usage: %cube_chat DEPLOYMENT "message" [--system S] [--max-tokens N] '
                "[--temperature T] [--top-p P] [--seed N] [--stop S] [--model ADAPTER] "
                "[--project P]"
            )
        args = _parse(_chat_parser(), tokens)
        from .sdk import serving

        deployment = serving.deployments.get(args.deployment, project=args.project)
        messages = [{"role": "system", "content": args.system}] if args.system else []
        messages.append({"role": "user", "content": " ".join(args.message)})
        given = {
            "max_tokens": args.max_tokens,
            "temperature": args.temperature,
            "top_p": args.top_p,
            "seed": args.seed,
            "stop": args.stop,
            "model": args.model,
        }
        for piece in deployment.chat(
            messages, stream=True, **{k: v for k, v in given.items() if v is not None}
        ):
            print(piece, end="", flush=True)
        print()


def _show(handle: Any, wait: bool) -> None:
    """Display the handle's live view; with ``wait``, block until it is done and fail the cell
    (``CubeFailed``) unless it succeeded."""
    from .sdk import views

    shown = views.show(handle)
    if not wait:
        return
    handle.wait()  # an interrupt stops the waiting (and the cell), not the work
    views.settle(handle, shown)
    ok = SUCCEEDED.get(handle.kind)
    failed = handle.status not in ok if ok else handle.status == "failed"
    if handle.kind == "experiment" and not failed and handle.best is None:
        failed = True  # it ended, but no trial gave a result
    if failed:
        raise CubeFailed(_failure(handle))


def _failure(handle: Any) -> str:
    """What the failed cell says: the handle, its status and error, the last log lines."""
    state = handle.view_state()
    lines = [f"cube-lab: {handle.kind} {handle.id} {handle.status}"]
    if handle.kind == "experiment" and handle.status == "done":
        lines[0] += ", but no trial gave a result"
    if state.get("error"):
        lines.append(str(state["error"]))
    found = handle.failure_log()
    if found:
        name, tail = found
        lines += [f"--- last lines of {name} ---", tail]
    return "\n".join(lines)


def _cell_file(cell: str) -> Path:
    """The cell saved as a script where the server can read it (the home under the hub or a
    ``cl.connect(..., root=...)`` server, else the data dir)."""
    from . import sdk
    from .config import Settings

    transport = sdk.current()
    if isinstance(transport, sdk.RestTransport):
        if transport.root is None:
            raise CubeError(
                _t("%%cube_train over REST needs the server's root to save the cell in"),
                _t(
                    "cl.connect(url, token=..., root=FOLDER) with the server's root as this "
                    "machine sees it, or save the cell as a file there and use %cube_train FILE."
                ),
            )
        folder = transport.root / ".cube-lab" / "training-cells"
    else:
        folder = Settings.resolve().data_dir / "training" / "cells"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"cell_{hashlib.sha256(cell.encode()).hexdigest()[:12]}.py"
    path.write_text(cell)
    return path


def _without_wait(tokens: list[str], keep_valued: bool = False) -> list[str]:
    """The tokens for the ``cube-lab`` command: the magic's bare ``--wait`` left out (the
    command blocks anyway); ``--wait SECONDS`` kept where the command takes it."""
    out: list[str] = []
    for i, token in enumerate(tokens):
        if token == "--wait":
            following = tokens[i + 1] if i + 1 < len(tokens) else ""
            if not (keep_valued and following.replace(".", "", 1).isdigit()):
                continue
        out.append(token)
    return out


def _stream_cli(args: list[str], what: str) -> None:
    """Run ``cube-lab ARGS`` as a child and print its output live; an interrupt stops it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cube_lab.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    try:
        for out in proc.stdout:
            print(out, end="", flush=True)
        code = proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)  # the CLI stops every process of the job on SIGINT
        for out in proc.stdout:
            print(out, end="", flush=True)
        code = proc.wait()
    if code != 0:
        failed = _t("{what} failed (exit code {code})", what=what, code=code)
        raise UsageError(failed.translated(view_locale()))
