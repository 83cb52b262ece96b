"""KServe through the server's REST API (``/kserve/inferenceservices``), with the server's
cluster credentials, against kmock with the real client: deploy a registered version (the
InferenceService checked against KServe's CRD), follow it to ready, canary / rollback /
promote, list and delete; another user sees none of it and cannot touch it; a name taken
by another project is refused. No cluster runs here: KServe's part (status) is the test's."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from k8s_mock import api_server

from tests.serving.test_kserve import check

NS = "ml"
ISVCS = "serving.kserve.io/v1beta1/inferenceservices"
READY = {
    "conditions": [{"type": "Ready", "status": "True"}],
    "url": "http://iris.ml.example.com",
    "components": {"predictor": {"traffic": [{"revisionName": "iris-1", "percent": 100}]}},
}


def write_model(root: Path) -> str:
    model = root / "kserve-model" / "model.joblib"
    model.parent.mkdir(parents=True, exist_ok=True)
    model.write_bytes(b"only the path and the flavor matter to the manifest")
    return "kserve-model/model.joblib"


async def test_a_user_deploys_to_kserve_with_the_servers_credentials(
    api: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_model(jp_root_dir)
    for _ in (1, 2):
        code, version = await api("alice", "POST", "models", {"name": "iris", "path": path})
        assert code == 201, version
    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        monkeypatch.setenv("CUBE_LAB_K8S_TOKEN", "the-servers-own")
        monkeypatch.setenv("CUBE_LAB_K8S_NAMESPACE", NS)
        where = "kserve/inferenceservices"
        code, got = await api("alice", "POST", where, {"model": "iris:1", "replicas": 2})
        assert code == 202, got
        assert (got["name"], got["namespace"], got["project"]) == ("iris", NS, "alice")
        obj = km.objects[ISVCS, NS, "iris"].raw
        check(obj)  # a valid InferenceService reached the API server
        assert obj["spec"]["predictor"]["minReplicas"] == 2
        # the pod-label vocabulary, on the InferenceService (KServe copies its labels to the
        # predictor's pods) and on the predictor's pods themselves; the old labels stay
        vocabulary = {
            "cube-lab.io/project": "alice",
            "cube-lab.io/owner": "alice",
            "cube-lab.io/kind": "deployment",
            "cube-lab.io/deployment-id": "iris",
        }
        assert vocabulary.items() <= obj["metadata"]["labels"].items()
        assert obj["metadata"]["labels"]["cube-lab/project"] == "alice"
        assert obj["spec"]["predictor"]["labels"] == vocabulary
        assert obj["spec"]["predictor"]["model"]["storageUri"].startswith(
            "pvc://cube-lab-artifacts/"
        )

        url = f"/apis/{ISVCS.rsplit('/', 1)[0]}/namespaces/{NS}/inferenceservices/iris"
        assert (await km.patch(url, json={"status": READY})).status == 200
        deadline = time.monotonic() + 20
        while (got := (await api("alice", "GET", f"{where}/iris"))[1])["status"] != "ready":
            assert time.monotonic() < deadline, got
            await asyncio.sleep(0.05)
        assert got["url"] == "http://iris.ml.example.com"

        # bob: none of it is his to see or change
        assert (await api("bob", "GET", where))[1]["inferenceservices"] == []
        assert (await api("bob", "GET", f"{where}/iris"))[0] == 404
        assert (await api("bob", "DELETE", f"{where}/iris"))[0] == 404
        body = {"action": "rollback"}
        assert (await api("bob", "POST", f"{where}/iris/traffic", body))[0] == 404
        code, err = await api("bob", "POST", where, {"model": "iris:1"})
        assert code == 404, err  # alice's model is not his to deploy
        bob_path = write_model(jp_root_dir / "bob-area")
        his = {"name": "iris", "path": f"bob-area/{bob_path}"}
        assert (await api("bob", "POST", "models", his))[0] == 201
        code, err = await api("bob", "POST", where, {"model": "iris:1"})
        assert code == 409 and "belongs to another project" in err["error"], err
        assert km.objects[ISVCS, NS, "iris"].raw["spec"] == obj["spec"]  # alice's, untouched

        # a new version goes out as a 10 % canary, then rollback and promote
        code, got = await api("alice", "POST", where, {"model": "iris:2", "canary": 10})
        assert code == 202, got
        predictor = km.objects[ISVCS, NS, "iris"].raw["spec"]["predictor"]
        assert predictor["canaryTrafficPercent"] == 10
        first_uri = obj["spec"]["predictor"]["model"]["storageUri"]
        assert predictor["model"]["storageUri"] not in ("", first_uri)
        code, got = await api("alice", "POST", f"{where}/iris/traffic", {"action": "rollback"})
        assert code == 200 and got["canary_percent"] == 0, got
        code, got = await api("alice", "POST", f"{where}/iris/traffic", {"action": "promote"})
        assert code == 200 and got["canary_percent"] is None, got
        code, err = await api(
            "alice", "POST", f"{where}/iris/traffic", {"action": "canary", "percent": 140}
        )
        assert code == 400 and "from 0 to 100" in err["error"]

        listed = (await api("alice", "GET", where))[1]["inferenceservices"]
        assert [(i["name"], i["project"]) for i in listed] == [("iris", "alice")]
        for bad, why in (
            ({"model": "iris:1", "storage_uri": "pvc://cube-lab-artifacts/bob"}, "unknown"),
            ({"model": "iris:1", "replicas": -1}, "replicas"),
            ({}, "model is required"),
        ):
            code, err = await api("alice", "POST", where, bad)
            assert code == 400 and why in err["error"], (bad, err)

        code, gone = await api("alice", "DELETE", f"{where}/iris")
        assert (code, gone) == (200, {"deleted": "iris", "backend": "kubernetes"})
        assert km.objects[ISVCS, NS, "iris"].deleted
        assert (await api("alice", "GET", f"{where}/iris"))[0] == 404

        monkeypatch.setenv("CUBE_LAB_K8S_HOST", "http://127.0.0.1:1")
        code, err = await api("alice", "POST", where, {"model": "iris:1"})
        assert code == 503 and "cannot be reached" in err["error"], err
