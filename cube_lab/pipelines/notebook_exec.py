"""Run a notebook into a copy: ``python -m cube_lab.pipelines.notebook_exec SRC DEST``.

The original is never written; papermill injects the parameters after the cell
tagged ``parameters`` (or at the top) and streams cell output to our stdout, which
the runner sends to the node's log.

A succeeded node's log holds the notebook's own output and nothing a user would have to
read past. Two lines used to come from the kernel's plumbing on every run:

- "Kernel is running over TCP without encryption": the kernel application's own log (its
  plumbing, not the notebook's output or warnings, which reach cells as stderr streams) is
  kept to errors. (Unix sockets instead of TCP were tried: under load libzmq then aborted at
  shutdown with "Assertion failed: pfd.revents & POLLIN".)
- "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel": jupyter_client sends SIGINT
  before every shutdown, which lands in an idle kernel after the last cell. Here the kernel
  is shut down only once nbclient has its last reply (or has already interrupted a cell that
  ran past its timeout), so the shutdown asks it to stop without the interrupt.

A failing cell still ends the log with its traceback and the process exits 1.

The kernel runs in a session of its own (jupyter_client starts it so), out of reach of the
runner's kill of the node's process group: once started, its group is reported on the pipe
``$CUBE_PROCESS_FD`` the runner gives, which records it (so a server that starts after a
crash ends it too) and kills it with the node.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import AsyncKernelManager

from cube_lab import processes

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ENV_PROCESS_FD = "CUBE_PROCESS_FD"
_report_fd: int | None = None  # taken out of the environment: the kernel must not inherit it


def take_report_fd() -> None:
    global _report_fd
    raw = os.environ.pop(ENV_PROCESS_FD, "")
    _report_fd = int(raw) if raw.isdigit() else None


def report_group(pid: int | None, role: str = "kernel") -> None:
    """Tell the runner (on the pipe it gave) about a process group it must record."""
    group = processes.group_of(pid) if pid and _report_fd is not None else None
    if group is None or _report_fd is None:
        return
    with contextlib.suppress(OSError):
        os.write(_report_fd, (json.dumps({"role": role, **group.as_dict()}) + "\n").encode())


class NodeKernelManager(AsyncKernelManager):
    """The kernel of one notebook node: its own log kept to errors, no SIGINT at shutdown."""

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if any("ipykernel" in part for part in cmd):  # other kernels take other options
            cmd.append("--IPKernelApp.log_level=ERROR")
        return cmd

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: object) -> None:
        await super()._async_launch_kernel(kernel_cmd, **kw)
        report_group(getattr(self.provisioner, "pid", None))

    async def _async_interrupt_kernel(self) -> None:
        # shutdown_kernel() interrupts first; nbclient's own interrupts (a cell past its
        # timeout) call interrupt_kernel, which AsyncKernelManager binds to the base method.
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()


def main() -> int:
    parser = argparse.ArgumentParser(prog="cube_lab.pipelines.notebook_exec")
    parser.add_argument("source")
    parser.add_argument("output")
    parser.add_argument("--parameters", default="{}")
    args = parser.parse_args()
    take_report_fd()
    import papermill
    from papermill.exceptions import PapermillExecutionError

    source = Path(args.source)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    print(f"executing {source.name} into {args.output}", flush=True)
    try:
        papermill.execute_notebook(
            str(source),
            args.output,
            parameters=json.loads(args.parameters),
            cwd=str(source.parent),
            log_output=True,
            progress_bar=False,
            stdout_file=sys.stdout,
            stderr_file=sys.stderr,
            kernel_manager_class=NodeKernelManager,
        )
    except PapermillExecutionError as exc:
        trace = _ANSI.sub("", "\n".join(exc.traceback)).rstrip()
        if trace:
            print(trace, file=sys.stderr)
        print(f"cell {exc.exec_count} failed: {exc.ename}: {exc.evalue}", file=sys.stderr)
        return 1
    except NoSuchKernel as exc:
        installed = ", ".join(sorted(KernelSpecManager().find_kernel_specs())) or "none"
        print(
            f"{source.name} asks for the kernel {exc.name!r}, which is not installed here "
            f"(installed: {installed}). Pick one of those in JupyterLab (Kernel > Change "
            "Kernel) and save the notebook, or install that kernel.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
