"""The registry service: what a user registers, sees, moves, archives and deletes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from cube_lab.errors import Conflict, InvalidInput, NotFound
from cube_lab.identity import Caller
from cube_lab.store.models import ModelVersion, RegisteredModel


def weights(tmp_path: Path, name: str = "weights.bin", data: bytes = b"\x00\x01" * 100) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def count_rows(ws: Any) -> tuple[int, int]:
    with ws.store.read() as s:
        return (
            s.scalar(select(func.count(RegisteredModel.id))),
            s.scalar(select(func.count(ModelVersion.id))),
        )


def stored_files(ws: Any) -> list[Path]:
    root = ws.settings.artifacts_dir
    return [p for p in root.rglob("*") if p.is_file()]


def test_register_file_numbers_versions_and_records_everything(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    path = weights(tmp_path)
    v1 = ws.registry.register(
        alice,
        name="iris",
        path=path,
        metrics={"accuracy": 0.91},
        params={"n_estimators": 100, "criterion": "gini"},
        tags={"team": "vision"},
        description="first",
        source="train.ipynb",
        pipeline_run_id="run-7",
        training_job_id="job-3",
        aliases=["staging"],
    )
    v2 = ws.registry.register(alice, name="iris", path=path, metrics={"accuracy": 0.95})
    assert (v1.version, v2.version) == (1, 2)
    assert v1.project == "alice" and v1.created_by == "alice"
    assert v1.flavor == "generic" and v1.format == "file" and v1.size_bytes == 200
    assert v1.checksum.startswith("sha256:") and v1.checksum == v2.checksum
    assert v1.lineage.source == "train.ipynb" and v1.lineage.pipeline_run_id == "run-7"
    assert v1.lineage.training_job_id == "job-3"
    assert v1.params == {"n_estimators": 100, "criterion": "gini"}
    model = ws.registry.get_model(alice, "alice", "iris")
    assert [v.version for v in model.versions] == [2, 1]
    assert model.aliases == {"staging": 1} and model.latest_version == 2
    assert ws.registry.get_version(alice, "alice", "iris", "staging").version == 1
    assert ws.registry.get_version(alice, "alice", "iris", "latest").version == 2
    # the artifact is a copy: changing the source later changes nothing stored
    path.write_bytes(b"changed")
    found = ws.registry.download(alice, "alice", "iris", 1)
    assert found.path.read_bytes() == b"\x00\x01" * 100


def test_flavors_detected_from_paths(ws: Any, alice: Caller, tmp_path: Path) -> None:
    assert ws.registry.register(alice, name="o", path=weights(tmp_path, "m.onnx")).flavor == "onnx"
    assert ws.registry.register(alice, name="p", path=weights(tmp_path, "m.pt")).flavor == "pytorch"
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"x")
    v = ws.registry.register(alice, name="hf", path=folder)
    assert (v.flavor, v.format) == ("transformers", "directory")
    mlflow_dir = tmp_path / "mlf"
    mlflow_dir.mkdir()
    (mlflow_dir / "MLmodel").write_text("flavors:\n  python_function: {}\n  sklearn: {}\n")
    v = ws.registry.register(alice, name="mlf", path=mlflow_dir)
    assert (v.flavor, v.format) == ("sklearn", "mlflow")
    explicit = ws.registry.register(
        alice, name="pk", path=weights(tmp_path, "m.pkl"), flavor="sklearn"
    )
    assert explicit.flavor == "sklearn"


def test_register_sklearn_object_as_mlflow_model(ws: Any, alice: Caller) -> None:
    import mlflow.sklearn
    from sklearn.datasets import load_iris
    from sklearn.tree import DecisionTreeClassifier

    x, y = load_iris(return_X_y=True)
    clf = DecisionTreeClassifier(max_depth=3, random_state=0).fit(x, y)
    v = ws.registry.register(alice, name="tree", obj=clf, metrics={"acc": clf.score(x, y)})
    assert (v.flavor, v.format, v.artifact_name) == ("sklearn", "mlflow", "model")
    path = ws.registry.download(alice, "alice", "tree", v.version).path
    loaded = mlflow.sklearn.load_model(str(path))
    assert (loaded.predict(x[:10]) == clf.predict(x[:10])).all()


def test_register_torch_module_as_mlflow_model(ws: Any, alice: Caller) -> None:
    import mlflow.pytorch
    import torch

    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    v = ws.registry.register(alice, name="net", obj=net)
    assert (v.flavor, v.format) == ("pytorch", "mlflow")
    loaded = mlflow.pytorch.load_model(str(ws.registry.download(alice, "alice", "net", 1).path))
    sample = torch.ones(2, 4)
    assert torch.allclose(loaded(sample), net(sample))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": ""}, "model name is required"),
        ({"name": "bad name"}, "invalid model name"),
        ({"name": "../x"}, "invalid model name"),
        ({"name": "ok", "metrics": {"acc": "high"}}, "metric 'acc' must be a number"),
        ({"name": "ok", "metrics": {"acc": float("nan")}}, "must be finite"),
        ({"name": "ok", "params": {"layers": [1, 2]}}, "params['layers']"),
        ({"name": "ok", "flavor": "keras"}, "unknown flavor"),
        ({"name": "ok", "aliases": ["latest"]}, "invalid alias"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    ws: Any, alice: Caller, tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        ws.registry.register(alice, path=weights(tmp_path), **kwargs)
    assert message in err.value.error
    assert count_rows(ws) == (0, 0) and stored_files(ws) == []


def test_missing_path_and_unknown_project(ws: Any, alice: Caller, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        ws.registry.register(alice, name="m", path=tmp_path / "nope.pkl")
    with pytest.raises(NotFound, match="project 'vision' not found"):
        ws.registry.register(alice, name="m", path=weights(tmp_path), project="vision")
    with pytest.raises(InvalidInput, match="cannot register an object"):
        ws.registry.register(alice, name="m", obj=object())
    assert count_rows(ws) == (0, 0) and stored_files(ws) == []


def test_failed_copy_leaves_no_row_and_no_files(
    ws: Any, alice: Caller, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    for i in range(5):
        (folder / f"part{i}.bin").write_bytes(b"x" * 1000)
    os.mkfifo(folder / "part3.pipe")  # not a regular file: left out of the copy
    from cube_lab import containment

    copy_file = containment.copy_file

    def disk_full_at_part3(source: Path, target: Path, boundary: Path) -> int:
        if Path(source).name == "part3.bin":  # parts 0-2 are copied, then the disk fills
            raise OSError(28, "No space left on device")
        return copy_file(source, target, boundary)

    monkeypatch.setattr(containment, "copy_file", disk_full_at_part3)
    with pytest.raises(OSError, match="No space left"):
        ws.registry.register(alice, name="big", path=folder)
    assert count_rows(ws) == (0, 0)
    assert stored_files(ws) == [], "the partial copy must be removed"


def test_failed_insert_leaves_no_files(
    ws: Any, alice: Caller, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.registry.register(alice, name="m", path=weights(tmp_path))
    before = sorted(stored_files(ws))
    from cube_lab.registry import service

    def broken_alias(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("database went away")

    monkeypatch.setattr(service.RegistryService, "_point_alias", staticmethod(broken_alias))
    with pytest.raises(RuntimeError):
        ws.registry.register(alice, name="m", path=weights(tmp_path), aliases=["prod"])
    assert count_rows(ws) == (1, 1)
    assert sorted(stored_files(ws)) == before


def test_aliases_move_and_conditional_move_conflicts(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    for _ in range(3):
        ws.registry.register(alice, name="m", path=weights(tmp_path))
    ws.registry.set_alias(alice, "alice", "m", "production", 1)
    detail = ws.registry.set_alias(alice, "alice", "m", "production", 2, expected_version=1)
    assert detail.aliases == {"production": 2}
    assert [v.aliases for v in detail.versions] == [[], ["production"], []]
    with pytest.raises(Conflict) as err:  # another request moved it first
        ws.registry.set_alias(alice, "alice", "m", "production", 3, expected_version=1)
    assert err.value.detail["current_version"] == 2
    with pytest.raises(Conflict):
        ws.registry.set_alias(alice, "alice", "m", "canary", 3, expected_version=2)
    assert ws.registry.set_alias(
        alice, "alice", "m", "canary", 3, expected_version=None
    ).aliases == {"canary": 3, "production": 2}
    with pytest.raises(NotFound, match="no version '9'"):
        ws.registry.set_alias(alice, "alice", "m", "production", 9)
    assert ws.registry.delete_alias(alice, "alice", "m", "canary").aliases == {"production": 2}


def test_list_search_archive_and_compare(ws: Any, alice: Caller, tmp_path: Path) -> None:
    ws.registry.register(
        alice, name="iris-rf", path=weights(tmp_path), metrics={"acc": 0.9}, params={"depth": 3}
    )
    ws.registry.register(
        alice,
        name="iris-rf",
        path=weights(tmp_path),
        metrics={"acc": 0.95, "f1": 0.94},
        params={"depth": 5},
    )
    ws.registry.register(alice, name="digits", path=weights(tmp_path))
    page = ws.registry.list_models(alice)
    assert [m.name for m in page.models] == ["digits", "iris-rf"] and page.total == 2
    assert page.models[1].version_count == 2 and page.models[1].latest_version == 2
    assert [m.name for m in ws.registry.list_models(alice, q="IRIS").models] == ["iris-rf"]
    ws.registry.update_model(alice, "alice", "digits", archived=True)
    assert [m.name for m in ws.registry.list_models(alice).models] == ["iris-rf"]
    assert ws.registry.list_models(alice, include_archived=True).total == 2
    cmp = ws.registry.compare(alice, "alice", "iris-rf", ["1", "2"])
    assert cmp.metrics == ["acc", "f1"] and cmp.params == ["depth"]
    assert [v.metrics.get("f1") for v in cmp.versions] == [None, 0.94]
    v = ws.registry.update_version(
        alice, "alice", "iris-rf", 1, archived=True, description="superseded", tags={"k": "v"}
    )
    assert v.archived and v.description == "superseded" and v.tags == {"k": "v"}
    assert [
        x.version
        for x in ws.registry.list_versions(alice, "alice", "iris-rf", include_archived=False)
    ] == [2]


def test_delete_removes_rows_and_artifacts(ws: Any, alice: Caller, tmp_path: Path) -> None:
    ws.registry.register(alice, name="m", path=weights(tmp_path))
    ws.registry.register(alice, name="m", path=weights(tmp_path), aliases=["production"])
    ws.registry.delete_version(alice, "alice", "m", "production")
    detail = ws.registry.get_model(alice, "alice", "m")
    assert [v.version for v in detail.versions] == [1] and detail.aliases == {}
    assert len(stored_files(ws)) == 1
    ws.registry.delete_model(alice, "alice", "m")
    assert count_rows(ws) == (0, 0) and stored_files(ws) == []
    # a model deleted and registered again starts over at version 1
    assert ws.registry.register(alice, name="m", path=weights(tmp_path)).version == 1


def test_folder_download_and_checksum_is_content_based(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    folder = tmp_path / "bundle"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("a")
    (folder / "sub" / "b.txt").write_text("b")
    v1 = ws.registry.register(alice, name="bundle", path=folder)
    (folder / "sub" / "b.txt").write_text("B")
    v2 = ws.registry.register(alice, name="bundle", path=folder)
    assert v1.checksum != v2.checksum and v1.format == "directory"
    found = ws.registry.download(alice, "alice", "bundle", 1)
    assert found.is_dir and (found.path / "sub" / "b.txt").read_text() == "b"


def test_tenant_isolation_and_shared_projects(
    ws: Any, alice: Caller, bob: Caller, tmp_path: Path
) -> None:
    ws.registry.register(alice, name="secret", path=weights(tmp_path))
    assert ws.registry.list_models(bob).total == 0
    with pytest.raises(NotFound):
        ws.registry.get_model(bob, "alice", "secret")
    with pytest.raises(NotFound):
        ws.registry.register(bob, name="x", path=weights(tmp_path), project="alice")
    with pytest.raises(NotFound):
        ws.registry.list_models(bob, project="alice")
    ws.projects.create(alice, "vision", "shared work")
    ws.registry.register(alice, name="shared", path=weights(tmp_path), project="vision")
    assert ws.registry.list_models(bob).total == 0
    ws.projects.set_member(alice, "vision", "bob", "member")
    assert ws.registry.list_models(bob).total == 0  # invited, not yet a member
    ws.projects.accept(bob, "vision")
    assert [m.name for m in ws.registry.list_models(bob).models] == ["shared"]
    v = ws.registry.register(bob, name="shared", path=weights(tmp_path), project="vision")
    assert (v.version, v.created_by) == (2, "bob")
    with pytest.raises(NotFound):  # still not alice's personal work
        ws.registry.get_model(bob, "alice", "secret")


def test_a_kernel_without_a_notebook_path_records_no_launcher_as_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cube_lab import registry

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    launcher = "/venv/lib/python3.11/site-packages/ipykernel_launcher.py"
    monkeypatch.setattr(registry.sys, "argv", [launcher, "-f", "kernel.json"])
    assert registry._current_source() is None
    monkeypatch.setattr(registry.sys, "argv", ["/work/train.py"])
    assert registry._current_source() == "/work/train.py"
