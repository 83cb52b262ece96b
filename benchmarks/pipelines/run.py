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


def python_label() -> str:
    """How the command was started, e.g. `.venv/bin/python`, for the report."""
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(REPO))
    except ValueError:
        return exe.name


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


INTRO = """\
Side-by-side local runs of the same generated Elyra-format pipelines (Python-script nodes,
scripts beside the `.pipeline` file): cube-lab's runner (`cube-lab pipeline run`) vs Elyra
4.1.1's local runtime (`elyra-pipeline run`) vs `kfp.local` (SubprocessRunner,
`use_venv=False`, kfp's default lightweight component, which `pip install`s kfp before every
task). Wall clock = subprocess start to exit, each run in a fresh temp folder with its own
HOME/Jupyter dirs. Ratio = peer time per node / cube-lab time per node (the wall ratio when
both ran the same number of nodes); above 1 means cube-lab is faster. Elyra and kfp.local run
one node at a time. kfp.local runs a shorter chain (over a second a node) and is compared per
node. Targets (issue 3): wide <= 5.0 s, chain <= 25 ms a node.

Command: `.venv/bin/python benchmarks/pipelines/run.py [--skip-setup] [--repeat N]
[--write-results]`. Peer venvs: `benchmarks/.peers/{elyra,kfp}` (git-ignored), created by
`benchmarks/pipelines/setup_peers.py` when missing. Newest run first.
"""


def markdown_block(report: dict) -> str:
    """One `###` block for a benchmark run: machine, command, table, notes."""
    m = report["machine"]
    load = ", ".join(f"{x:g}" for x in m["load_avg"])
    lines = [
        f"### {m['date']}",
        "",
        f"- Machine: {m['cores']} cores, {m['cpu']}, {m['os']}, Python {m['python']}; "
        f"load average at start {load}",
        f"- Command: `{report['command']}` (median of {report['repeat']} run(s); cube-lab "
        f"`--parallel {report['parallel']}`)",
    ]
    setup = report.get("setup") or {}
    if setup:
        parts = [f"{name} {rec.get('setup_s', '?')} s" for name, rec in setup.items()]
        lines.append("- Peer venv setup (one-off): " + ", ".join(parts))
    lines += [
        "",
        "| pipeline | runner | nodes | wall s | per-node ms | peer / cube-lab | target |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row in report["rows"]:
        ratio = row.get("ratio_vs_cube_lab")
        wall = f"{row['wall_s']:.2f}" if "wall_s" in row else f"failed ({row.get('error')})"
        per_node = f"{row['per_node_ms']:.1f}" if "per_node_ms" in row else "-"
        target = ""
        if row["runner"] == "cube-lab" and "wall_s" in row:
            met = row["wall_s"] <= 5.0 if row["pipeline"] == "wide" else row["per_node_ms"] <= 25.0
            target = f"{TARGETS[row['pipeline']]}: {'met' if met else 'NOT met'}"
        ratio_text = f"{ratio:.2f}x" if ratio is not None and row["runner"] != "cube-lab" else ""
        lines.append(
            f"| {row['pipeline']} | {row['runner']} | {row['nodes']} | {wall} | {per_node} | "
            f"{ratio_text} | {target} |"
        )
    notes = report.get("notes") or []
    if notes:
        lines += ["", *[f"- {note}" for note in notes]]
    return "\n".join(lines) + "\n"


def write_results(block: str, keep: int = 6) -> None:
    """Put `block` first in the `## Pipelines` section of RESULTS.md, keeping older blocks."""
    if RESULTS.exists():
        text = RESULTS.read_text()
    else:
        text = "# Benchmark results\n\nFigures measured with the scripts in `benchmarks/`.\n"
    pattern = re.compile(r"^## Pipelines\n.*?(?=^## |\Z)", re.S | re.M)
    found = pattern.search(text)
    old_blocks: list[str] = []
    if found:
        body = found.group(0)
        first = body.find("\n### ")
        if first != -1:
            old_blocks = [
                "### " + b.strip() + "\n" for b in body[first + 1 :].split("### ") if b.strip()
            ]
    blocks = [block, *old_blocks][:keep]
    section = "## Pipelines\n\n" + INTRO + "\n" + "\n".join(blocks)
    if found:
        text = text[: found.start()] + section + "\n" + text[found.end() :]
        text = text.rstrip("\n") + "\n"
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
    for runner in runners:
        if not available.get(runner):
            for shape in shapes:
                runs.append(
                    {"runner": runner, "pipeline": shape, "nodes": 0, "ok": False}
                    | {"error": "unavailable"}
                )
    # Repeats outermost and runners interleaved, so background load hits all runners alike.
    for attempt in range(args.repeat):
        for shape in shapes:
            for runner in runners:
                if not available.get(runner):
                    continue
                nodes = args.chain_nodes
                if shape == "chain" and runner == "kfp":
                    nodes = args.kfp_chain_nodes
                label = f"{shape} with {runner} ({attempt + 1}/{args.repeat})"
                print(f"running {label} ...", flush=True)
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
        "command": " ".join([python_label(), "benchmarks/pipelines/run.py", *sys.argv[1:]]),
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
        write_results(markdown_block(report))
        print(f"wrote the Pipelines section of {RESULTS.relative_to(REPO)}")
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
