"""The Kubernetes backend: submit a job's objects, follow its status and its pods' logs, delete.

- Status: Kubeflow's v1 kinds (PyTorchJob, TFJob) and MPIJob v2beta1 report conditions
  ``Created / Running / Restarting / Suspended / Succeeded / Failed``; a TrainJob reports
  ``Suspended / Complete / Failed`` (plus ``Created`` in newer releases) and is running
  while one of its child Jobs has active pods (``status.jobsStatus``).
- Logs: the pods carry ``training.kubeflow.org/job-name`` (the v1 kinds and MPIJob, whose
  launcher, ``job-role=launcher``, holds every rank's output) or
  ``jobset.sigs.k8s.io/jobset-name`` (a TrainJob runs as a JobSet of the same name).
  Each pod's log is appended to the job's ``log.txt`` with a ``[pod NAME] `` prefix, so
  the same log and metrics APIs serve local and cluster jobs.
- Stop: delete the objects (background propagation removes the pods).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ..errors import CubeError
from ..k8s import ClusterConfig, Kube, Resource
from ..k8s.objects import create_all

TERMINAL = ("succeeded", "failed", "cancelled", "interrupted")
POLL_S = 2.0  # how often the pod list is read for new pods to follow
MAX_BACKOFF_S = 30.0
DRAIN_S = 30.0  # how long the end waits for the pods' last log lines

JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def job_status(obj: dict[str, Any]) -> tuple[str, str | None]:
    """The cube-lab status of a job object, and the operator's message when it failed."""
    status = obj.get("status") or {}
    true = {
        c.get("type"): c for c in status.get("conditions") or [] if str(c.get("status")) == "True"
    }
    if "Failed" in true:
        cond = true["Failed"]
        return "failed", cond.get("message") or cond.get("reason") or "the job failed"
    if "Succeeded" in true or "Complete" in true:
        return "succeeded", None
    if "Suspended" in true:
        return "queued", None
    if obj.get("kind") == "TrainJob":
        jobs = status.get("jobsStatus") or []
        busy = any((j.get("active") or 0) + (j.get("ready") or 0) > 0 for j in jobs)
        return ("running" if busy else "queued"), None
    if "Running" in true or "Restarting" in true:
        return "running", None
    return "queued", None


def pod_selector(kind: str, name: str) -> tuple[str, tuple[str, ...]]:
    """The label selector of the pods whose logs make the job's log, and the containers
    to read (the first container of a pod when none of these is there)."""
    if kind == "TrainJob":
        return f"{JOBSET_NAME_LABEL}={name}", ("node",)
    if kind == "MPIJob":  # mpirun gathers every rank's output in the launcher
        return f"{JOB_NAME_LABEL}={name},{JOB_ROLE_LABEL}=launcher", ("launcher",)
    return f"{JOB_NAME_LABEL}={name}", ("pytorch", "tensorflow")


async def delete_objects(config: ClusterConfig, refs: list[dict[str, str]]) -> int:
    """Delete the job's objects, the job first; how many were still there."""
    gone = 0
    async with Kube(config) as kube:
        for ref in reversed(refs):
            gone += await kube.delete(Resource.of(ref), ref["name"], ref["namespace"])
    return gone


StatusHook = Callable[[str, str | None], None]  # (status, error), called from a worker thread


