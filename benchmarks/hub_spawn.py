"""Spawn-to-lab-page time: cube-lab's hub vs plain JupyterHub, side by side in one run.

- cube-lab: ``cube_lab.hub.devhub`` - JupyterHub with cube-lab's settings, NativeAuthenticator,
  the local spawner (profile choice, quota admission in the ledger, project links) starting
  JupyterLab with cube-lab, the cube-admin service.
- plain: JupyterHub with ``SimpleLocalProcessSpawner`` starting plain JupyterLab (cube-lab's
  server extension switched off in each user's Jupyter config), the same proxy.
- plain+ext (``--variants``): the plain hub starting JupyterLab *with* cube-lab's extension,
  to tell what the hub adds from what the lab extension's start-up adds.

Each figure is from ``POST /hub/api/users/<u>/server`` until ``GET /user/<u>/lab`` answers 200
with the user's token (the lab page through the proxy). Runs: ``--single`` users one after
another, then ``--burst`` users at once, per hub; the hubs run one after the other, never
together. Then the cube-admin API under ``--concurrency`` concurrent requests (list groups,
and admission + release), p50/p99.

    python benchmarks/hub_spawn.py [--single 5] [--burst 10] [--concurrency 50]

Target (issue 5): cube-lab adds at most 20% to the plain p50/p95.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from cube_lab.hub import devhub


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def start_plain(root: Path) -> devhub.DevHub:
    """Plain JupyterHub: SimpleLocalProcessSpawner, plain JupyterLab, the same proxy."""
    devhub.ensure_proxy()
    root.mkdir(parents=True, exist_ok=True)
    port = devhub.free_port()
    token = secrets.token_hex(24)
    homes = root / "homes"
    proxy = devhub.HUB_FOLDER / "node_modules" / ".bin" / "configurable-http-proxy"
    config = root / "jupyterhub_config.py"
    config.write_text(
        "import os\n"
        "c = get_config()  # noqa: F821\n"
        f"c.JupyterHub.bind_url = 'http://127.0.0.1:{port}'\n"
        f"c.JupyterHub.hub_bind_url = 'http://127.0.0.1:{devhub.free_port()}'\n"
        f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{devhub.free_port()}'\n"
        f"c.ConfigurableHTTPProxy.command = [{str(proxy)!r}]\n"
        f"c.JupyterHub.db_url = 'sqlite:///{root}/jupyterhub.sqlite'\n"
        f"c.JupyterHub.cookie_secret_file = '{root}/cookie_secret'\n"
        "c.JupyterHub.cleanup_servers = True\n"
        "c.JupyterHub.spawner_class = 'simple'\n"
        "c.JupyterHub.authenticator_class = 'null'  # users come from the API, with tokens\n"
        f"c.SimpleLocalProcessSpawner.home_dir_template = '{homes}/{{username}}'\n"
        "c.Spawner.default_url = '/lab'\n"
        "c.Spawner.start_timeout = 300\nc.Spawner.http_timeout = 300\n"
        "c.Spawner.args = ['--allow-root'] if os.geteuid() == 0 else []\n"
        f"c.JupyterHub.services = [{{'name': 'driver', 'api_token': {token!r}}}]\n"
        "c.JupyterHub.load_roles = [{'name': 'driver', 'services': ['driver'], 'scopes': "
        "['admin:users', 'admin:servers', 'tokens', 'list:users', 'read:users', "
        "'access:servers']}]\n"
    )
    (root / "cookie_secret").write_text(secrets.token_hex(32))
    os.chmod(root / "cookie_secret", 0o600)
    log = root / "hub.log"
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("jupyterhub")), "-f", str(config)],
        cwd=root,
        env=devhub.child_env(root),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    hub = devhub.DevHub(root, f"http://127.0.0.1:{port}", token, log, config, proc)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if hub.hub("GET", "/users")[0] == 200:
                hub.plain_homes = homes  # type: ignore[attr-defined]
                return hub
        except OSError:
            pass
        time.sleep(0.5)
    hub.stop()
    raise TimeoutError(f"plain hub did not start; see {log}")


def prepare_users(hub: devhub.DevHub, names: list[str], plain: bool) -> dict[str, str]:
    """Users and their tokens; ``plain``: cube-lab's server extension off for them."""
    tokens = {}
    for name in names:
        hub.hub("POST", f"/users/{name}")
        tokens[name] = hub.user_token(name)
        if plain:  # plain JupyterLab: cube-lab's server extension off for this user
            jupyter = hub.plain_homes / name / ".jupyter"  # type: ignore[attr-defined]
            jupyter.mkdir(parents=True, exist_ok=True)
            (jupyter / "jupyter_server_config.json").write_text(
                json.dumps({"ServerApp": {"jpserver_extensions": {"cube_lab": False}}})
            )
    return tokens


async def spawn_to_lab(client: httpx.AsyncClient, name: str, token: str, driver: str) -> float:
    t0 = time.perf_counter()
    resp = await client.post(
        f"/hub/api/users/{name}/server", headers={"Authorization": f"token {driver}"}, json={}
    )
    if resp.status_code not in (201, 202):
        raise RuntimeError(f"spawn {name}: {resp.status_code} {resp.text[:200]}")
    while True:
        page = await client.get(f"/user/{name}/lab", headers={"Authorization": f"token {token}"})
        if page.status_code == 200 and "jupyter-config-data" in page.text:
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > 300:
            raise TimeoutError(f"{name}: no lab page after 300 s")
        await asyncio.sleep(0.1)


