"""Notebook magics: thin callers of the same services as the REST API.

``%cube_register NAME PATH_OR_VARIABLE [--metric k=v ...] [--param k=v ...]``
``%cube_deploy NAME[:VERSION] [--replicas N]``
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from .cli_args import parse_pairs
from .errors import CubeError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise CubeError(message, self.format_usage())


def _register_parser() -> _Parser:
    p = _Parser(
        prog="%cube_register",
        add_help=False,
        description="Register a file, folder or in-memory model as a new model version.",
    )
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


PIPELINE_COMMANDS = ("run", "validate", "runs", "logs", "cancel", "compile", "schedule")


@magics_class
class CubeMagics(Magics):
    @line_magic
    def cube_register(self, line: str) -> None:
        """Register a model version: ``%cube_register iris-rf model.pkl --metric acc=0.9``."""
        from .registry import register

        try:
            args = _register_parser().parse_args(shlex.split(line))
            target: Any = args.target
            namespace = self.shell.user_ns if self.shell else {}
            if not Path(target).expanduser().exists() and target in namespace:
                target = namespace[target]
            version = register(
                target,
                args.name,
                metrics=parse_pairs(args.metric, "metric", numeric=True),
                params=parse_pairs(args.param, "param"),
                tags=parse_pairs(args.tag, "tag"),
                aliases=args.alias,
                project=args.project,
                flavor=args.flavor,
                description=args.description,
            )
        except CubeError as exc:  # a clean message, no traceback; stops "Run All"
            hint = f"\n{exc.detail}" if exc.detail else ""
            raise UsageError(f"cube-lab: {exc.error}{hint}") from None
        print(
            f"Registered {version.model} v{version.version} ({version.flavor}, "
            f"{version.size_bytes:,} bytes) in project {version.project}"
        )

    @line_magic
    def cube_pipeline(self, line: str) -> None:
        """Run or check a pipeline with live per-node progress:
        ``%cube_pipeline run flow.pipeline --parallel 4 --param lr=0.1``.

        Runs ``cube-lab pipeline ...`` as a child process and streams its output, so the
        kernel stays responsive to an interrupt, which cancels the run cleanly."""
        args = shlex.split(line)
        if not args or args[0] not in PIPELINE_COMMANDS:
            raise UsageError(
                f"usage: %cube_pipeline {'|'.join(PIPELINE_COMMANDS)} FILE.pipeline [options] "
                "(see `cube-lab pipeline run --help`)"
            )
        _stream_cli(["pipeline", *args], f"cube-lab pipeline {args[0]}")

    @line_magic("cube_train")
    def cube_train_line(self, line: str) -> None:
        """Run a distributed training job, streaming every rank's output:
        ``%cube_train --nproc 2 train.py --epochs 3`` (options as ``cube-lab train``)."""
        args = shlex.split(line)
        if not args:
            raise UsageError(
                "usage: %cube_train [--framework F] [--workers N] [--nproc N] [--gpus N] "
                "SCRIPT [ARGS...] (see `cube-lab train --help`)"
            )
        _stream_cli(["train", *args], "cube-lab train")

    @cell_magic("cube_train")
    def cube_train_cell(self, line: str, cell: str) -> None:
        """The cell becomes the training script: ``%%cube_train --nproc 2 [-- SCRIPT ARGS]``."""
        options, _, script_args = line.partition(" -- ")
        if options.strip() == "--":
            options, script_args = "", ""
        from .config import ENV_SERVICE_URL, Settings

        try:
            if os.environ.get(ENV_SERVICE_URL):  # under the hub: in the home the service reads
                from .cli_remote import home

                folder = home() / ".cube-lab" / "training-cells"
            else:
                folder = Settings.resolve().data_dir / "training" / "cells"
        except CubeError as exc:
            raise UsageError(f"cube-lab: {exc.error}\n{exc.detail or ''}".rstrip()) from None
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"cell_{hashlib.sha256(cell.encode()).hexdigest()[:12]}.py"
        path.write_text(cell)
        args = [*shlex.split(options), str(path), *shlex.split(script_args)]
        _stream_cli(["train", *args], "cube-lab train")

    @line_magic
    def cube_tune(self, line: str) -> None:
        """Run a hyperparameter search, one line per trial, ending with the best:
        ``%cube_tune config.yml [--max-trials N]`` (NNI-style config; see `cube-lab tune`)."""
        args = shlex.split(line)
        if not args:
            raise UsageError("usage: %cube_tune CONFIG.yml [--max-trials N] [--concurrency N]")
        _stream_cli(["tune", *args], "cube-lab tune")

    @line_magic
    def cube_deploy(self, line: str) -> None:
        """Serve a registered model version and print its endpoint:
        ``%cube_deploy iris:3 --replicas 2`` (options as ``cube-lab deploy``)."""
        args = shlex.split(line)
        if not args:
            raise UsageError(
                "usage: %cube_deploy NAME[:VERSION|ALIAS] [--replicas N] [--port P] "
                "[--switch | --canary PERCENT | --shadow] (see `cube-lab deploy --help`)"
            )
        _stream_cli(["deploy", *args], "cube-lab deploy")


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
        raise UsageError(f"{what} failed (exit code {code})")
