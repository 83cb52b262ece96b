"""Deep links into cube-lab's views (``cube_lab.lab_links``, src/links.ts): where the lab is,
what each handle links to, the live view's link, and a real server handing the lab's address
to the kernels it starts."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psutil
import pytest
from server_util import TOKEN, free_port, start_server, wait_up

from cube_lab import lab_links
from cube_lab.sdk.labeling import LabelingProject
from cube_lab.sdk.models import ModelVersion
from cube_lab.sdk.pipelines import Run
from cube_lab.sdk.serving import Deployment
from cube_lab.sdk.training import Job
from cube_lab.sdk.tuning import Experiment
from cube_lab.sdk.views import link_html


def query(url: str | None) -> tuple[str, dict[str, str]]:
    assert url is not None
    parts = urlsplit(url)
    return parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}


def test_the_lab_is_the_servers_address_or_under_the_hub_its_path() -> None:
    assert lab_links.lab_url("/", "http://127.0.0.1:8888/", under_hub=False) == (
        "http://127.0.0.1:8888/lab"
    )
    # the hub's proxy is the browser's way in; the server's own address is not reachable
    assert lab_links.lab_url("/user/alice/", "http://10.0.0.5:41234/user/alice/", True) == (
        "/user/alice/lab"
    )
    assert lab_links.lab_url("/base/", None, under_hub=False) == "/base/lab"


def test_no_lab_known_means_no_link(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lab_links.ENV_LAB_URL, raising=False)
    assert Job({"id": "j1", "status": "running"}).url is None
    assert link_html(None) == ""
    with pytest.raises(ValueError, match="no cube-lab view"):
        lab_links.link("kernel", id="1")


def test_every_handle_links_to_its_view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lab_links.ENV_LAB_URL, "/user/张三/lab")
    assert query(Job({"id": "j1", "status": "running"}).url) == (
        "/user/张三/lab",
        {"cube-open": "job", "id": "j1"},
    )
    assert query(Experiment({"id": "e1", "status": "done"}).url)[1] == {
        "cube-open": "experiment",
        "id": "e1",
    }
    run = Run({"id": "r1", "status": "running", "pipeline_path": "flows/etl v2.pipeline"})
    assert query(run.url)[1] == {"cube-open": "run", "id": "r1", "path": "flows/etl v2.pipeline"}
    deployment = Deployment({"id": "d", "status": "running", "project": "课程", "name": "iris"})
    assert query(deployment.url)[1] == {
        "cube-open": "deployment",
        "project": "课程",
        "name": "iris",
    }
    version = ModelVersion({"model": "iris", "version": 3, "project": "p", "flavor": "sklearn"})
    assert query(version.url)[1] == {
        "cube-open": "model",
        "project": "p",
        "name": "iris",
        "version": "3",
    }
    labeling = LabelingProject({"name": "cats", "project": "p", "dataset": "d", "type": "image"})
    assert query(labeling.url)[1] == {"cube-open": "labeling", "project": "p", "name": "cats"}
    # the live view's title carries the link, escaped
    html = link_html("/lab?cube-open=job&id=<x>")
    assert "href='/lab?cube-open=job&amp;id=&lt;x&gt;'" in html and "Open in JupyterLab" in html


def test_a_server_tells_its_kernels_where_the_lab_is(tmp_path: Path) -> None:
    """A real `jupyter server` with cube-lab: a kernel it starts holds the lab's address."""
    port = free_port()
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    proc = start_server(root, data, port, tmp_path)
    try:
        wait_up(port)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/kernels",
            method="POST",
            data=json.dumps({"name": "python3"}).encode(),
            headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201
        env = kernel_env(proc.pid)
        assert env.get(lab_links.ENV_LAB_URL) == f"http://127.0.0.1:{port}/lab", env
    finally:
        proc.terminate()
        proc.wait(30)


def kernel_env(server_pid: int) -> dict[str, Any]:
    """The environment of the (one) kernel process the server started."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for child in psutil.Process(server_pid).children(recursive=True):
            if "ipykernel" in " ".join(child.cmdline()):
                return dict(child.environ())
        time.sleep(0.2)
    raise AssertionError("the server started no kernel")
