"""KServe on a cluster through the CLI: create, follow to Ready, canary, rollback, promote,
list and delete InferenceServices against kmock (a real HTTP mock of the API server) with the
real Kubernetes client. No cluster runs here; what reaches the mock is checked against the CRD."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from cube_lab import cli
from cube_lab.identity import Caller
from cube_lab.serving.kserve_cluster import progress
from tests.serving.test_kserve import check

URL = "/apis/serving.kserve.io/v1beta1/namespaces/ml/inferenceservices/iris"
READY = {
    "conditions": [{"type": "Ready", "status": "True"}],
    "url": "http://iris.ml.example.com",
    "components": {"predictor": {"traffic": [{"revisionName": "iris-1", "percent": 100}]}},
}


def find(km: Any, name: str) -> Any:
    return next((v for k, v in km.objects.items() if k[2] == name and not v.deleted), None)


async def run_cli(km: Any, argv: list[str], status: dict[str, Any] | None = None) -> int:
    """Run the CLI in a thread; once it has sent its change, play the controller's part."""
    before = find(km, "iris")
    before_spec = before.raw.get("spec") if before is not None else None
    cli_task = asyncio.create_task(asyncio.to_thread(cli.main, argv))
    deadline = time.monotonic() + 30
    while status is not None and time.monotonic() < deadline and not cli_task.done():
        now = find(km, "iris")
        if now is not None and now.raw.get("spec") != before_spec:
            assert (await km.patch(URL, json={"status": status})).status == 200
            break
        await asyncio.sleep(0.05)
    return await asyncio.wait_for(cli_task, 60)


@pytest.fixture
def registered(ws: Any, tmp_path: Path) -> list[str]:
    for version in (1, 2):
        model = tmp_path / f"v{version}" / "model.joblib"
        model.parent.mkdir()
        model.write_bytes(b"only the path and the flavor matter to the manifest")
        ws.registry.register(Caller(cli.local_username()), name="iris", path=model)
    return ["--data-dir", str(ws.settings.data_dir)]


async def test_deploy_canary_rollback_promote_and_delete(
    registered: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from k8s_mock import api_server

    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        monkeypatch.setenv("CUBE_LAB_K8S_TOKEN", "t0k")
        base = [*registered]
        k8s = ["--backend", "kubernetes", "--namespace", "ml"]

        code = await run_cli(km, [*base, "deploy", "iris:1", *k8s, "--max-replicas", "2"], READY)
        out, err = capsys.readouterr()
        assert code == 0, err
        assert out.strip().splitlines()[-1] == "http://iris.ml.example.com"
        assert "ready" in err
        created = find(km, "iris").raw
        check({k: v for k, v in created.items() if k != "status"})
        model = created["spec"]["predictor"]["model"]
        assert model["storageUri"].endswith("/1/model.joblib")

        split = [
            {"revisionName": "iris-2", "percent": 10, "latestRevision": True},
            {"revisionName": "iris-1", "percent": 90},
        ]
        canary = {**READY, "components": {"predictor": {"traffic": split}}}
        argv = [*base, "deploy", "iris:2", "--name", "iris", "--canary", "10", *k8s, "--json"]
        code = await run_cli(km, argv, canary)
        out, err = capsys.readouterr()
        assert code == 0, err
        spec = find(km, "iris").raw["spec"]["predictor"]
        assert spec["canaryTrafficPercent"] == 10
        assert spec["model"]["storageUri"].endswith("/2/model.joblib")
        assert '"percent": 10' in out

        assert await run_cli(km, [*base, "deployment", "rollback", "iris", *k8s]) == 0
        assert find(km, "iris").raw["spec"]["predictor"]["canaryTrafficPercent"] == 0
        assert await run_cli(km, [*base, "deployment", "promote", "iris", *k8s]) == 0
        assert "canaryTrafficPercent" not in find(km, "iris").raw["spec"]["predictor"]
        capsys.readouterr()

        assert await run_cli(km, [*base, "deployments", *k8s]) == 0
        listed = capsys.readouterr().out.splitlines()
        assert listed[0].split() == ["NAME", "NAMESPACE", "STATUS", "CANARY", "STORAGE", "URL"]
        assert listed[1].split()[:3] == ["iris", "ml", "ready"]

        assert await run_cli(km, [*base, "undeploy", "iris", *k8s]) == 0
        assert find(km, "iris") is None
        assert await run_cli(km, [*base, "undeploy", "iris", *k8s]) != 0
        assert "no InferenceService 'iris' in namespace ml" in capsys.readouterr().err


async def test_a_failed_model_and_a_foreign_service_get_clear_errors(
    registered: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from k8s_mock import api_server

    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        monkeypatch.setenv("CUBE_LAB_K8S_TOKEN", "t0k")
        k8s = ["--backend", "kubernetes", "--namespace", "ml"]
        failed = {
            "conditions": [{"type": "Ready", "status": "False", "reason": "ModelLoadFailed"}],
            "modelStatus": {"lastFailureInfo": {"message": "could not unpickle the model"}},
        }
        code = await run_cli(km, [*registered, "deploy", "iris:1", *k8s], failed)
        assert code != 0
        assert "could not unpickle the model" in capsys.readouterr().err
        # someone else's InferenceService of the same name is never overwritten
        foreign = {
            "apiVersion": "serving.kserve.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "bert", "namespace": "ml"},
            "spec": {"predictor": {}},
        }
        km.objects["serving.kserve.io/v1beta1/inferenceservices", "ml", "bert"] = foreign
        code = await run_cli(km, [*registered, "deploy", "iris:1", "--name", "bert", *k8s])
        assert code != 0
        assert "was not deployed by cube-lab" in capsys.readouterr().err


def test_a_status_from_before_the_last_change_is_not_ready() -> None:
    obj = {
        "metadata": {"name": "iris", "namespace": "ml", "generation": 3},
        "status": {**READY, "observedGeneration": 2},
    }
    assert progress(obj).status == "pending"
    obj["status"]["observedGeneration"] = 3
    got = progress(obj)
    assert got.status == "ready" and got.url == "http://iris.ml.example.com"
