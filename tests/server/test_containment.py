"""Issue 15, defects 1 and 2 and NUL bytes in paths: nothing a user hands in (a folder to
register, a template parameter given as a reference, a node's output, a path with a NUL
byte) reaches or serves a file outside the server root; and property tests of the one
resolver (cube_lab.containment) over generated paths, the fuzzing check for this class."""

from __future__ import annotations

import asyncio
import io
import json
import os
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pipeline_util import node, script, write_pipeline
from property import examples

from cube_lab import containment
from cube_lab.errors import InvalidInput
from cube_lab.identity import Caller

ALICE = Caller("alice")
SECRET = b"root:x:0:0:the secret standing for /etc/passwd\n"
T = "cube-lab:template"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside every root a test uses: it stands for /etc/passwd."""
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    path = outside / "passwd"
    path.write_bytes(SECRET)
    return path


def model_folder(parent: Path, secret: Path) -> Path:
    folder = parent / "modeldir"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"w" * 64)
    (folder / "passwd").symlink_to(secret)  # ln -s /etc/passwd modeldir/passwd
    (folder / "etc").symlink_to(secret.parent, target_is_directory=True)
    (folder / "alias.bin").symlink_to("weights.bin")  # a link inside the folder is kept
    return folder


def zip_names_and_bytes(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


# -- defect 1: registering a folder must not copy what its links point to -----------------


async def test_rest_register_leaves_out_links_leading_outside(
    api: Any, jp_root_dir: Path, secret: Path
) -> None:
    model_folder(jp_root_dir, secret)
    status, version = await api("alice", "POST", "models", {"name": "m", "path": "modeldir"})
    assert status == 201, version
    status, body = await api("alice", "GET", "projects/alice/models/m/versions/1/download")
    assert status == 200
    files = zip_names_and_bytes(body)
    assert sorted(files) == ["modeldir/alias.bin", "modeldir/weights.bin"]
    assert all(SECRET not in content for content in files.values())
    assert version["size_bytes"] == 128  # weights.bin and its alias, nothing from outside


@pytest.mark.parametrize("path", ["/", "", ".", "modeldir/.."])
async def test_rest_register_of_the_whole_root_is_refused(
    api: Any, jp_root_dir: Path, secret: Path, path: str
) -> None:
    model_folder(jp_root_dir, secret)
    status, err = await api("alice", "POST", "models", {"name": "m", "path": path})
    assert status == 400, err
    assert set(err) == {"error", "detail"}
    assert ("server root itself" in err["error"]) or ("path is required" in err["error"])
    assert (await api("alice", "GET", "models"))[1]["total"] == 0


def test_python_register_refuses_the_machine_and_the_store(ws: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="root of the file system"):
        ws.registry.register(ALICE, name="m", path=Path("/"))
    with pytest.raises(InvalidInput, match="holds the model registry's store"):
        ws.registry.register(ALICE, name="m", path=ws.settings.data_dir.parent)
    assert ws.registry.list_models(ALICE).total == 0


def test_training_register_leaves_out_links_leading_outside(
    ws: Any, tmp_path: Path, secret: Path
) -> None:
    (tmp_path / "train.py").write_text(
        "import os\nout = os.environ['CUBE_OUTPUT_DIR']\n"
        "open(os.path.join(out, 'model.pt'), 'wb').write(b'weights')\n"
        f"os.symlink({str(secret)!r}, os.path.join(out, 'passwd'))\n"
    )
    job = ws.training.prepare(ALICE, {"framework": "plain", "script": "train.py"}, cwd=tmp_path)
    assert ws.training.run_foreground(job) == "succeeded"
    out = ws.training.get(ALICE, job.plan.job_id).output_dir
    version = ws.training.register_model(ALICE, job.plan.job_id, "trained", path=out)
    stored = ws.registry.download(ALICE, "alice", "trained", "1").path
    assert sorted(p.name for p in stored.rglob("*")) == ["model.pt"]
    assert version.size_bytes == len(b"weights")
    with pytest.raises(InvalidInput, match="NUL byte"):
        ws.training.register_model(ALICE, job.plan.job_id, "nul", path="p\0")


def test_tuning_register_leaves_out_links_leading_outside(
    ws: Any, tmp_path: Path, secret: Path
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "trial.py").write_text(
        "import os, nni\nparams = nni.get_next_parameter()\n"
        "out = os.environ['NNI_OUTPUT_DIR']\n"
        "open(os.path.join(out, 'model.txt'), 'w').write(str(params['x']))\n"
        f"os.symlink({str(secret)!r}, os.path.join(out, 'passwd'))\n"
        "nni.report_final_result(params['x'])\n"
    )
    config = {
        "searchSpace": {"x": {"_type": "choice", "_value": [1]}},
        "trialCommand": "python3 trial.py",
        "trialCodeDirectory": ".",
        "trialConcurrency": 1,
        "maxTrialNumber": 1,
        "tuner": {"name": "Random", "classArgs": {"seed": 1}},
    }
    engine = ws.tuning.prepare(ALICE, ws.tuning.parse(config, code))
    ws.tuning.run_foreground(engine)
    view = ws.tuning.get(ALICE, engine.experiment_id)
    assert view.best is not None, view
    ws.tuning.register_trial(ALICE, view.id, "tuned")
    stored = ws.registry.download(ALICE, "alice", "tuned", "1").path
    names = sorted(p.name for p in stored.rglob("*"))
    assert "model.txt" in names and "passwd" not in names, names
    assert all(SECRET not in p.read_bytes() for p in stored.rglob("*") if p.is_file())
    (code / "passwd-link").symlink_to(secret)
    with pytest.raises(InvalidInput, match="outside the trial code folder"):
        ws.tuning.register_trial(ALICE, view.id, "tuned", path="passwd-link")


def test_datasets_and_their_items_stay_inside_the_source(
    ws: Any, tmp_path: Path, secret: Path
) -> None:
    from labeling_util import make_images

    folder = tmp_path / "pics"
    make_images(folder, 2)
    (folder / "stolen.png").symlink_to(secret)
    view = ws.datasets.create(ALICE, "pics", folder)
    assert view.item_count == 2
    with pytest.raises(InvalidInput, match="NUL byte"):
        ws.datasets.create(ALICE, "nul", Path("pics\0"))


# -- defect 2: template path parameters given as references ------------------------------


async def wait_done(api: Any, run_id: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, run = await api("alice", "GET", f"pipelines/runs/{run_id}")
        assert status == 200, run
        if run["status"] not in ("queued", "running"):
            return run
        await asyncio.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


def read_data_pipeline(folder: Path, inp: str, out: str, upstream: tuple[str, ...] = ()) -> None:
    nodes = [
        node(
            "read",
            T,
            upstream=upstream,
            template="read-data",
            label="read",
            parameters={"input_path": inp, "output_path": out},
        )
    ]
    if upstream:
        script(
            folder,
            "a.py",
            "import json, os\n"
            "json.dump({'inp': os.environ['INP'], 'out': os.environ['OUT']},"
            " open(os.environ['CUBE_VALUES_FILE'], 'w'))\n",
        )
        nodes.insert(0, node("a", filename="a.py"))
    params = [
        {"name": n, "default_value": {"type": "String", "value": "data/x.csv"}, "required": False}
        for n in ("inp", "out")
    ]
    write_pipeline(folder, nodes, parameters=params)


async def test_params_reference_escaping_the_root_is_refused_at_launch(
    api: Any, jp_root_dir: Path, secret: Path
) -> None:
    read_data_pipeline(jp_root_dir, "{{ params.inp }}", "{{ params.out }}")
    escaped = secret.parent / "escaped.csv"
    for params, fragment in [
        ({"inp": str(secret), "out": "data/x.csv"}, "is an absolute path"),
        ({"inp": "ok.csv", "out": str(escaped)}, "is an absolute path"),
        ({"inp": "../outside/passwd", "out": "data/x.csv"}, "points outside the project"),
    ]:
        status, err = await api(
            "alice", "POST", "pipelines/runs", {"path": "p.pipeline", "params": params}
        )
        assert status == 400, err
        assert fragment in err["error"] and "parameters." in err["error"], err
    assert not escaped.exists()
    assert (await api("alice", "GET", "pipelines/runs"))[1]["runs"] == []


async def test_node_value_reference_escaping_the_root_fails_the_node(
    api: Any, jp_root_dir: Path, secret: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    escaped = secret.parent / "escaped.csv"
    read_data_pipeline(
        jp_root_dir, "{{ nodes.a.values.inp }}", "{{ nodes.a.values.out }}", upstream=("a",)
    )
    for inp, out, fragment in [
        (str(secret), "data/x.csv", "is an absolute path"),
        ("data/in.csv", str(escaped), "is an absolute path"),
        ("../outside/passwd", "data/x.csv", "points outside the project"),
    ]:
        (jp_root_dir / "data").mkdir(exist_ok=True)
        (jp_root_dir / "data" / "in.csv").write_text("a,b\n1,2\n")
        monkeypatch.setenv("INP", inp)
        monkeypatch.setenv("OUT", out)
        status, run = await api("alice", "POST", "pipelines/runs", {"path": "p.pipeline"})
        assert status == 201, run
        done = await wait_done(api, run["id"])
        nodes = {n["id"]: n for n in done["nodes"]}
        assert nodes["a"]["status"] == "succeeded", nodes
        assert nodes["read"]["status"] == "failed", nodes
        assert fragment in nodes["read"]["error"], nodes["read"]
        status, results = await api(
            "alice", "GET", f"pipelines/runs/{run['id']}/nodes/read/results"
        )
        for found in results["results"]:
            _, body = await api(
                "alice",
                "GET",
                f"pipelines/runs/{run['id']}/nodes/read/results/{found['path']}",
            )
            assert SECRET not in body
    assert not escaped.exists()


async def test_results_never_serve_a_link_leading_out_of_the_run(
    api: Any, jp_root_dir: Path, secret: Path
) -> None:
    script(
        jp_root_dir,
        "a.py",
        "import os\nnode_dir = os.path.dirname(os.environ['CUBE_VALUES_FILE'])\n"
        f"os.symlink({str(secret)!r}, os.path.join(node_dir, 'stolen.txt'))\n"
        "open('fine.txt', 'w').write('fine')\n",
    )
    script(jp_root_dir, "b.py", f"import os\nos.symlink({str(secret)!r}, 'out.txt')\n")
    write_pipeline(
        jp_root_dir,
        [
            node("a", filename="a.py", outputs=["fine.txt"]),
            node("b", filename="b.py", outputs=["out.txt"]),
        ],
    )
    status, run = await api("alice", "POST", "pipelines/runs", {"path": "p.pipeline"})
    assert status == 201, run
    done = await wait_done(api, run["id"])
    nodes = {n["id"]: n for n in done["nodes"]}
    assert nodes["a"]["status"] == "succeeded", nodes
    # b's declared output became a link to the secret: the node fails, nothing is saved
    assert nodes["b"]["status"] == "failed" and "leading out" in nodes["b"]["error"], nodes
    for node_id in ("a", "b"):
        status, listed = await api(
            "alice", "GET", f"pipelines/runs/{run['id']}/nodes/{node_id}/results"
        )
        assert status == 200
        names = [r["name"] for r in listed["results"]]
        assert "stolen.txt" not in names and "out.txt" not in names, names
        for found in listed["results"]:
            _, body = await api(
                "alice",
                "GET",
                f"pipelines/runs/{run['id']}/nodes/{node_id}/results/{found['path']}",
            )
            assert SECRET not in body
    rel = f"{run['id']}/nodes/a/stolen.txt"
    status, err = await api("alice", "GET", f"pipelines/runs/{run['id']}/nodes/a/results/{rel}")
    assert status == 404, err


def test_a_node_file_swapped_for_a_link_is_refused_when_it_runs(ws: Any, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script(project, "a.py", "print('hi')\n")
    path = write_pipeline(project, [node("a", filename="a.py")])
    runner, recorder = ws.pipelines.prepare(ALICE, path, project)
    outside = tmp_path / "evil.py"
    outside.write_text("open('pwned', 'w').write('x')\n")
    (project / "a.py").unlink()
    (project / "a.py").symlink_to(outside)  # after validation, before the run
    assert ws.pipelines.run_foreground(runner, recorder) == "failed"
    run = ws.pipelines.get_run(ALICE, runner.plan.run_id)
    assert "points outside the project" in (run.nodes[0].error or "")
    assert not (project / "pwned").exists() and not (tmp_path / "pwned").exists()


# -- NUL bytes in paths: a 400 naming the NUL, never a 500 --------------------------------


async def test_nul_in_paths_is_a_400_everywhere(api: Any, jp_root_dir: Path) -> None:
    write_pipeline(jp_root_dir, [node("s", "cube-lab:shell", command="true")])
    nul_pipeline = {"path": "p.pipeline\u0000.txt"}
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "pipelines/validate", nul_pipeline),
        ("POST", "pipelines/compile", nul_pipeline),
        ("POST", "pipelines/runs", nul_pipeline),
        ("POST", "pipelines/schedules", {**nul_pipeline, "cron": "0 * * * *"}),
        ("POST", "datasets", {"name": "d", "path": "imgs\u0000"}),
        ("POST", "training/jobs/20260101-000000-abcdef/register", {"path": "p\u0000"}),
        ("POST", "models", {"name": "m", "path": "m\u0000.bin"}),
        ("POST", "tuning/experiments", {"config": {}, "folder": "a\u0000"}),
    ]
    for method, route, body in cases:
        status, err = await api("alice", method, route, json.dumps(body))
        assert status == 400, (route, status, err)
        assert "NUL" in err["error"] and set(err) == {"error", "detail"}, (route, err)


def test_nul_in_paths_given_to_services(ws: Any, tmp_path: Path) -> None:
    """The same inputs through the Python API and the CLI's services: InvalidInput."""
    with pytest.raises(InvalidInput, match="NUL byte"):
        ws.pipelines.check(Path(f"{tmp_path}/p.pipeline\0.txt"), tmp_path)
    with pytest.raises(InvalidInput, match="NUL byte"):
        ws.training.prepare(ALICE, {"framework": "plain", "script": "t\0.py"}, tmp_path)
    from cube_lab.registry import register

    with pytest.raises(InvalidInput, match="NUL byte"):
        register(f"{tmp_path}/m\0.bin", name="m")


