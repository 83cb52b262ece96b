"""The Python SDK (``import cube_lab as cl``): models and pipeline runs, in this process (the
embedded shape) and through ``cl.connect`` against a real second server, with the same answers
and the same error text in both."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_util import REPO, run_in_kernel
from pipeline_util import node, script, write_pipeline
from server_util import TOKEN, free_port, start_server, wait_up

import cube_lab as cl
from cube_lab import sdk
from cube_lab.errors import CubeError, InvalidInput, NotFound
from cube_lab.sdk.pipelines import WaitTimeout
from cube_lab.workspace import default_workspace

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def local(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The embedded shape: this process opens the store of the test's own data dir."""
    root = isolated_env / "root"
    root.mkdir()
    monkeypatch.setenv("CUBE_LAB_USER", "alice")
    monkeypatch.chdir(root)
    sdk.disconnect()
    default_workspace.cache_clear()
    yield root
    if sdk.current().kind == "local":
        default_workspace().close()
    sdk.disconnect()
    default_workspace.cache_clear()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real ``jupyter server`` with cube-lab (as alice, its own store): (URL, root)."""
    root, data = tmp_path / "server-root", tmp_path / "server-data"
    root.mkdir()
    port = free_port()
    proc = start_server(root, data, port, tmp_path)
    try:
        wait_up(port)
        yield f"http://127.0.0.1:{port}/", root
    finally:
        sdk.disconnect()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _connect(server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    url, root = server
    monkeypatch.chdir(root)
    transport = cl.connect(url, token=TOKEN, root=root)
    assert transport.kind == "rest" and sdk.current() is transport
    return root


def _model() -> Any:
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(max_depth=2).fit([[0, 0], [1, 1], [0, 1], [1, 0]], [0, 1, 0, 1])


def _models_roundtrip(root: Path) -> dict[str, Any]:
    """Register an object and a file, list, get by version / alias / latest, download."""
    first = cl.models.register(_model(), "iris", metrics={"accuracy": 0.9}, aliases=["prod"])
    assert (first.name, first.version, first.flavor) == ("iris", 1, "sklearn")
    assert first.metrics == {"accuracy": 0.9}
    assert "iris:1" in repr(first) and "accuracy=0.9" in repr(first) and "@prod" in repr(first)
    (root / "weights.txt").write_text("w=1\n")
    second = cl.models.register("weights.txt", "iris", params={"depth": 2}, flavor="pyfunc")
    assert second.version == 2 and second.params == {"depth": 2}

    listed = cl.models.list()
    assert [(m["name"], m["latest_version"], m["version_count"]) for m in listed] == [
        ("iris", 2, 2)
    ]
    assert cl.models.list(q="nothing-like-it") == []
    assert cl.models.get("iris").version == 2
    assert cl.models.get("iris:1") == first
    assert cl.models.get("iris@prod").version == 1

    out = root / "out"
    out.mkdir()
    written = second.download(out)
    assert written.parent == out and written.read_text() == "w=1\n"
    as_named = cl.models.get("iris:2").download(root / "exact.txt")
    assert as_named == root / "exact.txt" and as_named.read_text() == "w=1\n"
    got = first.download(root / "first")  # the pickled tree comes back and predicts
    artifact = got if got.is_file() else next(p for p in got.rglob("*") if p.is_file())
    assert artifact.stat().st_size > 0

    with pytest.raises(NotFound) as missing:
        cl.models.get("iris:7")
    with pytest.raises(InvalidInput):
        cl.models.get("iris:")
    return {
        "versions": [
            {k: v for k, v in m.data.items() if k not in skip}
            | {"lineage_source": m.lineage.get("source")}
            for m, skip in (
                # a pickle's bytes differ between processes; the text file's do not
                (
                    cl.models.get("iris:1"),
                    ("id", "created_at", "lineage", "checksum", "size_bytes"),
                ),
                (cl.models.get("iris:2"), ("id", "created_at", "lineage")),
            )
        ],
        "list": [
            {k: m[k] for k in ("name", "latest_version", "flavor", "aliases")} for m in listed
        ],
        "error": missing.value.to_json(),
    }


def _pipelines_roundtrip(root: Path) -> dict[str, Any]:
    """A two-node run succeeds; a failing one ends failed with its node's log reachable."""
    a = script(root, "a.py", "print('hello from a')\n")
    b = script(root, "b.py", "print('b after a')\n")
    ok = write_pipeline(root, [node("a", filename=a), node("b", upstream=("a",), filename=b)])
    run = cl.pipelines.run(ok)
    assert run.status in ("queued", "running", "succeeded") and run.id
    assert run.wait(timeout=120) is run
    assert run.status == "succeeded", run.data
    assert [(n["label"], n["status"]) for n in run.nodes] == [
        ("a", "succeeded"),
        ("b", "succeeded"),
    ]
    assert "hello from a" in run.logs("a")
    assert run.url is None

    bad = script(root, "bad.py", "print('about to fail')\nraise SystemExit('boom')\n")
    failing = write_pipeline(root, [node("bad", filename=bad)], filename="bad.pipeline")
    broken = cl.pipelines.run(failing).wait(timeout=120)
    assert broken.status == "failed"
    (failed,) = [n for n in broken.nodes if n["status"] == "failed"]
    assert failed["label"] == "bad"
    assert "about to fail" in broken.logs("bad") and "boom" in broken.logs("bad")

    sleeper = script(root, "sleep.py", "import time\ntime.sleep(60)\n")
    slow = write_pipeline(root, [node("zz", filename=sleeper)], filename="slow.pipeline")
    long = cl.pipelines.run(slow)
    with pytest.raises(WaitTimeout) as late:
        long.wait(timeout=0.5)
    assert "still" in late.value.error and isinstance(late.value, CubeError)
    assert long.stop().wait(timeout=60).status == "cancelled"

    listed = cl.pipelines.runs()
    assert {r.id for r in listed} == {run.id, broken.id, long.id}
    assert [r.id for r in cl.pipelines.runs(ok)] == [run.id]
    assert cl.pipelines.get(run.id).status == "succeeded"
    with pytest.raises(NotFound) as missing:
        cl.pipelines.get("no-such-run")
    with pytest.raises(InvalidInput) as no_node:
        run.logs("nope")
    with pytest.raises(CubeError) as unknown_param:
        cl.pipelines.run(ok, params={"nope": 1})
    return {
        "nodes": [
            {k: n[k] for k in ("id", "label", "kind", "status", "attempts", "exit_code")}
            for n in cl.pipelines.get(broken.id).nodes
        ],
        "statuses": [r.status for r in listed],
        "errors": [
            missing.value.to_json(),
            json.loads(json.dumps(no_node.value.to_json()).replace(run.id, "RUN")),
            unknown_param.value.to_json(),
            type(unknown_param.value).__name__,
        ],
    }


