"""Side-by-side pipeline benchmark: cube-lab vs Elyra local vs kfp.local.

One command runs every runner on the same freshly generated Elyra-format pipelines and times
the wall clock of each run (subprocess start to exit):

    .venv/bin/python benchmarks/pipelines/run.py [--skip-setup] [--repeat 1] [--write-results]

Pipelines (see ``generate.py``):
  wide   20 Python-script nodes, 4 layers of 5, each sleeping 1 s, each layer depending on the
         whole previous layer (critical path 4 s). cube-lab target: <= 5.0 s.
  chain  200 trivial Python-script nodes in a chain. cube-lab target: <= 25 ms a node.
         kfp.local runs a shorter chain (``--kfp-chain-nodes``, default 20) because it takes
         over a second a node; its figure is compared per node.

Runners:
  cube-lab  ``.venv/bin/cube-lab pipeline run FILE --parallel N``
  elyra     ``benchmarks/.peers/elyra/bin/elyra-pipeline run FILE`` (Elyra 4.1.1 local runtime)
  kfp       ``benchmarks/.peers/kfp/bin/python kfp_run.py FILE`` (kfp.local SubprocessRunner)

The peer venvs live in ``benchmarks/.peers/`` (git-ignored) and are created by
``setup_peers.py`` when missing (unless ``--skip-setup``). Every run gets its own temporary
HOME / JUPYTER_* / IPYTHONDIR / CUBE_LAB_DATA_DIR so nothing touches the real $HOME.
A failing runner prints the tail of its output and the benchmark goes on with the others.
Not a test: pytest never collects it (``testpaths = ["tests"]``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
import setup_peers  # noqa: E402

CUBE_LAB = REPO / ".venv" / "bin" / "cube-lab"
RESULTS = REPO / "benchmarks" / "RESULTS.md"
RUNNERS = ("cube-lab", "elyra", "kfp")
PIPELINES = ("wide", "chain")
TARGETS = {"wide": "<= 5.0 s wall", "chain": "<= 25 ms a node"}
TAIL_CHARS = 3000


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cores": os.cpu_count(),
        "cpu": cpu,
        "os": platform.platform(),
        "python": platform.python_version(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def isolated_env(scratch: Path) -> dict:
    """Environment for one run: temporary HOME and Jupyter/IPython/cube-lab folders."""
    dirs = {
        "HOME": scratch / "home",
        "JUPYTER_CONFIG_DIR": scratch / "jupyter" / "config",
        "JUPYTER_DATA_DIR": scratch / "jupyter" / "data",
        "JUPYTER_RUNTIME_DIR": scratch / "jupyter" / "runtime",
        "IPYTHONDIR": scratch / "ipython",
        "CUBE_LAB_DATA_DIR": scratch / "cube-lab",
        "MPLCONFIGDIR": scratch / "mpl",
        "XDG_CACHE_HOME": scratch / "cache",
        "XDG_CONFIG_HOME": scratch / "config",
        "XDG_DATA_HOME": scratch / "data",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "CUBE_LAB_"))}
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    env.update({k: str(v) for k, v in dirs.items()})
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def command_for(runner: str, pipeline_file: Path, parallel: int) -> list[str]:
    if runner == "cube-lab":
        return [str(CUBE_LAB), "pipeline", "run", str(pipeline_file), "--parallel", str(parallel)]
    if runner == "elyra":
        return [
            str(setup_peers.venv_dir("elyra") / "bin" / "elyra-pipeline"),
            "run",
            str(pipeline_file),
        ]
    if runner == "kfp":
        python = setup_peers.venv_dir("kfp") / "bin" / "python"
        return [str(python), str(HERE / "kfp_run.py"), str(pipeline_file)]
    raise ValueError(runner)


def runner_env(runner: str, env: dict) -> dict:
    """Put the runner's own venv first on PATH (its nodes start `python3` from there)."""
    if runner == "cube-lab":
        bin_dir = REPO / ".venv" / "bin"
    else:
        bin_dir = setup_peers.venv_dir(runner) / "bin"
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}