# -- the resolver, by property: inside the root, or a clear InvalidInput ----------------------

_PIECES = st.one_of(
    st.sampled_from(["..", ".", "", "a", "sub", "link-out", "link-in", "loop", "x\0y", "~"]),
    st.text(min_size=1, max_size=12),  # any unicode, lone surrogates included
)
PATHS = st.builds(
    lambda lead, parts: lead + "/".join(parts),
    st.sampled_from(["", "/", "//", "./", "../"]),
    st.lists(_PIECES, max_size=8),
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A root with links leading out, in, and in a loop; and a secret beside it."""
    base = tmp_path_factory.mktemp("resolver")
    root, outside = base / "root", base / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "passwd").write_bytes(SECRET)
    (root / "a").write_text("a")
    (root / "link-out").symlink_to(outside, target_is_directory=True)
    (root / "sub" / "link-out").symlink_to(outside / "passwd")
    (root / "link-in").symlink_to(root / "sub", target_is_directory=True)
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)
    return root, outside


@settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(raw=PATHS, absolute=st.sampled_from(["refuse", "inside", "anchor"]), base=st.booleans())
def test_resolve_is_inside_the_root_or_refused(
    tree: tuple[Path, Path], raw: str, absolute: Any, base: bool
) -> None:
    root, outside = tree
    try:
        found = containment.resolve(
            root, raw, absolute=absolute, base=root / "sub" if base else None
        )
    except InvalidInput as exc:
        assert exc.status == 400 and exc.error and exc.detail  # says what and how to fix it
        assert isinstance(exc, containment.PathRefused)
        return
    real_root = Path(os.path.realpath(root))
    assert found == Path(os.path.realpath(found)), "the result is a real path"
    assert found.is_relative_to(real_root)
    assert not found.is_relative_to(Path(os.path.realpath(outside)))
    assert "\0" not in raw


@settings(max_examples=examples(200), deadline=None)
@given(raw=st.one_of(st.none(), st.integers(), st.binary(), st.lists(st.text()), PATHS))
def test_resolve_never_raises_anything_but_invalid_input(raw: Any) -> None:
    root = Path(os.path.realpath("/tmp"))
    try:
        found = containment.resolve(root, raw, allow_root=False)
    except InvalidInput:
        return
    assert found.is_relative_to(root) and found != root


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(names=st.lists(st.sampled_from(["f", "g", "d/f", "d/e/f", "out", "in", "up"]), max_size=6))
def test_copy_holds_nothing_from_outside(tmp_path: Path, names: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(dir=tmp_path) as scratch:
        base = Path(scratch)
        src, dst, outside = base / "src", base / "dst", base / "outside"
        src.mkdir()
        outside.mkdir()
        (outside / "passwd").write_bytes(SECRET)
        for name in names:
            path = src / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() or path.is_symlink():
                continue
            if name == "out":
                path.symlink_to(outside / "passwd")
            elif name == "in":
                path.symlink_to(src / "f")
            elif name == "up":
                path.symlink_to(src, target_is_directory=True)  # a loop
            else:
                path.write_bytes(name.encode())
        containment.copy_tree(src, dst)
        for file in dst.rglob("*"):
            assert not file.is_symlink()
            if file.is_file():
                assert file.read_bytes() != SECRET
        assert {rel for rel, _ in containment.walk(dst)} <= {
            rel for rel, _ in containment.walk(src)
        }


def test_run_template_with_a_root_checks_its_path_parameters(tmp_path: Path, secret: Path) -> None:
    from cube_lab.jobtemplates import TemplateCatalog, run_template

    project = tmp_path / "project"
    project.mkdir()
    (project / "in.csv").symlink_to(secret)
    template = TemplateCatalog().get("read-data")
    for raw, fragment in [
        (str(secret), "is an absolute path"),
        ("../outside/passwd", "is outside the project"),
        ("in.csv", "is outside the project"),  # a link leading out
    ]:
        with pytest.raises(InvalidInput, match=fragment):
            run_template(template, {"input_path": raw}, project, root=project)
    assert not (project / "data").exists()


async def test_a_folder_of_only_outside_links_says_why_it_is_empty(
    api: Any, jp_root_dir: Path, secret: Path
) -> None:
    folder = jp_root_dir / "links"
    folder.mkdir()
    (folder / "passwd").symlink_to(secret)
    status, err = await api("alice", "POST", "models", {"name": "m", "path": "links"})
    assert status == 400 and "holds no files of its own" in err["error"], err
    assert "passwd" in err["detail"] and "lead outside the folder" in err["detail"], err
