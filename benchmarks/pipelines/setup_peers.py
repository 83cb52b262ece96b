"""Create the peer venvs for the pipeline benchmark (outside cube-lab's own venv).

- ``benchmarks/.peers/elyra``: Elyra 4.1.1 (``elyra-pipeline run``); 4.5-9 min to install, pulls
  jupyter-ai, langchain, dask, ... which is why it never goes into cube-lab's venv.
- ``benchmarks/.peers/kfp``: the kfp SDK (``kfp.local``); about a minute.

A venv counts as ready when its ``.bench-ready`` marker exists (written after a successful
install and smoke check). Setup times land in ``benchmarks/.peers/setup.json``.

    python benchmarks/pipelines/setup_peers.py [--force] [elyra] [kfp]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PEERS_DIR = Path(__file__).resolve().parents[1] / ".peers"

PEERS = {
    "elyra": {
        "packages": ["elyra==4.1.1"],
        "check": ["bin/elyra-pipeline", "--version"],
    },
    "kfp": {
        "packages": ["kfp==2.17.3"],
        "check": ["bin/python", "-c", "import kfp, kfp.local; print(kfp.__version__)"],
    },
}


def venv_dir(name: str) -> Path:
    return PEERS_DIR / name


def is_ready(name: str) -> bool:
    return (venv_dir(name) / ".bench-ready").exists()


def base_python() -> str:
    """An interpreter that is not inside another venv, to build the peer venvs from."""
    return getattr(sys, "_base_executable", None) or shutil.which("python3") or sys.executable


def setup(name: str, force: bool = False) -> dict:
    target = venv_dir(name)
    if is_ready(name) and not force:
        return json.loads((target / ".bench-ready").read_text())
    if target.exists():
        shutil.rmtree(target)
    spec = PEERS[name]
    print(f"[setup] creating {target} with {' '.join(spec['packages'])} ...", flush=True)
    started = time.perf_counter()
    subprocess.run([base_python(), "-m", "venv", str(target)], check=True)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(
        [str(target / "bin/pip"), "install", "--quiet", *spec["packages"]], check=True, env=env
    )
    seconds = time.perf_counter() - started
    check = subprocess.run(
        [str(target / spec["check"][0]), *spec["check"][1:]],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    record = {
        "peer": name,
        "packages": spec["packages"],
        "setup_s": round(seconds, 1),
        "version": check.stdout.strip().splitlines()[-1] if check.stdout.strip() else "",
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    (target / ".bench-ready").write_text(json.dumps(record))
    summary = PEERS_DIR / "setup.json"
    data = json.loads(summary.read_text()) if summary.exists() else {}
    data[name] = record
    summary.write_text(json.dumps(data, indent=2))
    print(f"[setup] {name} ready in {seconds:.0f} s ({record['version']})", flush=True)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peers", nargs="*", help=f"subset of {', '.join(PEERS)} (default: all)")
    parser.add_argument("--force", action="store_true", help="recreate even if ready")
    args = parser.parse_args()
    unknown = set(args.peers) - set(PEERS)
    if unknown:
        parser.error(f"unknown peer(s): {', '.join(sorted(unknown))}")
    for name in args.peers or list(PEERS):
        print(json.dumps(setup(name, args.force)))


if __name__ == "__main__":
    main()
