"""The local runner on real subprocesses: parallelism, retries, timeouts, cancellation,
partial runs, cache, values, outputs, notebooks, and crash recovery."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from pipeline_util import node, script, write_pipeline

from cube_lab.errors import Conflict, InvalidInput, NotFound
from cube_lab.identity import Caller
from cube_lab.pipelines.validation import PipelineInvalid

ALICE = Caller("alice")
STAMP = "import json, os, sys, time\n"


def run(ws: Any, path: Path, **kwargs: Any) -> tuple[str, Any]:
    runner, recorder = ws.pipelines.prepare(ALICE, path, path.parent, **kwargs)
    status = ws.pipelines.run_foreground(runner, recorder)
    return status, ws.pipelines.get_run(ALICE, runner.plan.run_id)


def by_id(view: Any) -> dict[str, Any]:
    return {n.id: n for n in view.nodes}


def test_independent_nodes_overlap_and_layers_wait(ws: Any, tmp_path: Path) -> None:
    code = STAMP + "t = time.time(); time.sleep(0.6); print(t, time.time())\n"
    nodes = [node(f"a{i}", filename=script(tmp_path, f"a{i}.py", code)) for i in range(3)]
    nodes.append(node("b", upstream=("a0", "a1", "a2"), filename=script(tmp_path, "b.py", code)))
    started = time.monotonic()
    status, view = run(ws, write_pipeline(tmp_path, nodes), parallelism=3)
    elapsed = time.monotonic() - started
    assert status == "succeeded" and view.status == "succeeded"
    nodes_by_id = by_id(view)
    spans = {}
    for nid in nodes_by_id:
        log = ws.pipelines.tail_log(ALICE, view.id, nid).text.split()
        spans[nid] = (float(log[0]), float(log[1]))
    a_starts = [spans[f"a{i}"][0] for i in range(3)]
    a_ends = [spans[f"a{i}"][1] for i in range(3)]
    assert max(a_starts) < min(a_ends), "the three independent nodes must overlap"
    assert spans["b"][0] >= max(a_ends), "b starts only after all its inputs end"
    assert elapsed < 3.0, f"two layers of 0.6 s took {elapsed:.2f} s"


def test_parallelism_limit_is_respected(ws: Any, tmp_path: Path) -> None:
    code = STAMP + "t = time.time(); time.sleep(0.4); print(t, time.time())\n"
    nodes = [node(f"n{i}", filename=script(tmp_path, f"n{i}.py", code)) for i in range(4)]
    assert run(ws, write_pipeline(tmp_path, nodes), parallelism=2)[0] == "succeeded"
    view = ws.pipelines.get_run(ALICE, ws.pipelines.list_runs(ALICE, limit=1)[0].id)
    spans = sorted(
        tuple(map(float, ws.pipelines.tail_log(ALICE, view.id, n.id).text.split()))
        for n in view.nodes
    )
    for t, _ in spans:  # at no start time are more than 2 nodes running
        assert sum(1 for s, e in spans if s <= t < e) <= 2


def test_retries_with_backoff_then_success(ws: Any, tmp_path: Path) -> None:
    code = STAMP + (
        "p = 'count.txt'\nn = int(open(p).read()) if os.path.exists(p) else 0\n"
        "open(p, 'w').write(str(n + 1))\nsys.exit(0 if n >= 2 else 3)\n"
    )
    path = write_pipeline(
        tmp_path,
        [
            node(
                "flaky",
                filename=script(tmp_path, "f.py", code),
                cube={"retries": 3, "retry_backoff_s": 0.05},
            )
        ],
    )
    status, view = run(ws, path)
    flaky = by_id(view)["flaky"]
    assert status == "succeeded" and flaky.attempts == 3 and flaky.exit_code == 0
    log = ws.pipelines.tail_log(ALICE, view.id, "flaky").text
    assert "attempt 1 failed (exit code 3); retrying" in log and "--- attempt 3 ---" in log


def test_failure_skips_downstream_but_not_independent_branches(ws: Any, tmp_path: Path) -> None:
    nodes = [
        node("bad", filename=script(tmp_path, "bad.py", "raise SystemExit('boom')\n")),
        node("after", upstream=("bad",), filename=script(tmp_path, "ok.py", "pass\n")),
        node("other", filename="ok.py"),
    ]
    status, view = run(ws, write_pipeline(tmp_path, nodes))
    nodes_by_id = by_id(view)
    assert status == "failed" and "bad" in view.error
    assert nodes_by_id["bad"].status == "failed" and nodes_by_id["bad"].exit_code == 1
    assert nodes_by_id["after"].status == "skipped" and nodes_by_id["other"].status == "succeeded"
    assert "boom" in ws.pipelines.tail_log(ALICE, view.id, "bad").text


def test_timeout_kills_the_node(ws: Any, tmp_path: Path) -> None:
    path = write_pipeline(
        tmp_path,
        [
            node(
                "slow",
                filename=script(tmp_path, "slow.py", "import time; time.sleep(30)\n"),
                cube={"timeout_s": 0.5},
            )
        ],
    )
    started = time.monotonic()
    status, view = run(ws, path)
    assert status == "failed" and time.monotonic() - started < 10
    assert by_id(view)["slow"].error == "timed out after 0.5 s"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = (
        Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}").exists() else "X"
    )
    return state != "Z"


def test_cancel_kills_every_process_of_every_node(ws: Any, tmp_path: Path) -> None:
    # Each node starts a grandchild that would outlive a plain kill of the node.
    code = STAMP + (
        "import subprocess\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "me = os.environ['CUBE_NODE_ID']\n"
        "open(f'pid-{me}', 'w').write(f'{os.getpid()} {child.pid}')\n"
        "time.sleep(60)\n"
    )
    nodes = [node(f"n{i}", filename=script(tmp_path, f"n{i}.py", code)) for i in range(2)]
    nodes.append(node("later", upstream=("n0",), filename=script(tmp_path, "l.py", "pass\n")))
    runner, recorder = ws.pipelines.prepare(ALICE, write_pipeline(tmp_path, nodes), tmp_path)

    async def go() -> str:
        task = asyncio.create_task(ws.pipelines.execute(runner, recorder))
        while len(list(tmp_path.glob("pid-*"))) < 2:
            await asyncio.sleep(0.05)
        runner.cancel()
        return await task

    assert asyncio.run(go()) == "cancelled"
    pids = [int(p) for f in tmp_path.glob("pid-*") for p in f.read_text().split()]
    deadline = time.time() + 5
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)], "processes left behind after cancel"
    view = ws.pipelines.get_run(ALICE, runner.plan.run_id)
    assert view.status == "cancelled"
    assert {n.id: n.status for n in view.nodes} == {
        "n0": "cancelled",
        "n1": "cancelled",
        "later": "cancelled",
    }


def test_values_and_outputs_flow_downstream(ws: Any, tmp_path: Path) -> None:
    produce = STAMP + (
        "open('data.csv', 'w').write('x\\n1\\n2\\n')\n"
        "values = open(os.environ['CUBE_VALUES_FILE'], 'w')\n"
        "json.dump({'rows': 2, 'name': 'iris'}, values)\n"
    )
    consume = STAMP + (
        "print('rows', os.environ['ROWS'], 'lines', len(open('data.csv').readlines()))\n"
    )
    nodes = [
        node("produce", filename=script(tmp_path, "p.py", produce), outputs=["data.csv"]),
        node(
            "consume",
            upstream=("produce",),
            filename=script(tmp_path, "c.py", consume),
            env_vars=[{"env_var": "ROWS", "value": "{{ nodes.produce.values.rows }}"}],
        ),
    ]
    status, view = run(ws, write_pipeline(tmp_path, nodes))
    assert status == "succeeded", view.error
    assert by_id(view)["produce"].values == {"rows": 2, "name": "iris"}
    assert "rows 2 lines 3" in ws.pipelines.tail_log(ALICE, view.id, "consume").text
    results = ws.pipelines.results(ALICE, view.id, "produce")
    assert [(r.name, r.kind) for r in results] == [("0-data.csv", "table"), ("values.json", "json")]


def test_missing_declared_output_fails_the_node(ws: Any, tmp_path: Path) -> None:
    path = write_pipeline(
        tmp_path, [node("n", filename=script(tmp_path, "n.py", "pass\n"), outputs=["model.pkl"])]
    )
    status, view = run(ws, path)
    assert status == "failed" and "declared outputs not produced" in by_id(view)["n"].error


def test_pipeline_parameters_reach_nodes(ws: Any, tmp_path: Path) -> None:
    code = STAMP + "print('lr=' + os.environ['lr'])\n"
    params = [{"name": "lr", "default_value": {"type": "Float", "value": 0.1}, "required": True}]
    path = write_pipeline(
        tmp_path,
        [node("n", filename=script(tmp_path, "n.py", code), pipeline_parameters=["lr"])],
        parameters=params,
    )
    _, view = run(ws, path, params={"lr": "0.5"})
    assert "lr=0.5" in ws.pipelines.tail_log(ALICE, view.id, "n").text
    with pytest.raises(InvalidInput, match="must be Float"):
        run(ws, path, params={"lr": "fast"})
    with pytest.raises(InvalidInput, match="unknown pipeline parameters"):
        run(ws, path, params={"epochs": "3"})


def _counting_pipeline(tmp_path: Path) -> Path:
    counter = STAMP + (
        "name = os.environ['CUBE_NODE_ID']\n"
        "open(f'ran-{name}.log', 'a').write('x')\n"
        "open(f'{name}.out', 'w').write(open('seed.txt').read() + name)\n"
    )
    (tmp_path / "seed.txt").write_text("seed-")
    script(tmp_path, "step.py", counter)
    return write_pipeline(
        tmp_path,
        [
            node("a", filename="step.py", outputs=["a.out"], dependencies=["seed.txt"]),
            node("b", upstream=("a",), filename="step.py", outputs=["b.out"]),
            node("c", upstream=("b",), filename="step.py", outputs=["c.out"]),
        ],
    )


def runs_of(tmp_path: Path, name: str) -> int:
    log = tmp_path / f"ran-{name}.log"
    return len(log.read_text()) if log.exists() else 0


def test_partial_runs_reuse_upstream_outputs(ws: Any, tmp_path: Path) -> None:
    path = _counting_pipeline(tmp_path)
    with pytest.raises(Conflict, match="no successful run to reuse"):
        run(ws, path, only="b")
    assert run(ws, path)[0] == "succeeded"
    (tmp_path / "a.out").unlink()  # a partial run puts upstream outputs back
    status, view = run(ws, path, only="b")
    states = {n.id: n.status for n in view.nodes}
    assert status == "succeeded" and states == {"a": "reused", "b": "succeeded", "c": "skipped"}
    assert (tmp_path / "a.out").read_text() == "seed-a"
    assert [runs_of(tmp_path, n) for n in "abc"] == [1, 2, 1]
    status, view = run(ws, path, from_node="b")
    assert {n.id: n.status for n in view.nodes} == {
        "a": "reused",
        "b": "succeeded",
        "c": "succeeded",
    }
    assert [runs_of(tmp_path, n) for n in "abc"] == [1, 3, 2]


def test_cache_skips_unchanged_nodes_and_reruns_changed_ones(ws: Any, tmp_path: Path) -> None:
    path = _counting_pipeline(tmp_path)
    assert run(ws, path, cache=True)[0] == "succeeded"
    status, view = run(ws, path, cache=True)
    assert status == "succeeded" and {n.status for n in view.nodes} == {"cached"}
    assert [runs_of(tmp_path, n) for n in "abc"] == [1, 1, 1]
    (tmp_path / "seed.txt").write_text("changed-")  # a's dependency changed: all rerun
    status, view = run(ws, path, cache=True)
    assert {n.status for n in view.nodes} == {"succeeded"}
    assert (tmp_path / "c.out").read_text() == "changed-c"
    assert run(ws, path)[1].nodes[0].status == "succeeded"  # without --cache nothing is skipped


def test_notebook_runs_into_a_copy_with_parameters(ws: Any, tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    params_cell = nbformat.v4.new_code_cell("alpha = 1")
    params_cell.metadata["tags"] = ["parameters"]
    nb.cells = [
        params_cell,
        nbformat.v4.new_code_cell(
            "open('nb-out.txt', 'w').write(str(alpha * 10))\nprint('alpha is', alpha)"
        ),
    ]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, tmp_path / "train.ipynb")
    before = (tmp_path / "train.ipynb").read_bytes()
    path = write_pipeline(
        tmp_path,
        [
            node(
                "nb",
                "execute-notebook-node",
                filename="train.ipynb",
                outputs=["nb-out.txt"],
                cube={"parameters": {"alpha": 7}},
            )
        ],
    )
    status, view = run(ws, path)
    assert status == "succeeded", ws.pipelines.tail_log(ALICE, view.id, "nb").text
    assert (tmp_path / "train.ipynb").read_bytes() == before, "the original must not change"
    assert (tmp_path / "nb-out.txt").read_text() == "70"
    kinds = {r.name: r.kind for r in ws.pipelines.results(ALICE, view.id, "nb")}
    assert kinds["train.ipynb"] == "notebook"


def test_validation_errors_name_node_and_field(ws: Any, tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("pass\n")
    nodes = [
        node("a", filename="ok.py"),
        node("a", filename="ok.py"),
        node("b", upstream=("ghost",), filename="missing.py"),
        node("c", upstream=("d",), filename="/etc/passwd"),
        node("d", upstream=("c",), filename="../outside.py"),
        node("e", "execute-spark-node"),
        node("f", "cube-lab:template", template="no-such-template"),
        node("g", filename="ok.py", cube={"retries": -1}),
    ]
    with pytest.raises(PipelineInvalid) as err:
        run(ws, write_pipeline(tmp_path, nodes))
    found = {
        (p.node_id, p.field, p.message.split(";")[0].split(":")[0]) for p in err.value.problems
    }
    assert ("a", "id", "duplicate node id") in found
    assert ("b", "inputs", "link from unknown node 'ghost'") in found
    assert ("b", "filename", "file 'missing.py' not found") in found
    assert ("c", "filename", "'/etc/passwd' is an absolute path") in found
    assert ("d", "filename", "'../outside.py' points outside the project") in found
    assert ("e", "op", "unknown node type 'execute-spark-node'") in found
    assert any(
        p.node_id == "f" and "no job template named" in p.message for p in err.value.problems
    )
    assert ("g", "retries", "must be a number >= 0") in found
    assert any(p.field == "inputs" and p.message.startswith("cycle: ") for p in err.value.problems)


def test_killed_runner_leaves_an_interrupted_run(ws: Any, tmp_path: Path) -> None:
    script(tmp_path, "slow.py", "import time; time.sleep(60)\n")
    path = write_pipeline(tmp_path, [node("slow", filename="slow.py")])
    env = {**os.environ, "CUBE_LAB_DATA_DIR": str(ws.settings.data_dir), "CUBE_LAB_USER": "alice"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cube_lab.cli", "pipeline", "run", str(path)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    run_id = first.split()[1].rstrip(":")
    deadline = time.time() + 30

    def status() -> str | None:  # the CLI writes the record while its first nodes start
        try:
            return str(ws.pipelines.get_run(ALICE, run_id).status)
        except NotFound:
            return None

    while status() != "running" and time.time() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)  # a crash: no chance to record anything
    proc.wait()
    assert ws.pipelines.get_run(ALICE, run_id).status == "running"
    assert ws.pipelines.recover() == [run_id]  # what a server does when it starts
    view = ws.pipelines.get_run(ALICE, run_id)
    assert view.status == "interrupted" and by_id(view)["slow"].status == "interrupted"
