"""The lab server's notebook kernels, sampled like jobs: kind ``kernel``, the kernel id.

``KernelSampler.reconcile`` (every ``every_s`` on the server's event loop, ``start``) compares
the kernel manager's running kernels with what it watches: a new kernel (or one restarted, with
a new process) gets a watch of its process tree, a kernel shut down has its watch stopped; a
kernel process that died on its own ends its watch at the sampler's next tick. The notebook's
path and name come from the session manager where a session holds the kernel. Owner: the
server's user; project: the server's project (``$CUBE_LAB_PROJECT``, set by the hub's spawner)
else the owner's personal project.

Files: ``<data dir>/monitoring/kernels/<kernel id>.json`` (``files.kernel_file``), which
``live`` and ``report`` read (and ``gpu_hours`` counts, so a shut-down kernel's file stays,
marked finished); ``start`` removes the files not written for ``KEEP_S``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from ..projects.service import personal_name
from . import files
from .monitor import Watch, watch

log = logging.getLogger(__name__)
ENV_PROJECT = "CUBE_LAB_PROJECT"  # cube_lab/hub/spawner.py sets it for a project's server
EVERY_S = 2.0
KEEP_S = 62 * 86400.0  # this month's and last month's files are kept
KERNEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\Z")


def kernel_pid(km: Any) -> int | None:
    """The pid of a kernel manager's kernel process (a local provisioner's), or None (a
    remote kernel, one not started yet)."""
    provisioner = getattr(km, "provisioner", None)
    pid = getattr(provisioner, "pid", None)
    if not isinstance(pid, int):
        pid = getattr(getattr(provisioner, "process", None), "pid", None)
    return pid if isinstance(pid, int) and pid > 0 else None


class KernelSampler:
    """Watches every running kernel of ``kernel_manager`` (a ``MultiKernelManager``)."""

    def __init__(
        self,
        kernel_manager: Any,
        session_manager: Any,
        data_dir: Path,
        owner: str,
        project: str | None = None,
        every_s: float = EVERY_S,
    ) -> None:
        self.kernels = kernel_manager
        self.sessions = session_manager
        self.data_dir = data_dir
        self.owner = owner
        self.project = project or os.environ.get(ENV_PROJECT) or personal_name(owner)
        self.every_s = every_s
        self.watches: dict[str, tuple[int, Watch]] = {}  # kernel id -> (pid, its watch)
        self._callback: Any = None

    def start(self) -> None:
        from tornado.ioloop import PeriodicCallback

        self.prune()
        if self._callback is None:
            self._callback = PeriodicCallback(self.reconcile, self.every_s * 1000)
            self._callback.start()

    def stop(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        for kernel_id in list(self.watches):
            self._end(kernel_id)

    def prune(self, now: float | None = None) -> None:
        """Remove the kernel files not written for ``KEEP_S``."""
        folder = files.kernels_folder(self.data_dir)
        cutoff = (time.time() if now is None else now) - KEEP_S
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                with contextlib.suppress(OSError):
                    if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)

    async def _notebooks(self) -> dict[str, dict[str, str]]:
        """Kernel id -> {"path", "name"} of the sessions that hold a kernel."""
        if self.sessions is None:
            return {}
        try:
            sessions = await self.sessions.list_sessions()
        except Exception as exc:  # the kernels are sampled all the same
            log.debug("sessions: %s", exc)
            return {}
        out = {}
        for session in sessions or []:
            kernel = session.get("kernel") or {}
            if kernel.get("id"):
                out[str(kernel["id"])] = {
                    "path": str(session.get("path") or ""),
                    "name": str(session.get("name") or ""),
                }
        return out

    async def reconcile(self) -> None:
        """Start watching new kernels, stop watching the ones gone (see the module's text)."""
        try:
            running = [k for k in self.kernels.list_kernel_ids() if KERNEL_ID.match(k)]
        except Exception as exc:
            log.debug("kernels: %s", exc)
            return
        notebooks = await self._notebooks()
        for kernel_id in set(self.watches) - set(running):
            self._end(kernel_id)
        for kernel_id in running:
            try:
                km = self.kernels.get_kernel(kernel_id)
            except KeyError:
                continue
            pid = kernel_pid(km)
            held = self.watches.get(kernel_id)
            if pid is None:
                continue
            notebook = notebooks.get(kernel_id, {})
            meta = {
                "owner": self.owner,
                "project": self.project,
                "kernel_name": str(getattr(km, "kernel_name", "") or ""),
                "path": notebook.get("path") or None,
                "name": notebook.get("name") or notebook.get("path", "").rsplit("/", 1)[-1],
            }
            if held is not None and held[0] == pid:
                if held[1].running:
                    with held[1].lock:  # a session renamed, a notebook attached later
                        held[1].meta.update(meta)
                # else its process died on its own: ended; a restart brings a new pid
                continue
            if held is not None:
                held[1].stop()  # restarted: the new process goes on in the same file
            self.watches[kernel_id] = (
                pid,
                watch(
                    files.kernel_file(self.data_dir, kernel_id),
                    [pid],
                    kind="kernel",
                    object_id=kernel_id,
                    meta=meta,
                    ends_itself=True,
                ),
            )

    def _end(self, kernel_id: str) -> None:
        _, w = self.watches.pop(kernel_id)
        w.stop()