async def measure_spawns(hub: devhub.DevHub, plain: bool, single: int, burst: int) -> dict:
    names_single = [f"s{i}" for i in range(single)]
    names_burst = [f"b{i}" for i in range(burst)]
    tokens = prepare_users(hub, names_single + names_burst, plain)
    out: dict[str, list[float]] = {"single": [], "burst": []}
    async with httpx.AsyncClient(base_url=hub.url, timeout=60, follow_redirects=False) as client:
        for name in names_single:
            out["single"].append(await spawn_to_lab(client, name, tokens[name], hub.token))
            hub.stop_server(name)
        if names_burst:
            out["burst"] = list(
                await asyncio.gather(
                    *(spawn_to_lab(client, n, tokens[n], hub.token) for n in names_burst)
                )
            )
    for name in names_burst:
        hub.stop_server(name, timeout=120)
    return out


async def measure_admin_api(hub: devhub.DevHub, concurrency: int, rounds: int) -> dict:
    hub.hub("POST", "/users/bench")
    user_token = hub.user_token("bench")
    hub.admin(
        "POST",
        "groups",
        {
            "name": "bench",
            "users": ["bench"],
            "quota": {"jobs": 100000, "accelerators": {"nvidia.com/gpu": 100000}},
        },
    )
    results: dict[str, list[float]] = {"list groups": [], "admit + release": []}

    async def timed(coro: Any) -> float:
        t0 = time.perf_counter()
        await coro
        return time.perf_counter() - t0

    async with httpx.AsyncClient(base_url=hub.url, timeout=120) as client:
        admin_h = {"Authorization": f"token {hub.token}"}
        user_h = {"Authorization": f"token {user_token}"}

        async def list_groups() -> None:
            r = await client.get("/services/cube-admin/api/groups", headers=admin_h)
            assert r.status_code == 200, r.text

        async def admit_release() -> None:
            body = {"project": "bench", "accelerators": {"nvidia.com/gpu": "1"}}
            r = await client.post("/services/cube-admin/api/admission", headers=user_h, json=body)
            assert r.status_code == 201, r.text
            rid = r.json()["id"]
            r = await client.delete(f"/services/cube-admin/api/admission/{rid}", headers=user_h)
            assert r.status_code == 204, r.text

        for _ in range(rounds):
            results["list groups"] += await asyncio.gather(
                *(timed(list_groups()) for _ in range(concurrency))
            )
            results["admit + release"] += await asyncio.gather(
                *(timed(admit_release()) for _ in range(concurrency))
            )
    return results


def row(label: str, values: list[float]) -> str:
    return (
        f"| {label} | {len(values)} | {statistics.median(values):.2f} | {pct(values, 0.95):.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=5)
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=50, help="0: skip the API figures")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--variants", default="plain,cube-lab", help="plain,plain+ext,cube-lab")
    args = parser.parse_args()
    variants = args.variants.split(",")
    base = Path(tempfile.mkdtemp(prefix="cube-hub-bench-"))
    print(f"# hub spawn benchmark ({platform.node()}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f})\n")  # fmt: skip
    figures: dict[str, dict] = {}
    api: dict[str, list[float]] = {}
    for kind in variants:
        hub = devhub.start(base / kind) if kind == "cube-lab" else start_plain(base / kind)
        try:
            figures[kind] = asyncio.run(
                measure_spawns(hub, kind == "plain", args.single, args.burst)
            )
            if kind == "cube-lab" and args.concurrency:
                api = asyncio.run(measure_admin_api(hub, args.concurrency, args.rounds))
        finally:
            hub.stop()
    print("Spawn to lab page (s), POST server -> GET /user/<u>/lab 200:\n")
    print("| hub, run | n | p50 | p95 |\n|---|---|---|---|")
    for kind in variants:
        print(row(f"{kind}, 1 user at a time", figures[kind]["single"]))
        if figures[kind]["burst"]:
            print(row(f"{kind}, {args.burst} users at once", figures[kind]["burst"]))
    if "plain" in figures and "cube-lab" in figures:
        for run in ("single", "burst"):
            plain, cube = figures["plain"][run], figures["cube-lab"][run]
            if plain and cube:
                p50 = statistics.median(cube) / statistics.median(plain)
                p95 = pct(cube, 0.95) / pct(plain, 0.95)
                print(f"\ncube-lab / plain, {run}: p50 {p50:.2f}, p95 {p95:.2f} (target <= 1.20)")
    if api:
        n, rounds = args.concurrency, args.rounds
        print(f"\ncube-admin API, {n} concurrent requests x {rounds} rounds (ms):\n")
        print("| request | n | p50 | p99 |\n|---|---|---|---|")
        for label, values in api.items():
            print(f"| {label} | {len(values)} | {1000 * statistics.median(values):.0f} | "
                  f"{1000 * pct(values, 0.99):.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
