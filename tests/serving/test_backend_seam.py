"""The deployment service knows no processes: given a fake backend (no router, no model server,
no warm host), it records deploys, traffic changes and stops, and hands the backend plans."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cube_lab.accounts import RunAs
from cube_lab.config import Settings
from cube_lab.identity import Caller
from cube_lab.serving import service as service_module
from cube_lab.serving.backend import DeploymentFailed, OIPSpec, ServerPlan
from cube_lab.serving.service import DeploymentService
from cube_lab.workspace import Workspace

ALICE = Caller("alice")


@dataclass
class FakeProc:
    pid: int
    returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode


@dataclass
class FakeRouter:
    name: str
    tables: list[dict[str, Any]] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        return {"name": self.name, "backends": [], "access": {"keys_used": {}}}

    def configure(self, table: dict[str, Any]) -> dict[str, Any]:
        self.tables.append(table)
        return {"ok": True}

    def metrics(self) -> str:
        return "cube_router_requests_total 0\n"


class FakeBackend:
    kind = "local"

    def __init__(self, fail_servers: bool = False) -> None:
        self.pids = itertools.count(900_001)
        self.ports = itertools.count(40_001)
        self.running: set[int] = set()
        self.plans: list[tuple[ServerPlan, int]] = []
        self.stopped: list[int] = []
        self.routers: dict[int, FakeRouter] = {}
        self.names: dict[Path, str] = {}
        self.fail_servers = fail_servers
        self.warmed = 0

    def _proc(self) -> FakeProc:
        proc = FakeProc(next(self.pids))
        self.running.add(proc.pid)
        return proc

    def host_name(self) -> str:
        return "fake-host"

    def creator(self) -> int:
        return 1

    def creator_busy(self, creator: Any) -> bool:
        return False

    def router(self, host: str, port: int, token: str) -> FakeRouter:
        return self.routers[port]

    def start_router(
        self, name: str, folder: Path, token: str, host: str, port: int | None
    ) -> tuple[Any, Path]:
        self.names[folder] = name
        return self._proc(), folder / "ready" / "router.json"

    def start_servers(
        self, folder: Path, plan: ServerPlan, replicas: int, key: str, who: RunAs | None = None
    ) -> list[tuple[Any, Path]]:
        assert key  # the servers demand the router's backend key
        self.plans.append((plan, replicas))
        return [(self._proc(), folder / "ready" / f"s{i}.json") for i in range(replicas)]

    def wait_ready(self, started: list[tuple[Any, Path]], folder: Path) -> list[dict[str, Any]]:
        if self.fail_servers and any(r.name != "router.json" for _, r in started):
            raise DeploymentFailed("a serving process exited before it was ready", "boom")
        found = []
        for _, ready in started:
            port = next(self.ports)
            if ready.name == "router.json":
                self.routers[port] = FakeRouter(self.names[folder])
            found.append({"port": port})
        return found

    def identity(self, pid: int) -> dict[str, Any]:
        return {"start_ticks": pid * 10, "boot_id": "fake-boot"}

    def still_ours(self, info: dict[str, Any], host: str | None) -> dict[str, Any]:
        return info

    def alive(self, pid: int | None) -> bool:
        return pid in self.running

    def stop(self, info: dict[str, Any]) -> None:
        pids = [s["pid"] for s in info.get("servers", [])]
        if info.get("router"):
            pids.insert(0, info["router"]["pid"])
        for pid in pids:
            self.stop_pid(pid)

    def stop_pid(self, pid: int) -> None:
        self.stopped.append(pid)
        self.running.discard(pid)

    def started(self, who: RunAs | None) -> None:
        self.warmed += 1

    def prewarm(self) -> bool:
        return False

    def quit_warm_hosts(self) -> None:
        pass


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    root = tmp_path_factory.mktemp("seam")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        ws = Workspace.open(Settings.resolve(root / "cube-data"))
        x, y = load_iris(return_X_y=True)
        for c in (1.0, 0.5):
            model = LogisticRegression(C=c, max_iter=300).fit(x, y)
            ws.registry.register(ALICE, name="iris", obj=model)
        try:
            yield ws
        finally:
            ws.close()


def service(ws: Workspace, backend: FakeBackend) -> DeploymentService:
    return DeploymentService(ws.store, ws.projects, ws.settings, ws.registry, backend=backend)


def test_a_deploy_through_a_fake_backend_is_recorded(ws: Workspace) -> None:
    fake = FakeBackend()
    svc = service(ws, fake)
    dep = svc.deploy(ALICE, "iris:1", name="seam", replicas=2)
    assert dep.status == "running" and dep.backend == "local" and dep.replicas == 2
    (plan, replicas), *_ = fake.plans
    assert isinstance(plan, OIPSpec) and replicas == 2
    assert (plan.model, plan.version, plan.flavor, plan.batching) == ("iris", 1, "sklearn", None)
    router_port = dep.endpoint.rsplit(":", 1)[1] if dep.endpoint else ""
    router = fake.routers[int(router_port)]
    assert [p["role"] for p in dep.processes] == ["router", "server", "server"]
    assert all(p["boot_id"] == "fake-boot" for p in dep.processes)  # the backend's identity
    server_ports = sorted(p["port"] for p in dep.processes if p["role"] == "server")
    table = router.tables[-1]
    assert [g["version"] for g in table["groups"]] == ["1"]
    assert sorted(b["port"] for b in table["groups"][0]["backends"]) == server_ports
    assert fake.warmed == 1
    with ws.store.read() as s:
        from cube_lab.store.models import Deployment

        row = s.get(Deployment, dep.id)
        assert row is not None and row.runner_host == "fake-host"

    # a canary starts servers of v2 through the backend; promote stops v1's
    dep = svc.canary(ALICE, "seam", "2", 25)
    assert [(t["version"], t["weight"]) for t in dep.traffic] == [(1, 75.0), (2, 25.0)]
    assert isinstance(fake.plans[-1][0], OIPSpec) and fake.plans[-1][0].version == 2
    v1 = [p["pid"] for p in dep.processes if p.get("version") == 1]
    dep = svc.promote(ALICE, "seam")
    assert dep.version == 2 and set(v1) <= set(fake.stopped)
    assert [g["version"] for g in router.tables[-1]["groups"]] == ["2"]
    assert svc.metrics(ALICE, "seam").startswith("cube_router_requests_total")

    # a restart adopts it: its router answers with its name
    assert svc.recover() == {"adopted": ["seam"], "dead": []}
    # its router gone: listing marks it dead
    fake.running.discard(dep.processes[0]["pid"])
    assert [d.status for d in svc.list(ALICE)] == ["dead"]
    assert svc.undeploy(ALICE, "seam").status == "removed"


def test_a_backend_failure_marks_the_deployment_failed(ws: Workspace) -> None:
    fake = FakeBackend(fail_servers=True)
    svc = service(ws, fake)
    with pytest.raises(DeploymentFailed):
        svc.deploy(ALICE, "iris:1", name="broken")
    (dep,) = [d for d in svc.list(ALICE) if d.name == "broken"]
    assert dep.status == "failed" and dep.endpoint is None
    assert fake.running == set()  # everything it started was stopped again
    svc.undeploy(ALICE, "broken")


def test_the_service_module_handles_no_processes() -> None:
    tree = ast.parse(Path(service_module.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not imported & {"signal", "subprocess", "socket", "http"}
    calls = {
        f"{node.func.value.id}.{node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
    }
    assert not calls & {"os.kill", "os.killpg", "os.getpid", "os.fork", "os.waitpid"}