class ClusterJob:
    """One job on a cluster: ``submit`` then ``follow`` to the end; ``cancel`` deletes it."""

    def __init__(
        self,
        job_id: str,
        job_dir: Path,
        refs: list[dict[str, str]],
        config: ClusterConfig,
        *,
        manifests: list[dict[str, Any]] | None = None,
        on_line: Callable[[str], None] | None = None,
        on_status: StatusHook | None = None,
        poll_s: float = POLL_S,
        logs_since_s: int | None = None,
    ) -> None:
        self.job_id = job_id
        self.job_dir = job_dir
        self.refs = refs  # the objects, in creation order; the job itself is the last
        self.manifests = manifests or []  # what ``submit`` creates
        self.config = config
        self.on_line = on_line
        self.on_status = on_status
        self.poll_s = poll_s
        self.logs_since_s = logs_since_s  # following again: skip what the log already has
        self.status = "queued"
        self.error: str | None = None
        self.cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._log: IO[bytes] | None = None
        self._followed: dict[str, asyncio.Task[None]] = {}
        self._deleting: asyncio.Task[None] | None = None
        self._watching: asyncio.Future[None] | None = None

    @property
    def main(self) -> dict[str, str]:
        return self.refs[-1]

    @property
    def kind(self) -> str:
        return self.main["kind"]

    @property
    def name(self) -> str:
        return self.main["name"]

    @property
    def namespace(self) -> str:
        return self.main["namespace"]

    @property
    def log_path(self) -> Path:
        return self.job_dir / "log.txt"

    # -- submitting and deleting --------------------------------------------------------------

    async def submit(self) -> None:
        """Create every object in order; if one fails, those created before it are removed."""
        async with Kube(self.config) as kube:
            await create_all(kube, self.manifests)

    def cancel(self) -> None:
        """Delete the job from the cluster; safe from signal handlers and other threads."""
        self.cancelled = True
        loop = self._loop
        if loop is None:
            return
        try:
            same = asyncio.get_running_loop() is loop
        except RuntimeError:
            same = False
        if same:
            self._start_delete()
        else:
            loop.call_soon_threadsafe(self._start_delete)

    def _start_delete(self) -> None:
        assert self._loop is not None
        self._deleting = self._loop.create_task(self._delete())  # held, so it is not collected

    async def _delete(self) -> None:
        try:
            await delete_objects(self.config, self.refs)
        except CubeError as exc:
            self._write(f"cube-lab: stopping failed: {exc.error} ({exc.detail})\n")
            return
        if self.cancelled and self._watching is not None:
            # A watch begun after the object went (between its read and the watch) never
            # hears DELETED: the follower learns it from us.
            self._gone()
            self._watching.cancel()

    # -- following ---------------------------------------------------------------------------

    async def follow(self) -> str:
        """Follow status and logs to the end; the final status (also given to on_status).

        A lost connection or a refused request is written to the log and tried again
        with a growing pause; only the object's disappearance ends the job early."""
        self._loop = asyncio.get_running_loop()
        self.job_dir.mkdir(parents=True, exist_ok=True)
        if self.cancelled:  # stopped while it was being submitted
            await self._delete()
        failures = 0
        kube: Kube | None = None
        async with contextlib.AsyncExitStack() as stack:
            self._log = stack.enter_context(open(self.log_path, "ab", buffering=0))
            stack.push_async_callback(self._stop_pumps)
            while self.status not in TERMINAL:
                try:
                    if kube is None:
                        kube = await stack.enter_async_context(Kube(self.config))
                    self._watching = asyncio.ensure_future(self._watch(kube))
                    try:
                        await self._watching
                    except asyncio.CancelledError:
                        task = asyncio.current_task()
                        if self.status not in TERMINAL or (task and task.cancelling()):
                            raise  # not our own stop (above): someone cancels the follower
                    finally:
                        self._watching = None
                    failures = 0
                except CubeError as exc:
                    if exc.status == 404:  # the object is gone, and we saw no DELETED
                        self._gone()
                        break
                    failures += 1
                    wait = min(MAX_BACKOFF_S, self.poll_s * 2**failures)
                    self._write(f"cube-lab: {exc.error}; trying again in {wait:g} s\n")
                    await asyncio.sleep(wait)
            await self._report(self.status, self.error)
        self._log = None
        return self.status

    async def _stop_pumps(self) -> None:
        for task in self._followed.values():
            task.cancel()
        await asyncio.gather(*self._followed.values(), return_exceptions=True)

    async def _watch(self, kube: Kube) -> None:
        res = Resource.of(self.main)
        selector, containers = pod_selector(self.kind, self.name)
        pods = asyncio.create_task(self._pods(kube, selector, containers))
        try:
            await self._seen(await kube.get(res, self.name, self.namespace))
            if self.status not in TERMINAL:
                events = kube.watch(res, self.name, self.namespace)
                async with contextlib.aclosing(events):
                    async for event, obj in events:
                        if event == "DELETED":
                            self._gone()
                        else:
                            await self._seen(obj)
                        if self.status in TERMINAL:
                            break
        finally:
            pods.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pods
        if self.status in TERMINAL:
            await self._drain(kube, selector, containers)

    async def _seen(self, obj: dict[str, Any]) -> None:
        status, message = job_status(obj)
        if status == self.status:
            return
        if status in TERMINAL:  # reported after the logs are drained
            self.status, self.error = status, message
            return
        self.status = status
        await self._report(status, None)

    def _gone(self) -> None:
        if self.cancelled:
            self.status, self.error = "cancelled", "stopped"
        else:
            self.status = "interrupted"
            self.error = f"the {self.kind} {self.name} was deleted from the cluster"

    async def _report(self, status: str, error: str | None) -> None:
        if self.on_status is not None:
            await asyncio.to_thread(self.on_status, status, error)

    # -- pod logs ----------------------------------------------------------------------------

    async def _pods(self, kube: Kube, selector: str, containers: tuple[str, ...]) -> None:
        """Start following each pod's log once it runs (or ran)."""
        said = None
        while True:
            try:
                await self._follow_new(kube, selector, containers)
                said = None
            except CubeError as exc:
                if exc.error != said:  # once, not at every look
                    self._write(f"cube-lab: {exc.error}\n")
                said = exc.error
            await asyncio.sleep(self.poll_s)

    async def _follow_new(self, kube: Kube, selector: str, containers: tuple[str, ...]) -> None:
        for pod in await kube.pods(selector, self.namespace):
            meta = pod.get("metadata") or {}
            key = meta.get("uid") or meta.get("name")
            phase = (pod.get("status") or {}).get("phase")
            if key in self._followed or phase not in ("Running", "Succeeded", "Failed"):
                continue
            names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
            container = next((c for c in containers if c in names), names[0] if names else None)
            self._followed[key] = asyncio.create_task(
                self._pump(kube, meta["name"], container, key)
            )

    async def _pump(self, kube: Kube, pod: str, container: str | None, key: str) -> None:
        prefix = f"[pod {pod}] "
        lines = 0
        try:
            log = kube.pod_log(
                pod, container, self.namespace, follow=True, since_s=self.logs_since_s
            )
            async for line in log:
                lines += 1
                self._write(prefix + (line if line.endswith("\n") else line + "\n"))
        except CubeError as exc:
            self._write(f"cube-lab: {exc.error}\n")
            if not lines:  # not started yet: try again at the next look (a retry would repeat)
                self._followed.pop(key, None)

    async def _drain(self, kube: Kube, selector: str, containers: tuple[str, ...]) -> None:
        """The job ended: read the pods that ended too fast to be seen, then their last lines."""
        with contextlib.suppress(CubeError):
            await self._follow_new(kube, selector, containers)
        tasks = list(self._followed.values())
        if tasks:
            await asyncio.wait(tasks, timeout=DRAIN_S)

    def _write(self, text: str) -> None:
        if self._log is not None:
            self._log.write(text.encode())
        if self.on_line is not None:
            self.on_line(text)