def _same_everywhere(local_result: Any, remote_result: Any) -> None:
    assert json.dumps(local_result, sort_keys=True) == json.dumps(remote_result, sort_keys=True)


def test_models_here_and_over_rest_answer_the_same(
    local: Path, server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    here = _models_roundtrip(local)
    assert sdk.current().kind == "local"
    assert here["error"]["error"] == "model 'iris' has no version '7'"
    _same_everywhere(here, _models_roundtrip(_connect(server, monkeypatch)))


def test_pipelines_here_and_over_rest_answer_the_same(
    local: Path, server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    here = _pipelines_roundtrip(local)
    assert sdk.current().kind == "local"
    assert here["errors"][0]["error"] == "run 'no-such-run' not found"
    _same_everywhere(here, _pipelines_roundtrip(_connect(server, monkeypatch)))


def test_a_run_goes_on_in_a_real_kernel_between_cells(local: Path, isolated_env: Path) -> None:
    """In a kernel the run does not wait for the cell to end: the first cell returns while it
    runs, a later one sees it finish."""
    code = "import time\ntime.sleep(1.5)\nprint('slow step done')\n"
    write_pipeline(local, [node("slow", filename=script(local, "slow.py", code))])
    env = {
        "JUPYTER_PATH": str(REPO),
        "CUBE_LAB_DATA_DIR": str(isolated_env / "cube-data"),
        "CUBE_LAB_USER": "alice",
    }
    nb = run_in_kernel(
        [
            "import cube_lab as cl\n"
            "run = cl.pipelines.run('p.pipeline')\n"
            "print('FIRST', run.status)",
            "print('THEN', run.wait(timeout=120).status, run.nodes[0]['status'])\n"
            "print('LOG', run.logs('slow').strip())",
            "cl.models.get('nothing')",
        ],
        local,
        env,
    )
    first, then, error = (_outputs(c) for c in nb.cells)
    assert "FIRST queued" in first or "FIRST running" in first, first
    assert "THEN succeeded succeeded" in then and "LOG slow step done" in then, then
    assert "model 'nothing' not found" in error or "NotFound" in error, error


def _outputs(cell: Any) -> str:
    return "\n".join(
        o.get("text", "") or f"{o.get('ename')}: {o.get('evalue')}" for o in cell.outputs
    )


def test_connect_refuses_a_bad_token_with_the_servers_answer(
    server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _connect(server, monkeypatch)
    url = server[0]
    with pytest.raises(CubeError) as refused:
        cl.connect(url, token="wrong")
    assert refused.value.status in (401, 403)
    assert sdk.current().client.token == TOKEN  # type: ignore[attr-defined]  (kept)


def test_absolute_paths_need_the_servers_root(server: tuple[str, Path]) -> None:
    url, root = server
    cl.connect(url, token=TOKEN)
    with pytest.raises(InvalidInput) as absolute:
        cl.pipelines.run(root / "p.pipeline")
    assert "root" in absolute.value.error and "root=" in str(absolute.value.detail)
    with pytest.raises(InvalidInput):
        cl.models.register(_model(), "iris")


def test_import_stays_light() -> None:
    code = (
        "import sys, cube_lab as cl; cl.models; cl.pipelines.run; cl.connect; cl.train; "
        "cl.tune; cl.deploy; cl.deployments; cl.training.jobs; cl.tuning.experiments; "
        "print(sorted(m for m in ('sqlalchemy', 'tornado', 'cube_lab.workspace') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_under_the_hub_the_kernel_uses_rest_with_its_token(
    server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$CUBE_LAB_SERVICE_URL`` + ``$JUPYTERHUB_API_TOKEN`` (what the hub gives a server)
    choose REST without the user doing anything; paths are sent relative to the home."""
    url, root = server
    monkeypatch.setenv("CUBE_LAB_SERVICE_URL", url)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", TOKEN)
    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(root))
    (root / "sub").mkdir()
    monkeypatch.chdir(root / "sub")
    (root / "sub" / "w.txt").write_text("x")
    sdk.disconnect()
    assert sdk.current().kind == "rest"
    version = cl.models.register("w.txt", "hubbed", flavor="generic")
    assert (version.name, version.version) == ("hubbed", 1)
    assert [m["name"] for m in cl.models.list()] == ["hubbed"]
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "")
    sdk.disconnect()
    with pytest.raises(CubeError) as no_token:
        sdk.current()
    assert "JUPYTERHUB_API_TOKEN" in no_token.value.error
