"""Issue 14, the service-level rough edges on the ML path, each checked where every interface
(REST, CLI, Python) meets it: empty models are refused, a failed deployment can be removed,
a missing framework package is refused before launch, and dataset versions are easy to reach
from Python and recorded in a model's lineage."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labeling_util import image_project, make_csv, team

from cube_lab import cli
from cube_lab.errors import CubeError, InvalidInput, NotFound
from cube_lab.identity import Caller
from cube_lab.k8s import ClusterConfig
from cube_lab.registry.validation import EmptyArtifact
from cube_lab.training import local
from cube_lab.training.cluster import ClusterJob

ALICE, BOB = Caller("alice"), Caller("bob")


@pytest.fixture
def as_alice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI and the in-kernel helpers act as alice (the one local user)."""
    monkeypatch.setenv("CUBE_LAB_USER", "alice")


@pytest.fixture
def helper(ws: Any, as_alice: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``cube_lab.datasets`` as a kernel sees it: over this test's data dir, nothing noted."""
    from cube_lab import datasets
    from cube_lab.workspace import default_workspace

    monkeypatch.setattr(datasets, "_used", [])
    default_workspace.cache_clear()
    yield datasets
    if default_workspace.cache_info().currsize:
        default_workspace().close()
    default_workspace.cache_clear()


def pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# -- empty models ---------------------------------------------------------------------------


def _empty(tmp_path: Path, shape: str) -> tuple[Path, str]:
    """A would-be model that holds nothing, and what the refusal says about it."""
    target = tmp_path / "out"
    if shape == "file":
        target = tmp_path / "model.pt"
        target.touch()
        return target, "is empty (0 bytes)"
    target.mkdir()
    if shape == "folder":
        return target, "is empty"
    (target / "checkpoints" / "epoch-1").mkdir(parents=True)
    if shape == "folders":
        return target, "holds only empty folders"
    (target / "checkpoints" / "weights.bin").touch()
    return target, "holds only empty (0-byte) files"


@pytest.mark.parametrize("shape", ["folder", "folders", "zero-files", "file"])
def test_an_empty_model_is_refused_and_nothing_is_written(
    ws: Any, tmp_path: Path, shape: str
) -> None:
    target, says = _empty(tmp_path, shape)
    with pytest.raises(EmptyArtifact) as info:
        ws.registry.register(ALICE, name="m", path=target)
    assert info.value.status == 400
    assert (
        info.value.error
        == f"nothing to register: the {'file' if shape == 'file' else 'folder'} {target} {says}"
    )
    assert "Save the model first" in info.value.detail
    assert ws.registry.list_models(ALICE, include_archived=True).total == 0
    artifacts = ws.registry.artifacts
    assert list(artifacts.staging.iterdir()) == [] and list(artifacts.models.iterdir()) == []
    # the same place with a model in it registers
    (target if target.is_dir() else tmp_path).joinpath("real.pt").write_bytes(b"weights")
    fixed = target if target.is_dir() else tmp_path / "real.pt"
    assert ws.registry.register(ALICE, name="m", path=fixed).version == 1


async def test_rest_refuses_an_empty_folder_with_400(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "out" / "ckpt").mkdir(parents=True)
    status, err = await api("alice", "POST", "models", {"name": "m", "path": "out"})
    assert status == 400, err
    assert err["error"].startswith("nothing to register: the folder")
    assert "holds only empty folders" in err["error"] and "Save the model" in err["detail"]
    status, page = await api("alice", "GET", "models")
    assert status == 200 and page["total"] == 0


def test_cli_refuses_an_empty_folder(
    tmp_path: Path, as_alice: None, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    assert cli.main(["model", "register", "empty", "--name", "m"]) == 2
    err = capfd.readouterr().err
    assert "nothing to register: the folder" in err and "is empty" in err
    assert "Traceback" not in err
    assert cli.main(["model", "list", "--json"]) == 0
    assert json.loads(capfd.readouterr().out) == []


def test_a_training_job_that_saved_nothing_says_where_to_save(ws: Any, tmp_path: Path) -> None:
    (tmp_path / "nothing.py").write_text("print('trained; saved nothing')\n")
    (tmp_path / "empty_ckpt.py").write_text(
        "import os\nos.makedirs(os.path.join(os.environ['CUBE_OUTPUT_DIR'], 'ckpt-1'))\n"
    )
    for script, says in (("nothing.py", "is empty"), ("empty_ckpt.py", "ckpt-1 is empty")):
        job = ws.training.prepare(ALICE, {"framework": "plain", "script": script}, cwd=tmp_path)
        assert ws.training.run_foreground(job) == "succeeded"
        view = ws.training.get(ALICE, job.plan.job_id)
        with pytest.raises(EmptyArtifact) as info:
            ws.training.register_model(ALICE, view.id, "m")
        assert says in info.value.error
        assert "$CUBE_OUTPUT_DIR" in info.value.detail and view.output_dir in info.value.detail
    assert ws.registry.list_models(ALICE).total == 0
    (tmp_path / "saves.py").write_text(
        "import os\nopen(os.path.join(os.environ['CUBE_OUTPUT_DIR'], 'm.pt'), 'wb')"
        ".write(b'weights')\n"
    )
    job = ws.training.prepare(ALICE, {"framework": "plain", "script": "saves.py"}, cwd=tmp_path)
    assert ws.training.run_foreground(job) == "succeeded"
    version = ws.training.register_model(ALICE, job.plan.job_id, "m")
    assert version.artifact_name == "m.pt" and version.size_bytes == 7


async def _until_done(api: Any, job_id: str) -> dict[str, Any]:
    for _ in range(600):
        status, job = await api("alice", "GET", f"training/jobs/{job_id}")
        assert status == 200
        if job["status"] not in ("queued", "running"):
            return job
        await asyncio.sleep(0.1)
    raise AssertionError("the job did not finish")


async def test_rest_training_register_of_an_empty_output_is_400(
    api: Any, jp_root_dir: Path
) -> None:
    (jp_root_dir / "t.py").write_text("print('no model')\n")
    status, job = await api(
        "alice", "POST", "training/jobs", {"framework": "plain", "script": "t.py"}
    )
    assert status == 201, job
    job = await _until_done(api, job["id"])
    assert job["status"] == "succeeded"
    status, err = await api("alice", "POST", f"training/jobs/{job['id']}/register", {"name": "m"})
    assert status == 400 and "nothing to register" in err["error"]
    assert "$CUBE_OUTPUT_DIR" in err["detail"] and job["output_dir"] in err["detail"]
    assert (await api("alice", "GET", "models"))[1]["total"] == 0


def test_a_tuning_trial_that_saved_an_empty_file_says_where_to_save(
    ws: Any, tmp_path: Path
) -> None:
    trial = textwrap.dedent(
        """
        import os, nni
        x = nni.get_next_parameter()["x"]
        open(os.path.join(os.environ["NNI_OUTPUT_DIR"], "model.pkl"), "wb").close()
        nni.report_final_result(-(x - 2) ** 2)
        """
    )
    (tmp_path / "trial.py").write_text(trial)
    spec = ws.tuning.parse(
        {
            "searchSpace": {"x": {"_type": "uniform", "_value": [-5, 5]}},
            "trialCommand": f"{sys.executable} trial.py",
            "trialCodeDirectory": ".",
            "trialConcurrency": 1,
            "maxTrialNumber": 1,
            "tuner": {"name": "Random", "classArgs": {"seed": 1}},
        },
        tmp_path,
    )
    engine = ws.tuning.prepare(ALICE, spec)
    assert ws.tuning.run_foreground(engine) == "done"
    view = ws.tuning.get(ALICE, engine.experiment_id)
    with pytest.raises(EmptyArtifact) as info:
        ws.tuning.register_trial(ALICE, view.id, "tuned")
    assert "holds only empty (0-byte) files" in info.value.error
    assert "$NNI_OUTPUT_DIR" in info.value.detail and view.best.id in info.value.detail
    assert ws.registry.list_models(ALICE).total == 0


# -- removing a deployment that is not running ---------------------------------------------


def _failed_deployment(ws: Any, tmp_path: Path, name: str = "broken") -> Any:
    """A deployment whose model server cannot load the model: status "failed"."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"\0" * 10)
    ws.registry.register(ALICE, name=name, path=folder)
    with pytest.raises(CubeError):
        ws.serving.deploy(ALICE, f"{name}:1")
    dep = ws.serving.get(ALICE, name)
    assert dep.status == "failed"
    return dep


def test_a_failed_deployment_is_removed_by_undeploy(ws: Any, tmp_path: Path) -> None:
    dep = _failed_deployment(ws, tmp_path)
    folder = ws.serving.root / dep.id
    assert folder.is_dir() and ws.serving.list(ALICE)[0].status == "failed"
    gone = ws.serving.undeploy(ALICE, "broken")
    assert (gone.name, gone.status, gone.endpoint) == ("broken", "removed", None)
    assert ws.serving.list(ALICE) == []
    assert not folder.exists()
    with pytest.raises(NotFound):
        ws.serving.get(ALICE, "broken")
    with pytest.raises(NotFound):  # a second undeploy has nothing left to remove
        ws.serving.undeploy(ALICE, "broken")
    assert ws.registry.get_version(ALICE, "alice", "broken", 1).version == 1  # the model stays


def test_stopped_and_dead_deployments_are_removed_by_undeploy(
    ws: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.tree import DecisionTreeClassifier

    x, y = load_iris(return_X_y=True)
    joblib.dump(DecisionTreeClassifier(random_state=0).fit(x, y), tmp_path / "iris.joblib")
    ws.registry.register(ALICE, name="iris", path=tmp_path / "iris.joblib")
    try:
        ws.serving.deploy(ALICE, "iris:1", name="stays")
        assert ws.serving.undeploy(ALICE, "stays").status == "stopped"  # running: it stops
        assert [(d.name, d.status) for d in ws.serving.list(ALICE)] == [("stays", "stopped")]
        assert ws.serving.undeploy(ALICE, "stays").status == "removed"  # stopped: it goes
        assert ws.serving.list(ALICE) == []

        from cube_lab.serving import service as serving

        released: list[Any] = []  # as under the hub: the replicas' CPU is reserved
        monkeypatch.setattr(serving.quota, "reserve", lambda *a, **k: {"id": "r-dies"})
        monkeypatch.setattr(serving.quota, "release", released.append)
        dep = ws.serving.deploy(ALICE, "iris:1", name="dies")
        pids = [p["pid"] for p in dep.processes]
        router = next(p["pid"] for p in dep.processes if p["role"] == "router")
        os.kill(router, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while ws.serving.list(ALICE)[0].status != "dead":
            assert time.monotonic() < deadline, "the dead router was never noticed"
            time.sleep(0.05)
        assert any(pid_alive(p) for p in pids if p != router)  # its model server runs on
        assert released == []  # noticing it dead gave nothing back
        assert ws.serving.undeploy(ALICE, "dies").status == "removed"
        assert released == [{"id": "r-dies"}]
        assert ws.serving.list(ALICE) == []
        deadline = time.monotonic() + 10
        while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(pid_alive(p) for p in pids)  # what still ran of it was killed
    finally:
        ws.serving.quit_warm_hosts()


async def test_rest_delete_removes_a_failed_deployment(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "broken").mkdir()
    (jp_root_dir / "broken" / "weights.bin").write_bytes(b"\0" * 10)
    status, _ = await api("alice", "POST", "models", {"name": "broken", "path": "broken"})
    assert status == 201
    status, err = await api("alice", "POST", "deployments", {"model": "broken:1"})
    assert status == 422 and "cannot serve flavor" in json.dumps(err)
    status, found = await api("alice", "GET", "deployments")
    assert [d["status"] for d in found["deployments"]] == ["failed"]
    status, dep = await api("alice", "DELETE", "projects/alice/deployments/broken")
    assert status == 200 and dep["status"] == "removed" and dep["name"] == "broken"
    status, found = await api("alice", "GET", "deployments")
    assert status == 200 and found["deployments"] == []
    status, err = await api("alice", "DELETE", "projects/alice/deployments/broken")
    assert status == 404


def test_cli_undeploy_removes_a_failed_deployment(
    ws: Any, tmp_path: Path, as_alice: None, capfd: Any
) -> None:
    _failed_deployment(ws, tmp_path)
    capfd.readouterr()
    assert cli.main(["undeploy", "broken"]) == 0
    assert capfd.readouterr().out.strip() == "broken: removed"
    assert cli.main(["deployments", "--json"]) == 0
    assert json.loads(capfd.readouterr().out) == []


# -- training: the framework's package, checked before launch -------------------------------


def test_a_missing_framework_package_is_refused_before_launch(ws: Any, tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("pass\n")
    python = sys.executable
    for framework, package in (("tensorflow", "tensorflow"), ("deepspeed", "deepspeed")):
        with pytest.raises(InvalidInput) as info:
            ws.training.prepare(ALICE, {"framework": framework, "script": "t.py"}, cwd=tmp_path)
        assert info.value.status == 400
        assert info.value.error == (
            f"framework {framework!r} needs the {package} package, which is not installed "
            f"in the Python that runs jobs ({python})"
        )
        assert f"{python} -m pip install {package} -" in info.value.detail
        assert "torch" not in info.value.detail  # torch is installed: only what is missing
    assert ws.training.list(ALICE) == []
    assert not ws.training.jobs_root.exists() or list(ws.training.jobs_root.iterdir()) == []


def test_the_check_names_torchs_install_and_looks_in_the_jobs_environment(
    ws: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "t.py").write_text("pass\n")
    needs = {**local.FRAMEWORK_PACKAGES, "pytorch": (("cube_lab_fake_torch", "torch==2.13.0"),)}
    monkeypatch.setattr(local, "FRAMEWORK_PACKAGES", needs)
    with pytest.raises(InvalidInput) as info:
        ws.training.prepare(ALICE, {"script": "t.py"}, cwd=tmp_path)  # pytorch: the default
    assert "needs the cube_lab_fake_torch package" in info.value.error
    assert f"{sys.executable} -m pip install torch==2.13.0" in info.value.detail
    assert ws.training.list(ALICE) == []
    # the job's own environment counts: a PYTHONPATH in its env makes the module importable
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "cube_lab_fake_torch.py").write_text("")
    job = ws.training.prepare(
        ALICE, {"script": "t.py", "env": {"PYTHONPATH": str(tmp_path / "lib")}}, cwd=tmp_path
    )
    assert [j.id for j in ws.training.list(ALICE)] == [job.plan.job_id]


def test_kubernetes_jobs_are_not_checked_locally(ws: Any, tmp_path: Path) -> None:
    ws.training.cluster_config = ClusterConfig(host="http://127.0.0.1:9", namespace="ml")
    spec = {"framework": "tensorflow", "script": "t.py", "image": "reg/tf:1"}
    job = ws.training.prepare(ALICE, spec | {"backend": "kubernetes"})
    assert isinstance(job, ClusterJob)  # recorded; the image holds tensorflow


async def test_rest_and_cli_refuse_a_missing_package_with_the_install_hint(
    api: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch, capfd: Any
) -> None:
    needs = {**local.FRAMEWORK_PACKAGES, "pytorch": (("cube_lab_fake_torch", "torch==2.13.0"),)}
    monkeypatch.setattr(local, "FRAMEWORK_PACKAGES", needs)
    (jp_root_dir / "t.py").write_text("pass\n")
    status, err = await api("alice", "POST", "training/jobs", {"script": "t.py"})
    assert status == 400 and "needs the cube_lab_fake_torch package" in err["error"]
    assert "-m pip install torch==2.13.0" in err["detail"]
    assert (await api("alice", "GET", "training/jobs"))[1]["jobs"] == []
    monkeypatch.chdir(jp_root_dir)
    capfd.readouterr()
    assert cli.main(["train", "t.py"]) == 2
    out = capfd.readouterr().err
    assert "needs the cube_lab_fake_torch package" in out and "pip install torch==2.13.0" in out


def test_a_job_that_fails_at_start_says_why(ws: Any, tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("import cube_lab_no_such_module\n")
    job = ws.training.prepare(ALICE, {"framework": "plain", "script": "bad.py"}, cwd=tmp_path)
    assert ws.training.run_foreground(job) == "failed"
    view = ws.training.get(ALICE, job.plan.job_id)
    assert view.error == (
        "exit code 1: ModuleNotFoundError: No module named 'cube_lab_no_such_module'"
    )


# -- datasets: the Python helper and lineage -----------------------------------------------


def _texts(ws: Any, tmp_path: Path) -> Path:
    """A text dataset "notes" with a multi-label labeling project, every task submitted."""
    source = make_csv(tmp_path / "notes.csv", ["Alice in Paris", "Bob at home", "a|b"])
    ws.datasets.create(ALICE, "notes", source)
    ws.labeling.create(
        ALICE,
        "topics",
        dataset="notes",
        type="text-class",
        labels=["people", "places"],
        multi_label=True,
        review=False,
    )
    answers = [["people", "places"], ["people"], []]
    while (task := ws.labeling.next(ALICE, "alice", "topics")) is not None:
        result = {"labels": answers[task.index]}
        ws.labeling.save(ALICE, "alice", "topics", task.id, result, submit=True)
    return source


def test_path_and_load_of_text_dataset_versions(ws: Any, tmp_path: Path, helper: Any) -> None:
    source = _texts(ws, tmp_path)
    # before any export: the dataset as registered
    assert helper.path("notes") == source
    raw = helper.load("notes")
    assert list(raw["text"]) == ["Alice in Paris", "Bob at home", "a|b"]
    assert list(raw["source"]) == ["s0", "s1", "s2"]
    csv_version = ws.labeling.export(ALICE, "alice", "topics", "csv").version
    jsonl_version = ws.labeling.export(ALICE, "alice", "topics", "jsonl").version
    assert helper.path("notes") == Path(jsonl_version.path)  # the newest
    assert helper.path("notes", version=1) == Path(csv_version.path)
    assert helper.path("notes", version="source") == source
    from_csv, from_jsonl = helper.load("notes", version=1), helper.load("notes", version=2)
    expected = [["people", "places"], ["people"], []]
    assert list(from_csv["labels"]) == expected == list(from_jsonl["labels"])
    assert list(from_csv["text"]) == list(from_jsonl["text"]) == list(raw["text"])
    assert helper.used() == [
        {"project": "alice", "name": "notes", "version": None, "path": str(source)},
        {"project": "alice", "name": "notes", "version": 2, "path": jsonl_version.path},
        {"project": "alice", "name": "notes", "version": 1, "path": csv_version.path},
    ]
    with pytest.raises(NotFound, match="no version 7") as info:
        helper.path("notes", version=7)
    assert "Versions: 1, 2" in info.value.detail
    with pytest.raises(NotFound, match="dataset 'nope' not found"):
        helper.load("nope")


def test_a_dataset_in_a_team_project_is_found_or_asked_for(
    ws: Any, tmp_path: Path, helper: Any
) -> None:
    for name in ("lab", "other"):
        team(ws, BOB, "alice", name=name)
        folder = tmp_path / name
        folder.mkdir()
        ws.datasets.create(
            BOB,
            "shared" if name == "lab" else "twice",
            make_csv(folder / "t.csv", ["x"]),
            project=name,
        )
    ws.datasets.create(BOB, "twice", make_csv(tmp_path / "t2.csv", ["y"]), project="lab")
    assert helper.path("shared") == tmp_path / "lab" / "t.csv"  # the only one: found
    with pytest.raises(InvalidInput, match="in several of your projects: lab, other"):
        helper.path("twice")
    assert helper.path("twice", project="other") == tmp_path / "other" / "t.csv"
    with pytest.raises(NotFound):
        ws.datasets.resolve(Caller("carol"), "shared")  # not a member: not visible


def test_load_coco_yolo_labelstudio_and_an_image_folder(
    ws: Any, tmp_path: Path, helper: Any
) -> None:
    image_project(ws, ALICE, tmp_path / "pics", 4, review=False)
    images = helper.load("pics")  # no export yet: the registered images
    assert list(images.columns) == ["name", "path", "width", "height"]
    assert [Path(p).is_file() for p in images["path"]] == [True] * 4
    assert (images["width"][0], images["height"][0]) == (40, 30)
    saved = {}
    n = 0
    while (task := ws.labeling.next(ALICE, "alice", "pets")) is not None:
        boxes = [{"label": "dog", "x": 2, "y": 3, "w": 10, "h": 6}][: n % 2]
        ws.labeling.save(ALICE, "alice", "pets", task.id, {"boxes": boxes}, submit=True)
        saved[task.item["name"]] = boxes
        n += 1
    for fmt in ("coco", "yolo", "labelstudio"):
        ws.labeling.export(ALICE, "alice", "pets", fmt)
    coco = helper.load("pics", version=1)
    assert coco.attrs["labels"] == ["cat", "dog"]
    for _, row in coco.iterrows():
        assert Path(row["path"]).is_file() and row["path"].startswith(str(helper.path("pics", 1)))
        assert row["boxes"] == saved[row["file_name"]]
        assert row["labels"] == (["dog"] if saved[row["file_name"]] else [])
    yolo = helper.load("pics", version=2)
    assert yolo.attrs["labels"] == ["cat", "dog"] and len(yolo) == 4
    for _, row in yolo.iterrows():
        expected = saved[row["file_name"]]
        assert [b["label"] for b in row["boxes"]] == [b["label"] for b in expected]
        if expected:
            width = images.set_index("name")["width"][row["file_name"]]
            box = row["boxes"][0]
            assert box["class"] == 1 and box["width"] == pytest.approx(10 / width, abs=1e-5)
    tasks = helper.load("pics", version=3)
    assert isinstance(tasks, list) and len(tasks) == 4 and "data" in tasks[0]


def test_a_registration_after_the_helper_records_the_dataset(
    ws: Any, tmp_path: Path, helper: Any
) -> None:
    from cube_lab.registry import register

    _texts(ws, tmp_path)
    version = ws.labeling.export(ALICE, "alice", "topics", "jsonl").version
    df = helper.load("notes")
    (tmp_path / "model.bin").write_bytes(f"{len(df)} rows".encode())
    registered = register(tmp_path / "model.bin", "text-model")
    assert registered.lineage.datasets == [
        {"project": "alice", "name": "notes", "version": 1, "path": version.path}
    ]
    shown = ws.registry.get_version(ALICE, "alice", "text-model", 1)
    assert shown.lineage.datasets == registered.lineage.datasets


def test_a_job_given_cube_lab_dataset_records_it_in_its_models(ws: Any, tmp_path: Path) -> None:
    _texts(ws, tmp_path)
    version = ws.labeling.export(ALICE, "alice", "topics", "csv").version
    (tmp_path / "train.py").write_text(
        textwrap.dedent(
            """
            import os, pathlib
            from cube_lab.registry import register
            rows = pathlib.Path(os.environ["CUBE_LAB_DATASET"]).read_text().count("\\n")
            out = pathlib.Path(os.environ["CUBE_OUTPUT_DIR"], "model.bin")
            out.write_text(f"trained on {rows} lines")
            register(str(out), "in-job")  # from inside the job
            """
        )
    )
    spec = {"framework": "plain", "script": "train.py", "env": {"CUBE_LAB_DATASET": version.path}}
    job = ws.training.prepare(ALICE, spec, cwd=tmp_path)
    assert ws.training.run_foreground(job) == "succeeded", ws.training.tail_log(
        ALICE, job.plan.job_id
    ).text
    view = ws.training.get(ALICE, job.plan.job_id)
    used = [{"project": "alice", "name": "notes", "version": 1, "path": version.path}]
    assert view.datasets == used
    from_job = ws.registry.get_version(ALICE, "alice", "in-job", 1)
    assert from_job.lineage.datasets == used and from_job.lineage.training_job_id == view.id
    registered = ws.training.register_model(ALICE, view.id, "after-job")
    assert registered.lineage.datasets == used and registered.lineage.training_job_id == view.id
    # a path that is no dataset's is no lineage
    other = {**spec, "env": {"CUBE_LAB_DATASET": str(tmp_path)}}
    assert (
        ws.training.get(ALICE, ws.training.prepare(ALICE, other, cwd=tmp_path).plan.job_id).datasets
        == []
    )


async def test_rest_shows_and_takes_lineage_datasets(api: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "m.bin").write_bytes(b"weights")
    used = [{"name": "notes", "version": 2, "path": "/data/datasets/1/v2/labels.csv"}]
    status, version = await api(
        "alice", "POST", "models", {"name": "m", "path": "m.bin", "datasets": used}
    )
    assert status == 201, version
    status, shown = await api("alice", "GET", "projects/alice/models/m/versions/1")
    assert shown["lineage"]["datasets"] == [{"project": None, **used[0]}]
    status, err = await api(
        "alice", "POST", "models", {"name": "m", "path": "m.bin", "datasets": [{"version": 2}]}
    )
    assert status == 400 and "datasets[0] must be an object with a name" in err["error"]
