"""A class on a throwaway hub, for benchmarks of the hub's pages: N students in one project
group, each with a running server, and a month of GPU-hours history.

How it is seeded (reusable: ``with seeded_hub(60) as (hub, info): ...``):

- the real hub (``cube_lab.hub.devhub``: JupyterHub, the proxy, the cube-admin service), with
  one change: the spawner is ``SeedSpawner``, a ``CubeLocalSpawner`` whose *server* is a tiny
  HTTP answerer inside the hub's own process. Everything before and after the server process
  is the real path: the profile choice, the quota admission in the ledger (pre-spawn hook),
  the home folder, the release when it stops. 60 servers cost no processes, so the figures
  are the pages', not a 2-core machine swapping 60 JupyterLabs.
- the students are hub users made through the hub's API, put in the group through the
  cube-admin API (with a quota that fits them all); half start the ``gpu-1`` profile, half
  ``cpu``, through the hub's spawn API.
- the month's GPU-hours history: ``history`` past GPU jobs per student, written through the
  ledger itself with a clock set back to earlier in the month (reserve, then release).

    python benchmarks/hub_seed.py --students 60   # seeds, prints the figures, keeps it up
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest import mock

from cube_lab.hub import devhub
from cube_lab.hub.ledger import Ledger
from cube_lab.hub.quotas import demand, month_bounds
from cube_lab.hub.spawner import CubeLocalSpawner

HERE = Path(__file__).resolve().parent
GROUP = "ai-course"
SETTINGS: dict[str, Any] = {
    "personal_quota": {"servers": 1, "jobs": 2, "cpu": 2},
    "admin_quota": {"servers": 1, "jobs": 4, "cpu": 4},
}


class SeedSpawner(CubeLocalSpawner):
    """The real admission and release around an in-process stand-in for the lab server."""

    _answerer: Any = None

    async def start(self) -> tuple[str, int]:
        from tornado import httpserver, web
        from tornado.netutil import bind_sockets

        class Answer(web.RequestHandler):
            def get(self, *_: Any) -> None:  # the hub's "is it up?" and anything else
                import jupyterhub

                self.finish({"version": jupyterhub.__version__})

        app = web.Application([(r"/(.*)", Answer)])
        sockets = bind_sockets(0, "127.0.0.1")
        server = httpserver.HTTPServer(app)
        server.add_sockets(sockets)
        self._answerer = server
        return "127.0.0.1", sockets[0].getsockname()[1]

    async def poll(self) -> int | None:
        return None if self._answerer is not None else 0

    async def stop(self, now: bool = False) -> None:
        if self._answerer is not None:
            self._answerer.stop()
            self._answerer = None


def _with_seed_spawner(original: Any) -> Any:
    def write_files(*args: Any, **kw: Any) -> Any:
        settings_file, config, token = original(*args, **kw)
        with config.open("a") as out:
            out.write(
                f"import sys; sys.path.insert(0, {str(HERE)!r})\n"
                "c.JupyterHub.spawner_class = 'hub_seed.SeedSpawner'\n"
                "c.JupyterHub.concurrent_spawn_limit = 200\n"
            )
        return settings_file, config, token

    return write_files


def student_names(n: int) -> list[str]:
    return [f"student{i:02d}" for i in range(1, n + 1)]


def seed(hub: devhub.DevHub, students: int = 60, *, history: int = 5) -> dict[str, Any]:
    """``students`` users in project group ``ai-course``, each with a running server (half of
    them with a GPU), and ``history`` finished GPU jobs each earlier this month."""
    names = student_names(students)
    status, body = hub.hub("POST", "/users", {"usernames": names})
    assert status in (201, 409), body
    quota = {"servers": students, "jobs": students, "cpu": 2 * students,
             "accelerators": {"nvidia.com/gpu": students}, "gpu_hours": 40 * students,
             "gpu_hours_per_member": 40}  # fmt: skip
    status, body = hub.admin(
        "POST",
        "groups",
        {"name": GROUP, "users": names, "profiles": ["cpu", "gpu-1"], "quota": quota},
    )
    assert status == 201, body

    def start(i_name: tuple[int, str]) -> None:
        i, name = i_name
        status, body = hub.spawn(name, {"profile": "gpu-1" if i % 2 else "cpu", "project": GROUP})
        assert status == 201, f"{name}: {body}"

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(start, enumerate(names)))

    # the month's history, through the ledger with its clock set back
    month_start, _ = month_bounds(time.time())
    at = [month_start + 3600.0]
    ledger = Ledger(hub.data_dir / "hub" / "admission.sqlite", clock=lambda: at[0])
    for k in range(history):
        for name in names:
            holder = f"job:{name}/history-{k}"
            ledger.reserve(
                holder=holder, kind="job", username=name, group=GROUP, quota=None,
                amounts=demand(jobs=1, limits={"nvidia.com/gpu": "1"}),
            )  # fmt: skip
        at[0] += 1800.0  # each job held one GPU for half an hour
        for name in names:
            ledger.release(holder=f"job:{name}/history-{k}")
    return {"group": GROUP, "students": names, "running": students}


@contextlib.contextmanager
def seeded_hub(
    students: int = 60, *, history: int = 5, settings: dict[str, Any] | None = None
) -> Iterator[tuple[devhub.DevHub, dict[str, Any]]]:
    """A throwaway hub with the class seeded; stopped and removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="cube-hub-seed-"))
    try:
        with mock.patch.object(devhub, "write_files", _with_seed_spawner(devhub.write_files)):
            hub = devhub.start(root, {**SETTINGS, **(settings or {})})
        try:
            yield hub, seed(hub, students, history=history)
        finally:
            hub.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--history", type=int, default=5)
    args = parser.parse_args()
    with seeded_hub(args.students, history=args.history) as (hub, info):
        _, usage = hub.admin("GET", "usage")
        print(f"hub at {hub.url}: {info['running']} servers; totals {usage['totals']}")
        print("Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
