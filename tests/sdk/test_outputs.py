"""``Run.outputs(node)``: the files a pipeline node declared as outputs, as the run saved them,
in this process and through ``cl.connect`` against a real second server (downloaded once into
a cache), with the same answers in both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pipeline_util import node, script, write_pipeline

import cube_lab as cl
from cube_lab import sdk
from cube_lab.errors import InvalidInput
from cube_lab.sdk.transport import run_cache_root
from tests.sdk.test_sdk import _connect, _same_everywhere, local, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MAKE = """
import os
os.makedirs("plots", exist_ok=True)
open("out.csv", "w").write("a,b\\n1,2\\n")
open("plots/loss.txt", "w").write("0.5")
open("plots/acc.txt", "w").write("0.9")
open("scratch.txt", "w").write("not declared")
"""


def _tree(path: Path) -> dict[str, str]:
    if path.is_file():
        return {path.name: path.read_text()}
    return {p.relative_to(path).as_posix(): p.read_text() for p in path.rglob("*") if p.is_file()}


def _outputs(root: Path, base: Path) -> dict[str, Any]:
    make = script(root, "make.py", MAKE)
    after = script(root, "after.py", "print('no outputs here')\n")
    pipeline = write_pipeline(
        root,
        [
            node("make", filename=make, outputs=["out.csv", "plots"]),
            node("after", upstream=("make",), filename=after),
        ],
    )
    run = cl.pipelines.run(pipeline, cache=True).wait(timeout=120)
    assert run.status == "succeeded", run.data
    first = run.outputs("make")
    assert [p.name for p in first] == ["0-out.csv", "1-plots"]
    assert first[0].read_text() == "a,b\n1,2\n"
    assert _tree(first[1]) == {"acc.txt": "0.9", "loss.txt": "0.5"}
    assert run.outputs("after") == []
    (root / "out.csv").write_text("changed later\n")  # the run keeps what it saved
    assert run.outputs("make")[0].read_text() == "a,b\n1,2\n"
    with pytest.raises(InvalidInput) as no_node:
        run.outputs("nope")

    again = cl.pipelines.run(pipeline, cache=True).wait(timeout=120)
    reused = again.outputs("make")  # an unchanged node: the earlier run's saved files
    assert [p.read_text() if p.is_file() else _tree(p) for p in reused] == [
        "a,b\n1,2\n",
        {"acc.txt": "0.9", "loss.txt": "0.5"},
    ]
    return {
        "first": [p.relative_to(base).as_posix().replace(run.id, "RUN") for p in first],
        "reused": [p.relative_to(base).as_posix().replace(run.id, "RUN") for p in reused],
        "statuses": [n["status"] for n in again.nodes],
        "error": no_node.value.to_json()["error"].replace(run.id, "RUN"),
    }


def test_outputs_here_and_over_rest_answer_the_same(
    local: Path,  # noqa: F811  (the fixture of test_sdk)
    server: tuple[str, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cube_lab.workspace import default_workspace

    here = _outputs(local, default_workspace().pipelines.runs_root)
    assert sdk.current().kind == "local" and not run_cache_root().exists()
    assert here["first"] == ["RUN/nodes/make/outputs/0-out.csv", "RUN/nodes/make/outputs/1-plots"]
    assert here["reused"] == here["first"] and here["statuses"] == ["cached", "cached"]

    monkeypatch.setenv("XDG_CACHE_HOME", str(local.parent / "cache"))
    theirs = _outputs(_connect(server, monkeypatch), run_cache_root())
    _same_everywhere(here, theirs)
    assert run_cache_root() == local.parent / "cache" / "cube-lab" / "runs"

    run = cl.pipelines.runs()[-1]  # the first run: its outputs come from the cache now

    def no_download(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("downloaded again")

    monkeypatch.setattr(sdk.current().client, "stream", no_download)  # type: ignore[attr-defined]
    assert run.outputs("make")[0].read_text() == "a,b\n1,2\n"
