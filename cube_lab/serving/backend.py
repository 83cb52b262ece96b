"""What the deployment service asks of the backend that runs its deployments.

``service.DeploymentService`` keeps the records (traffic, canary, shadow, promote, roll back,
keys and access, quotas) and knows no processes: it hands its backend a plan of what to run
and gets back handles and addresses. Two backends:

- ``local_backend.LocalBackend`` (``backend == "local"`` on the record): a router and model
  server processes on this machine, forked from a warm host or started afresh, adopted after
  a restart. The service hands it an ``OIPSpec`` (a classic model served over OIP v2) or an
  ``llm.deploy.LLMPlan`` (an OpenAI-compatible LLM replica) and gets ``Started`` handles,
  then the ready files' contents (each process' port).
- KServe (``backend: kubernetes``; ``kserve_service``/``kserve_cluster``): the cluster runs
  the processes and is its own record (each InferenceService labelled with its project), so
  nothing of it is stored in ``deployments`` and it has no use for the process half of this
  interface. What it shares with the local shape is the plan: ``DeploymentService.manifest``
  chooses the runtime the same way (``llm.choose``) and hands ``kserve.inference_service``
  (classic) or ``kserve_llm.llm_inference_service`` (LLM) what to run.

The interface is ``ServingBackend`` below; tests give the service a fake one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..accounts import RunAs
from ..errors import CubeError
from .llm.deploy import LLMPlan


class DeploymentFailed(CubeError):
    """The model server or router did not come up; ``detail`` holds the log's tail, which
    says why (a flavor that cannot be served, a missing library, a crash in the model's
    code). The request was well formed but this version cannot be served as asked: 422."""

    status = 422


@dataclass(frozen=True)
class OIPSpec:
    """A classic model server's plan: one version of a model, served over OIP v2."""

    model: str
    version: int
    flavor: str
    path: Path  # what the server loads (under os_accounts a copy the owner reads)
    batching: dict[str, Any] | None = None  # {"max_rows", "wait_ms"}: adaptive batching


ServerPlan = OIPSpec | LLMPlan


class Handle(Protocol):
    """A started process as the backend hands it back: its pid, whether it has exited."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...


# a started process and the ready file it writes its address to once it answers
Started = tuple[Handle, Path]


class Router(Protocol):
    """A deployment's router's admin routes (``router_client.RouterClient``)."""

    def state(self) -> dict[str, Any]: ...

    def configure(self, table: dict[str, Any]) -> dict[str, Any]: ...

    def metrics(self) -> str: ...


class ServingBackend(Protocol):
    kind: str  # the record's ``backend``

    def host_name(self) -> str:
        """The machine this backend runs deployments on (``runner_host``)."""
        ...

    def creator(self) -> int:
        """Who is deploying (recorded as ``creator_pid``)."""
        ...

    def creator_busy(self, creator: Any) -> bool:
        """Whether another live deployer (a CLI) is starting that deployment right now."""
        ...

    def router(self, host: str, port: int, token: str) -> Router: ...

    def start_router(
        self, name: str, folder: Path, token: str, host: str, port: int | None
    ) -> Started: ...

    def start_servers(
        self, folder: Path, plan: ServerPlan, replicas: int, key: str, who: RunAs | None = None
    ) -> list[Started]: ...

    def wait_ready(self, started: list[Started], folder: Path) -> list[dict[str, Any]]:
        """Each ready file's content (``{"port": ...}``), in order; ``DeploymentFailed`` when
        one exits first or none is ready in time."""
        ...

    def identity(self, pid: int) -> dict[str, Any]:
        """What proves later that ``pid`` is still the process that was started."""
        ...

    def still_ours(self, info: dict[str, Any], host: str | None) -> dict[str, Any]: ...

    def alive(self, pid: int | None) -> bool: ...

    def stop(self, info: dict[str, Any]) -> None:
        """End the recorded router and servers of ``info`` (TERM, a grace, then KILL)."""
        ...

    def stop_pid(self, pid: int) -> None: ...

    def started(self, who: RunAs | None) -> None:
        """Servers were started for ``who``: bring up what makes the next start fast."""
        ...

    def prewarm(self) -> bool: ...

    def quit_warm_hosts(self) -> None: ...
