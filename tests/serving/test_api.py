"""Deployments through the REST API (a real jupyter-server) and the CLI."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from cube_lab import cli
from cube_lab.identity import Caller


def save_model(folder: Path) -> Path:
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    x, y = load_iris(return_X_y=True)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "iris.joblib"
    joblib.dump(RandomForestClassifier(n_estimators=5, random_state=0).fit(x, y), path)
    return path


ROW = {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", "data": [5.1, 3.5, 1.4, 0.2]}]}


async def test_deploy_call_and_undeploy_through_the_api(api: Any, jp_root_dir: Path) -> None:
    save_model(jp_root_dir / "models")
    for _ in range(2):
        status, _ = await api(
            "alice", "POST", "models", {"name": "iris", "path": "models/iris.joblib"}
        )
        assert status == 201
    status, dep = await api("alice", "POST", "deployments", {"model": "iris:1", "replicas": 1})
    assert status == 201, dep
    assert dep["status"] == "running" and dep["endpoint"].startswith("http://127.0.0.1:")
    try:
        status, answer = await api("alice", "POST", "projects/alice/deployments/iris/infer", ROW)
        assert status == 200 and answer["status"] == 200 and answer["version"] == "1"
        assert answer["body"]["outputs"][0]["data"] == [0]
        # the model's metadata, for the panel's test form
        status, meta = await api("alice", "GET", "projects/alice/deployments/iris/infer")
        assert status == 200 and meta["status"] == 200
        assert meta["body"]["inputs"] == [{"name": "input-0", "datatype": "FP64", "shape": [-1, 4]}]
        status, answer = await api(
            "alice", "POST", "projects/alice/deployments/iris/infer", {"inputs": []}
        )
        assert status == 200 and answer["status"] == 400 and "inputs" in answer["body"]["error"]
        status, dep = await api(
            "alice",
            "POST",
            "projects/alice/deployments/iris/traffic",
            {"action": "canary", "version": "2", "percent": 20},
        )
        assert status == 200 and [t["weight"] for t in dep["traffic"]] == [80.0, 20.0]
        status, dep = await api(
            "alice",
            "POST",
            "projects/alice/deployments/iris/traffic",
            {"action": "split", "percent": 50},
        )
        assert status == 200 and [t["weight"] for t in dep["traffic"]] == [50.0, 50.0]
        status, text = await api("alice", "GET", "projects/alice/deployments/iris/metrics")
        assert (
            status == 200 and b'cube_serving_requests_total{deployment="iris",version="1"' in text
        )
        status, log = await api("alice", "GET", "projects/alice/deployments/iris/log")
        assert status == 200 and "listening" in log["text"]
        status, listed = await api("alice", "GET", "deployments")
        assert [d["name"] for d in listed["deployments"]] == ["iris"]
        # bob sees nothing and touches nothing
        status, listed = await api("bob", "GET", "deployments")
        assert status == 200 and listed["deployments"] == []
        for method, path in (
            ("GET", "projects/alice/deployments/iris"),
            ("DELETE", "projects/alice/deployments/iris"),
            ("POST", "projects/alice/deployments/iris/infer"),
            ("GET", "projects/bob/deployments/iris"),
        ):
            status, err = await api("bob", method, path, ROW if method == "POST" else None)
            assert status == 404 and err["error"], (method, path)
        status, err = await api("alice", "POST", "deployments", {"model": "iris:9"})
        assert status == 404 and "no version '9'" in err["error"]
        status, err = await api("alice", "POST", "deployments", {"model": "iris:1", "replica": 2})
        assert status == 400 and "unknown fields" in err["error"]
    finally:
        status, dep = await api("alice", "DELETE", "projects/alice/deployments/iris")
    assert status == 200 and dep["status"] == "stopped"
    status, _ = await api(
        "alice", "DELETE", "projects/alice/deployments/iris", params={"forget": "true"}
    )
    assert status == 204


def test_cli_deploy_prints_the_endpoint_last(
    ws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = save_model(tmp_path / "models")
    ws.registry.register(Caller(cli.local_username()), name="iris", path=path)
    base = ["--data-dir", str(ws.settings.data_dir)]
    assert cli.main([*base, "deploy", "iris:1", "--name", "cli-iris"]) == 0
    endpoint = capsys.readouterr().out.strip().splitlines()[-1]
    try:
        request = urllib.request.Request(
            f"{endpoint}/v2/models/iris/infer", json.dumps(ROW).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            assert json.loads(resp.read())["outputs"][0]["data"] == [0]
        assert cli.main([*base, "deployments"]) == 0
        table = capsys.readouterr().out
        assert "cli-iris" in table and "running" in table and endpoint in table
        assert cli.main([*base, "deploy", "iris:1", "--name", "cli-iris"]) == 1  # already running
        assert "already running" in capsys.readouterr().err
    finally:
        assert cli.main([*base, "undeploy", "cli-iris"]) == 0
    assert "stopped" in capsys.readouterr().out