def cube_lab_available() -> tuple[bool, str]:
    if not CUBE_LAB.exists():
        return False, f"{CUBE_LAB} does not exist"
    try:
        proc = subprocess.run(
            [str(CUBE_LAB), "pipeline", "run", "--help"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    if proc.returncode != 0:
        return False, (proc.stderr or proc.stdout).strip()[-500:]
    return True, ""


def generate_pipeline(shape: str, out_dir: Path, chain_nodes: int) -> tuple[Path, int]:
    if shape == "wide":
        return generate.generate_wide(out_dir)
    return generate.generate_chain(out_dir, chain_nodes)


def run_once(runner: str, shape: str, nodes: int, parallel: int, timeout: float) -> dict:
    """Generate the pipeline into a fresh temp dir, run it, return the measurement."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{shape}-{runner}-") as tmp:
        tmp_path = Path(tmp)
        pipeline_file, count = generate_pipeline(shape, tmp_path / "pipeline", nodes)
        env = runner_env(runner, isolated_env(tmp_path / "scratch"))
        cmd = command_for(runner, pipeline_file, parallel)
        log_path = tmp_path / "output.log"
        load_before = round(os.getloadavg()[0], 2)
        with log_path.open("wb") as log:
            started = time.perf_counter()
            try:
                proc = subprocess.run(
                    cmd,
                    cwd=pipeline_file.parent,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=timeout,
                )
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            except OSError as exc:
                log.write(f"\n{exc}\n".encode())
                rc = "oserror"
            wall = time.perf_counter() - started
        output = log_path.read_text(errors="replace")
    result = {"runner": runner, "pipeline": shape, "nodes": count, "wall_s": round(wall, 3)}
    result["load_before"] = load_before
    result["ok"] = rc == 0
    if not result["ok"]:
        result["error"] = f"exit {rc}"
        result["tail"] = output[-TAIL_CHARS:]
    return result


def summarise(runs: list[dict]) -> list[dict]:
    """One row per (pipeline, runner): median wall of the successful repeats."""
    rows = []
    for shape in PIPELINES:
        for runner in RUNNERS:
            mine = [r for r in runs if r["pipeline"] == shape and r["runner"] == runner]
            if not mine:
                continue
            good = [r for r in mine if r["ok"]]
            row = {"pipeline": shape, "runner": runner, "nodes": mine[0]["nodes"]}
            row["repeats"] = len(mine)
            if good:
                wall = statistics.median(r["wall_s"] for r in good)
                row["wall_s"] = round(wall, 3)
                row["per_node_ms"] = round(1000 * wall / row["nodes"], 1)
            else:
                row["error"] = mine[-1].get("error", "failed")
            if mine[-1].get("note"):
                row["note"] = mine[-1]["note"]
            rows.append(row)
    for shape in PIPELINES:
        base = next((r for r in rows if r["pipeline"] == shape and r["runner"] == "cube-lab"), None)
        for row in rows:
            if row["pipeline"] != shape or "per_node_ms" not in row:
                continue
            if base and "per_node_ms" in base and base["per_node_ms"] > 0:
                # per-node ratio (= wall ratio when both ran the same number of nodes)
                row["ratio_vs_cube_lab"] = round(row["per_node_ms"] / base["per_node_ms"], 2)
    return rows


def format_table(rows: list[dict]) -> str:
    header = ("pipeline", "runner", "nodes", "wall s", "per-node ms", "vs cube-lab")
    lines = [header]
    for row in rows:
        ratio = row.get("ratio_vs_cube_lab")
        lines.append(
            (
                row["pipeline"],
                row["runner"],
                str(row["nodes"]),
                f"{row['wall_s']:.2f}" if "wall_s" in row else "FAILED",
                f"{row['per_node_ms']:.1f}" if "per_node_ms" in row else "-",
                f"{ratio:.2f}x" if ratio is not None else "-",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for index, line in enumerate(lines):
        out.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)))
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def markdown_section(report: dict) -> str:
    m = report["machine"]
    rows = report["rows"]
    lines = [
        "## Pipelines",
        "",
        "Side-by-side local pipeline runs (issue 3, Speed): cube-lab's runner vs Elyra 4.1.1's "
        "local runtime (`elyra-pipeline run`) vs `kfp.local` (SubprocessRunner), all on the same "
        "generated Elyra-format pipelines (Python-script nodes; scripts beside the `.pipeline` "
        "file). Wall clock = subprocess start to exit, median of "
        f"{report['repeat']} run(s).",
        "",
        f"- Date: {m['date']}",
        f"- Machine: {m['cores']} cores, {m['cpu']}, {m['os']}, Python {m['python']}",
        f"- Command: `{report['command']}`",
        f"- cube-lab ran with `--parallel {report['parallel']}`; Elyra and kfp.local have no "
        "parallel option for local runs (both run one node at a time).",
        f"- kfp.local ran the chain with {report['kfp_chain_nodes']} nodes (over a second a "
        "node); its ratio is per node. It runs with `SubprocessRunner(use_venv=False)` and "
        "kfp's default lightweight component, which `pip install`s kfp before every task.",
        "- Ratio = peer time per node / cube-lab time per node (= wall ratio for equal node "
        "counts); above 1 means cube-lab is faster.",
        "",
        "| pipeline | runner | nodes | wall s | per-node ms | peer / cube-lab | target |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        ratio = row.get("ratio_vs_cube_lab")
        wall = f"{row['wall_s']:.2f}" if "wall_s" in row else f"failed ({row.get('error')})"
        per_node = f"{row['per_node_ms']:.1f}" if "per_node_ms" in row else "-"
        target = TARGETS[row["pipeline"]] if row["runner"] == "cube-lab" else ""
        lines.append(
            f"| {row['pipeline']} | {row['runner']} | {row['nodes']} | {wall} | {per_node} | "
            f"{f'{ratio:.2f}x' if ratio is not None else '-'} | {target} |"
        )
    notes = report.get("notes") or []
    if notes:
        lines += ["", *[f"- {note}" for note in notes]]
    setup = report.get("setup") or {}
    if setup:
        parts = [f"{name} {rec.get('setup_s', '?')} s" for name, rec in setup.items()]
        lines += [
            "",
            "Peer venvs: `benchmarks/.peers/{elyra,kfp}` (git-ignored), created by "
            "`benchmarks/pipelines/setup_peers.py` when missing; setup took "
            + ", ".join(parts)
            + ".",
        ]
    return "\n".join(lines) + "\n"


def write_results(section: str) -> None:
    """Replace (or append) the `## Pipelines` section of benchmarks/RESULTS.md."""
    if RESULTS.exists():
        text = RESULTS.read_text()
    else:
        text = (
            "# cube-lab benchmark results\n\nFigures measured with the scripts in `benchmarks/`.\n"
        )
    pattern = re.compile(r"^## Pipelines\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text, count=1).rstrip("\n") + "\n"
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--skip-setup", action="store_true", help="never create peer venvs")
    parser.add_argument("--repeat", type=int, default=1, help="runs per (pipeline, runner)")
    parser.add_argument("--runners", default=",".join(RUNNERS), help="comma list")
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help="comma list")
    parser.add_argument("--chain-nodes", type=int, default=200)
    parser.add_argument("--kfp-chain-nodes", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=5, help="cube-lab --parallel")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    args = parser.parse_args()

    runners = [r for r in args.runners.split(",") if r]
    shapes = [p for p in args.pipelines.split(",") if p]
    bad = (set(runners) - set(RUNNERS)) | (set(shapes) - set(PIPELINES))
    if bad:
        parser.error(f"unknown runner/pipeline: {', '.join(sorted(bad))}")

    info = machine()
    print(
        f"machine: {info['cores']} cores, {info['cpu']}, {info['os']}, {info['date']}, "
        f"load average {info['load_avg']}"
    )
    notes: list[str] = []
    available = {}
    setup = {}
    for runner in runners:
        if runner == "cube-lab":
            ok, why = cube_lab_available()
            available[runner] = ok
            if not ok:
                notes.append(f"cube-lab skipped: `cube-lab pipeline run --help` failed: {why}")
            continue
        if not setup_peers.is_ready(runner) and not args.skip_setup:
            try:
                setup_peers.setup(runner)
            except (subprocess.CalledProcessError, OSError) as exc:
                notes.append(f"{runner} setup failed: {exc}")
        available[runner] = setup_peers.is_ready(runner)
        if available[runner]:
            marker = setup_peers.venv_dir(runner) / ".bench-ready"
            setup[runner] = json.loads(marker.read_text())
        elif not any(n.startswith(f"{runner} setup") for n in notes):
            notes.append(f"{runner} skipped: venv missing (run without --skip-setup)")
    for note in notes:
        print(f"note: {note}")

    runs: list[dict] = []
    for shape in shapes:
        for runner in runners:
            if not available.get(runner):
                runs.append(
                    {
                        "runner": runner,
                        "pipeline": shape,
                        "nodes": 0,
                        "ok": False,
                        "error": "unavailable",
                    }
                )
                continue
            nodes = args.chain_nodes
            if shape == "chain" and runner == "kfp":
                nodes = args.kfp_chain_nodes
            for attempt in range(args.repeat):
                print(
                    f"running {shape} with {runner} ({attempt + 1}/{args.repeat}) ...", flush=True
                )
                result = run_once(runner, shape, nodes, args.parallel, args.timeout)
                runs.append(result)
                if result["ok"]:
                    load = result["load_before"]
                    print(f"  {result['wall_s']:.2f} s (load average before: {load})", flush=True)
                else:
                    print(f"  FAILED ({result['error']}); output tail:", flush=True)
                    for line in result["tail"].splitlines()[-40:]:
                        print(f"    | {line}")

    busy = [r for r in runs if r.get("load_before", 0) > 0.5 * (info["cores"] or 1)]
    if busy:
        worst = max(r["load_before"] for r in busy)
        notes.append(
            f"{len(busy)} of {len(runs)} runs started with a 1-min load average above half the "
            f"core count (up to {worst}); other work on the machine slows every runner."
        )
        print(f"note: {notes[-1]}")
    for run in runs:
        if run["runner"] == "kfp" and run["pipeline"] == "chain" and run.get("ok"):
            run["note"] = f"shorter chain ({run['nodes']} nodes); compare per node"
    rows = summarise(runs)
    print()
    print(format_table(rows))
    if any(r["runner"] == "kfp" and r["pipeline"] == "chain" for r in rows):
        print(
            f"(kfp.local ran the chain with {args.kfp_chain_nodes} nodes, not "
            f"{args.chain_nodes}; its ratio is per node. Ratio = peer / cube-lab per node.)"
        )
    report = {
        "benchmark": "pipelines",
        "machine": info,
        "command": " ".join(["python", "benchmarks/pipelines/run.py", *sys.argv[1:]]),
        "repeat": args.repeat,
        "parallel": args.parallel,
        "chain_nodes": args.chain_nodes,
        "kfp_chain_nodes": args.kfp_chain_nodes,
        "rows": rows,
        "runs": [{k: v for k, v in r.items() if k != "tail"} for r in runs],
        "setup": setup,
        "notes": notes,
    }
    print("BENCH_JSON " + json.dumps(report, separators=(",", ":")))
    if args.write_results:
        write_results(markdown_section(report))
        print(f"wrote the Pipelines section of {RESULTS.relative_to(REPO)}")
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
