"""cube_lab.k8s against a real HTTP mock of the API server (kmock) with the real
kubernetes_asyncio client: configuration, custom objects, watch, pod logs, errors."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import pytest
import yaml
from k8s_mock import api_server

from cube_lab.errors import Conflict, Forbidden, InvalidInput, NotFound
from cube_lab.k8s import ClientMissing, ClusterConfig, ClusterUnavailable, Kube, Resource
from cube_lab.k8s.names import is_label, k8s_name

JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "demo", "namespace": "ml"},
    "spec": {"pytorchReplicaSpecs": {}},
}
RES = Resource.of(JOB)
LAB_NS = {"namespace": "ml"}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_names_are_dns_1123_labels() -> None:
    assert k8s_name("My Job_1") == "my-job-1"
    assert k8s_name("3d-unet") == "job-3d-unet"
    assert k8s_name("---") == "job"
    assert len(k8s_name("x" * 80)) == 50 and is_label(k8s_name("x" * 80))
    assert is_label("a-b1") and not is_label("1ab") and not is_label("a_b") and not is_label("a-")


def test_resource_of_a_manifest() -> None:
    assert Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob") == RES
    with pytest.raises(InvalidInput, match="apiVersion"):
        Resource.of({"apiVersion": "v1", "kind": "Pod"})


def test_missing_client_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes_asyncio", None)  # import raises ImportError

    async def go() -> None:
        async with Kube(ClusterConfig(host="http://127.0.0.1:1")):
            pass

    with pytest.raises(ClientMissing, match="not installed") as err:
        asyncio.run(go())
    assert "cube-lab[kubernetes]" in err.value.detail


def test_no_configuration_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("KUBECONFIG", "CUBE_LAB_K8S_HOST", "CUBE_LAB_K8S_NAMESPACE"):
        monkeypatch.delenv(var, raising=False)
    config = ClusterConfig.from_env()  # $HOME is a fresh folder: no ~/.kube/config

    async def go() -> None:
        async with Kube(config):
            pass

    with pytest.raises(ClusterUnavailable, match="no Kubernetes cluster is configured"):
        asyncio.run(go())
    assert config.default_namespace() == "default"


def test_env_and_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBE_LAB_K8S_HOST", "https://api:6443")
    monkeypatch.setenv("CUBE_LAB_K8S_NAMESPACE", "team")
    config = ClusterConfig.from_env(namespace=None, context="c1")
    assert (config.host, config.namespace, config.context) == ("https://api:6443", "team", "c1")
    assert ClusterConfig.from_env(namespace="other").default_namespace() == "other"


async def test_kubeconfig_context_token_and_namespace(tmp_path: Path) -> None:
    async with api_server() as km:
        kubeconfig = tmp_path / "config"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "elsewhere",
                    "clusters": [
                        {"name": "lab", "cluster": {"server": str(km.url).rstrip("/")}},
                        {"name": "far", "cluster": {"server": f"http://127.0.0.1:{closed_port()}"}},
                    ],
                    "users": [{"name": "me", "user": {"token": "s3cret"}}],
                    "contexts": [
                        {
                            "name": "lab",
                            "context": {"cluster": "lab", "user": "me", "namespace": "ml"},
                        },
                        {"name": "elsewhere", "context": {"cluster": "far", "user": "me"}},
                    ],
                }
            )
        )
        config = ClusterConfig(kubeconfig=str(kubeconfig), context="lab")
        assert config.default_namespace() == "ml"
        assert ClusterConfig(kubeconfig=str(kubeconfig)).default_namespace() == "default"
        async with Kube(config) as kube:
            assert kube.namespace == "ml"
            created = await kube.create(JOB)
            assert created["metadata"]["name"] == "demo"
        (request,) = list(km)
        assert request.headers["Authorization"] == "Bearer s3cret"
        assert km.objects["kubeflow.org/v1/pytorchjobs", "ml", "demo"]["spec"] == JOB["spec"]

        with pytest.raises(InvalidInput, match="cannot use the kubeconfig"):
            async with Kube(ClusterConfig(kubeconfig=str(kubeconfig), context="nope")):
                pass


async def test_objects_watch_and_logs() -> None:
    async with api_server() as km, Kube(ClusterConfig(str(km.url), "t", namespace="ml")) as kube:
        await kube.create(JOB)
        assert (await kube.get(RES, "demo"))["kind"] == "PyTorchJob"
        assert [o["metadata"]["name"] for o in await kube.list(RES)] == ["demo"]
        with pytest.raises(NotFound, match="read PyTorchJob gone"):
            await kube.get(RES, "gone")

        async def change_then_delete() -> None:
            await asyncio.sleep(0.1)
            status = {"conditions": [{"type": "Running", "status": "True"}]}
            url = "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs/demo"
            assert (await km.patch(url, json={"status": status})).status == 200
            await asyncio.sleep(0.1)
            assert await kube.delete(RES, "demo") is True

        task = asyncio.create_task(change_then_delete())
        seen = [(event, obj.get("status")) async for event, obj in kube.watch(RES, "demo")]
        await task
        running = {"conditions": [{"type": "Running", "status": "True"}]}
        assert seen == [("ADDED", None), ("MODIFIED", running), ("DELETED", running)]
        assert await kube.delete(RES, "demo") is False  # already gone

        pod = {"metadata": {"name": "p1", "namespace": "ml", "labels": {"job": "a"}}}
        km.objects["v1/pods", "ml", "p1"] = pod | {"spec": {"containers": [{"name": "c"}]}}
        km.objects["v1/pods", "ml", "p2"] = {
            "metadata": {"name": "p2", "namespace": "ml", "labels": {"job": "b"}}
        }
        assert [p["metadata"]["name"] for p in await kube.pods("job=a")] == ["p1"]
        logs = km["get /api/v1/namespaces/ml/pods/p1/log"] << b"one\ntwo"
        lines = [line async for line in kube.pod_log("p1", "c", follow=True)]
        assert lines == ["one\n", "two"]
        assert logs[0].params == {"container": "c", "follow": "True"}


async def test_api_errors_are_clear() -> None:
    async with api_server() as km:
        forbidden = {
            "kind": "Status",
            "code": 403,
            "message": 'tfjobs.kubeflow.org is forbidden: User "bob" cannot create resource',
        }
        km["post /apis/kubeflow.org/v1/namespaces/ml/tfjobs"] << 403 << forbidden
        async with Kube(ClusterConfig(host=str(km.url), namespace="ml")) as kube:
            await kube.create(JOB)
            with pytest.raises(Conflict, match=r"create PyTorchJob demo .* already exists"):
                await kube.create(JOB)
            with pytest.raises(Forbidden, match=r"refused it \(403 Forbidden\)") as err:
                await kube.create(JOB | {"kind": "TFJob"})
            assert 'User "bob" cannot create' in err.value.detail
            assert "RBAC" in err.value.detail

    port = closed_port()
    with pytest.raises(ClusterUnavailable, match=f"127.0.0.1:{port} cannot be reached"):
        async with Kube(ClusterConfig(host=f"http://127.0.0.1:{port}")) as kube:
            await kube.get(RES, "demo")
