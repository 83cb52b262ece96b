"""Training jobs on Kubernetes, end to end against kmock (a real HTTP mock of the API
server) with the real kubernetes_asyncio client: submit each kind, see the object (checked
against its CRD), follow status changes, read the pods' logs, stop, and the errors.
No cluster runs here: the operators' part (status, pods) is played by the test."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest
from k8s_mock import api_server

from cube_lab.cli import main
from cube_lab.errors import Conflict, Forbidden
from cube_lab.identity import Caller
from cube_lab.k8s import ClusterConfig, ClusterUnavailable
from cube_lab.k8s.objects import object_refs
from cube_lab.training import kubernetes
from cube_lab.training.cluster import ClusterJob, job_status, pod_selector
from cube_lab.training.spec import JobSpec
from tests.training.test_k8s import check

NS = "ml"
BASE = {"script": "train.py", "args": ["--epochs", "2"], "image": "reg/train:1"}
BASE |= {"backend": "kubernetes", "workers": 2}
PLURALS = {
    "PyTorchJob": "kubeflow.org/v1/pytorchjobs",
    "TFJob": "kubeflow.org/v1/tfjobs",
    "MPIJob": "kubeflow.org/v2beta1/mpijobs",
    "TrainJob": "trainer.kubeflow.org/v1alpha1/trainjobs",
}


async def until(what: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def use(ws: Any, km: Any, **kw: Any) -> None:
    ws.training.cluster_config = ClusterConfig(host=str(km.url), token="t0k", namespace=NS, **kw)
    ws.training.cluster_poll_s = 0.05


async def set_status(km: Any, kind: str, name: str, status: dict[str, Any]) -> None:
    """What the operator does: a status change, through the API (so watches see it)."""
    group_version, plural = PLURALS[kind].rsplit("/", 1)
    url = f"/apis/{group_version}/namespaces/{NS}/{plural}/{name}"
    response = await km.patch(url, json={"status": status})
    assert response.status == 200, await response.text()


def conditions(*types: str) -> dict[str, Any]:
    return {"conditions": [{"type": t, "status": "True", "reason": t} for t in types]}


def add_pod(km: Any, name: str, labels: dict[str, str], container: str, log: bytes) -> Any:
    """A pod as the operator would create it, and its log; returns the log's requests."""
    km.objects["v1/pods", NS, name] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": labels},
        "spec": {"containers": [{"name": "sidecar"}, {"name": container}]},
        "status": {"phase": "Running"},
    }
    return km[f"get /api/v1/namespaces/{NS}/pods/{name}/log"] << log


JOB_NAME = "training.kubeflow.org/job-name"
CASES = [
    # framework, kind, expected kind, the pods' labels, the container the log comes from
    ("pytorch", None, "PyTorchJob", {"training.kubeflow.org/replica-type": "master"}, "pytorch"),
    ("tensorflow", None, "TFJob", {"training.kubeflow.org/replica-type": "worker"}, "tensorflow"),
    ("mpi", None, "MPIJob", {"training.kubeflow.org/job-role": "launcher"}, "launcher"),
    ("pytorch", "trainjob", "TrainJob", {"jobset.sigs.k8s.io/replicatedjob-name": "node"}, "node"),
]


@pytest.mark.parametrize("framework, kind, expect, labels, container", CASES)
async def test_submit_follow_and_log_each_kind(
    ws: Any,
    alice: Caller,
    framework: str,
    kind: str | None,
    expect: str,
    labels: dict[str, str],
    container: str,
) -> None:
    service = ws.training
    async with api_server() as km:
        use(ws, km)
        job = await asyncio.to_thread(
            service.prepare, alice, BASE | {"framework": framework, "kind": kind}
        )
        job_id = await service.launch(job)
        name = job.name
        assert name.startswith("train-") and name.endswith(job_id[-6:])

        # the object, as created on the API server, is the manifest and fits the CRD
        obj = km.objects[PLURALS[expect], NS, name].raw
        check(obj)
        spec = JobSpec.from_dict(BASE | {"framework": framework, "kind": kind})
        labels_sent = {
            "cube-lab.io/job-id": job_id,
            "cube-lab.io/owner": "alice",
            "cube-lab.io/project": "alice",  # alice's personal project
            "cube-lab.io/kind": "job",
        }
        assert [obj] == kubernetes.manifests(spec, name, namespace=NS, labels=labels_sent)
        # and every pod the operator makes from it carries them (DCGM joins on these)
        if expect == "TrainJob":
            (patch,) = obj["spec"]["runtimePatches"]
            (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
            pod_templates = [node["template"]["spec"]["template"]]
        else:
            replicas = next(v for k, v in obj["spec"].items() if k.endswith("ReplicaSpecs"))
            pod_templates = [r["template"] for r in replicas.values()]
        assert pod_templates
        for template in pod_templates:
            assert labels_sent.items() <= template["metadata"]["labels"].items()
        assert all(r.headers["Authorization"] == "Bearer t0k" for r in list(km))

        view = service.get(alice, job_id)
        assert (view.backend, view.status) == ("kubernetes", "queued")
        assert view.cluster == {
            "namespace": NS,
            "kind": expect,
            "name": name,
            "server": str(km.url),
        }

        # the operator starts the pods; one more pod belongs to another job
        selector_label = "jobset.sigs.k8s.io/jobset-name" if expect == "TrainJob" else JOB_NAME
        ours = add_pod(
            km, f"{name}-0", {selector_label: name, **labels}, container, b"step=1 loss=0.5\n"
        )
        decoy = add_pod(km, "other-0", {selector_label: "other", **labels}, container, b"NOT\n")
        if expect == "MPIJob":  # MPI workers run sshd; the launcher has every rank's output
            worker = {JOB_NAME: name, "training.kubeflow.org/job-role": "worker"}
            decoy = add_pod(km, f"{name}-worker-0", worker, "worker", b"sshd noise\n")
        running = (
            {"jobsStatus": [{"name": "node", "active": 2, "ready": 2}]}
            if expect == "TrainJob"
            else conditions("Created", "Running")
        )
        await set_status(km, expect, name, running)
        await until(lambda: service.get(alice, job_id).status == "running")
        assert service.get(alice, job_id).started_at is not None
        line = f"[pod {name}-0] step=1 loss=0.5\n"
        await until(lambda: line in service.tail_log(alice, job_id).text)
        assert ours[0].params["container"] == container and ours[0].params["follow"] == "True"
        assert len(decoy) == 0

        done = (
            conditions("Complete") if expect == "TrainJob" else conditions("Created", "Succeeded")
        )
        await set_status(km, expect, name, done)
        assert await service.wait(job_id) == "succeeded"
        view = service.get(alice, job_id)
        assert (view.status, view.error) == ("succeeded", None)
        assert view.finished_at is not None
        chunk = service.tail_log(alice, job_id)
        assert chunk.done and chunk.text.count(line) == 1
        assert service.metrics(alice, job_id).last == {"loss": 0.5}  # from the pod's log


async def test_failed_condition_and_stop(ws: Any, alice: Caller) -> None:
    service = ws.training
    async with api_server() as km:
        use(ws, km)
        job = await asyncio.to_thread(service.prepare, alice, BASE | {"name": "demo"})
        job_id = await service.launch(job)
        assert job.name == "demo"  # a given name names the object
        failed = conditions("Created", "Failed")
        failed["conditions"][-1]["message"] = "PyTorchJob demo is failed because 1 Master failed."
        await set_status(km, "PyTorchJob", "demo", failed)
        assert await service.wait(job_id) == "failed"
        view = service.get(alice, job_id)
        assert view.error == "PyTorchJob demo is failed because 1 Master failed."

        # the name is taken while the old object is there: a re-run gets a fresh one
        again = await asyncio.to_thread(service.rerun, alice, job_id)
        new_id = await service.launch(again)
        assert again.name.startswith("demo-") and again.name != "demo"
        await set_status(km, "PyTorchJob", again.name, conditions("Created", "Running"))
        await until(lambda: service.get(alice, new_id).status == "running")

        view = await asyncio.to_thread(service.stop, alice, new_id)
        assert (view.status, view.error) == ("cancelled", "stopped")
        assert km.objects[PLURALS["PyTorchJob"], NS, again.name].deleted
        (delete,) = [r for r in list(km) if r.method == "DELETE"]
        assert delete.params["propagationPolicy"] == "Background"  # the pods go too
        assert await service.wait(new_id) == "cancelled"
        with pytest.raises(Conflict, match="already ended"):
            service.stop(alice, new_id)


async def test_deleted_outside_is_interrupted(ws: Any, alice: Caller) -> None:
    service = ws.training
    async with api_server() as km:
        use(ws, km)
        job = await asyncio.to_thread(service.prepare, alice, BASE | {"framework": "tensorflow"})
        job_id = await service.launch(job)
        await until(lambda: job.status == "queued" and job._loop is not None)
        response = await km.delete(f"/apis/kubeflow.org/v1/namespaces/{NS}/tfjobs/{job.name}")
        assert response.status == 200
        assert await service.wait(job_id) == "interrupted"
        assert (
            service.get(alice, job_id).error == f"the TFJob {job.name} was deleted from the cluster"
        )


async def test_submit_errors_are_clear_and_leave_no_record(ws: Any, alice: Caller) -> None:
    service = ws.training
    async with api_server() as km:
        use(ws, km)
        # 409: an object of that name exists (not ours): it is left as it was
        km.objects[PLURALS["PyTorchJob"], NS, "demo"] = {"metadata": {"name": "demo"}, "spec": {}}
        job = await asyncio.to_thread(service.prepare, alice, BASE | {"name": "demo"})
        with pytest.raises(Conflict, match="create PyTorchJob demo in namespace ml") as err:
            await service.launch(job)
        assert "Pick another job name" in err.value.detail
        assert km.objects[PLURALS["PyTorchJob"], NS, "demo"]["spec"] == {}

        # 403: RBAC says no; the API server's reason is passed on
        status = {"kind": "Status", "code": 403, "message": 'User "alice" cannot create tfjobs'}
        km[f"post /apis/kubeflow.org/v1/namespaces/{NS}/tfjobs"] << 403 << status
        job = await asyncio.to_thread(service.prepare, alice, BASE | {"framework": "tensorflow"})
        with pytest.raises(Forbidden, match="403 Forbidden") as err:
            await service.launch(job)
        assert 'User "alice" cannot create tfjobs' in err.value.detail
        assert service.list(alice) == []

    # the API server is down
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ws.training.cluster_config = ClusterConfig(host=f"http://127.0.0.1:{port}", namespace=NS)
    job = await asyncio.to_thread(service.prepare, alice, BASE)
    with pytest.raises(ClusterUnavailable, match="cannot be reached"):
        await service.launch(job)
    assert service.list(alice) == []


async def test_objects_after_a_failure_are_removed(ws: Any, alice: Caller) -> None:
    """A PodGroup created before its job is deleted again when the job is refused."""
    async with api_server() as km:
        spec = JobSpec.from_dict(BASE | {"gang": True, "queue": "q"})
        docs = [kubernetes.podgroup(spec, "g", NS), *kubernetes.manifests(spec, "g", namespace=NS)]
        check(docs[0])
        km[f"post /apis/kubeflow.org/v1/namespaces/{NS}/pytorchjobs"] << 403 << {"code": 403}
        config = ClusterConfig(host=str(km.url), namespace=NS)
        job = ClusterJob("j", ws.settings.data_dir, object_refs(docs), config, manifests=docs)
        with pytest.raises(Forbidden):
            await job.submit()
        assert km.objects["scheduling.volcano.sh/v1beta1/podgroups", NS, "g"].deleted


async def test_admission_hook_runs_before_anything(ws: Any, alice: Caller) -> None:
    seen: list[tuple[str, str, int]] = []

    def quota(caller: Caller, project: str, spec: JobSpec, job_id: str) -> None:
        seen.append((caller.username, project, spec.gpus_total))
        raise Forbidden("GPU quota exceeded", "project alice has 0 of 4 GPUs left")

    ws.training.admission = quota
    async with api_server() as km:
        use(ws, km)
        with pytest.raises(Forbidden, match="GPU quota exceeded"):
            ws.training.prepare(alice, BASE | {"resources": {"gpus": 2}})
        assert seen == [("alice", "alice", 4)]
        assert list(km) == [] and ws.training.list(alice) == []


def test_status_mapping() -> None:
    def pj(*types: str) -> dict[str, Any]:
        return {"kind": "PyTorchJob", "status": conditions(*types)}

    assert job_status({"kind": "PyTorchJob"}) == ("queued", None)
    assert job_status(pj("Created")) == ("queued", None)
    assert job_status(pj("Created", "Running")) == ("running", None)
    assert job_status(pj("Created", "Running", "Restarting")) == ("running", None)
    assert job_status(pj("Created", "Suspended")) == ("queued", None)
    assert job_status(pj("Created", "Succeeded")) == ("succeeded", None)
    assert job_status(pj("Created", "Failed")) == ("failed", "Failed")
    not_running = {"kind": "PyTorchJob", "status": {"conditions": [{"type": "Running"}]}}
    not_running["status"]["conditions"][0]["status"] = "False"
    assert job_status(not_running) == ("queued", None)
    tj = {"kind": "TrainJob", "status": {"jobsStatus": [{"name": "node", "active": 0}]}}
    assert job_status(tj) == ("queued", None)
    tj["status"]["jobsStatus"][0]["active"] = 1
    assert job_status(tj) == ("running", None)
    assert job_status({"kind": "TrainJob", "status": conditions("Complete")})[0] == "succeeded"
    assert job_status({"kind": "TrainJob", "status": conditions("Suspended")})[0] == "queued"
    assert pod_selector("MPIJob", "m") == (
        "training.kubeflow.org/job-name=m,training.kubeflow.org/job-role=launcher",
        ("launcher",),
    )


async def test_rest_api_submit_log_stop(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        monkeypatch.setenv("CUBE_LAB_K8S_NAMESPACE", NS)
        body = BASE | {"name": "rest-demo"}
        code, job = await api("alice", "POST", "training/jobs", body)
        assert code == 201, job
        assert job["cluster"]["name"] == "rest-demo" and job["status"] == "queued"
        check(km.objects[PLURALS["PyTorchJob"], NS, "rest-demo"].raw)

        code, err = await api("alice", "POST", "training/jobs", body)
        assert code == 409 and "already exists" in err["error"]

        add_pod(km, "rest-demo-master-0", {JOB_NAME: "rest-demo"}, "pytorch", b"hello\n")
        await set_status(km, "PyTorchJob", "rest-demo", conditions("Created", "Running"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            code, log = await api("alice", "GET", f"training/jobs/{job['id']}/log")
            if "hello" in log["text"]:
                break
            await asyncio.sleep(0.05)
        assert "[pod rest-demo-master-0] hello\n" in log["text"]
        assert (await api("bob", "POST", f"training/jobs/{job['id']}/stop"))[0] == 404
        code, stopped = await api("alice", "POST", f"training/jobs/{job['id']}/stop")
        assert (code, stopped["status"]) == (200, "cancelled")
        assert km.objects[PLURALS["PyTorchJob"], NS, "rest-demo"].deleted

        monkeypatch.setenv("CUBE_LAB_K8S_HOST", "http://127.0.0.1:1")
        code, err = await api("alice", "POST", "training/jobs", BASE)
        assert code == 503 and "cannot be reached" in err["error"]


async def test_cli_submits_and_follows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        labels = {JOB_NAME: "cli-demo", "training.kubeflow.org/job-role": "launcher"}
        add_pod(km, "cli-demo-launcher", labels, "launcher", b"[1,0]<stdout>:rank 0 ok\n")
        argv = ["train", "--backend", "kubernetes", "--framework", "mpi", "--image", "i:1"]
        argv += ["--name", "cli-demo", "--namespace", NS, "--workers", "2", "train.py"]
        cli = asyncio.create_task(asyncio.to_thread(main, argv))
        await until(lambda: any(key[2] == "cli-demo" for key in km.objects))
        await set_status(km, "MPIJob", "cli-demo", conditions("Created", "Running"))
        await set_status(km, "MPIJob", "cli-demo", conditions("Created", "Succeeded"))
        assert await cli == 0
        out, err = capsys.readouterr()
        assert f"MPIJob {NS}/cli-demo on {km.url}" in out
        assert "[pod cli-demo-launcher] [1,0]<stdout>:rank 0 ok\n" in out
        assert "succeeded" in err


async def test_a_restarted_server_follows_cluster_jobs_again(ws: Any, alice: Caller) -> None:
    """A cluster job outlives the process that followed it: recover() leaves it alone
    and resume_cluster_jobs() follows it to the end (a local job would be interrupted)."""
    from cube_lab.store.models import TrainingJob
    from cube_lab.training.service import TrainingService

    async with api_server() as km:
        use(ws, km)
        job = await asyncio.to_thread(ws.training.prepare, alice, BASE)
        await ws.training.submit(job)  # submitted; its follower "dies" before following
        gone = await asyncio.create_subprocess_exec("true")
        await gone.wait()
        with ws.store.write() as s:
            s.get(TrainingJob, job.job_id).runner_pid = gone.pid

        restarted = TrainingService(ws.store, ws.projects, ws.settings, ws.registry)
        use(type("W", (), {"training": restarted})(), km)
        assert restarted.recover() == []
        assert restarted.resume_cluster_jobs() == [job.job_id]
        add_pod(km, f"{job.name}-master-0", {JOB_NAME: job.name}, "pytorch", b"resumed\n")
        await set_status(km, "PyTorchJob", job.name, conditions("Created", "Running"))
        await set_status(km, "PyTorchJob", job.name, conditions("Created", "Succeeded"))
        assert await restarted.wait(job.job_id) == "succeeded"
        assert "resumed" in restarted.tail_log(alice, job.job_id).text
        with ws.store.read() as s:
            assert s.get(TrainingJob, job.job_id).runner_pid == os.getpid()


async def test_cancel_from_another_thread_deletes_the_job(ws: Any, alice: Caller) -> None:
    """What Ctrl-C in `cube-lab train` does: the job is deleted and ends cancelled."""
    async with api_server() as km:
        use(ws, km)
        job = await asyncio.to_thread(ws.training.prepare, alice, BASE | {"framework": "mpi"})
        job_id = await ws.training.launch(job)
        await until(lambda: job._loop is not None)
        await asyncio.to_thread(job.cancel)
        assert await ws.training.wait(job_id) == "cancelled"
        assert km.objects[PLURALS["MPIJob"], NS, job.name].deleted
        assert ws.training.get(alice, job_id).status == "cancelled"


@pytest.mark.parametrize("kind, plural", [(None, "PyTorchJob"), ("trainjob", "TrainJob")])
async def test_under_the_hub_the_pods_get_the_jobs_token_from_a_secret(
    ws: Any, alice: Caller, kind: str | None, plural: str
) -> None:
    """With the cube-lab service's issuer configured (as under the hub), a cluster job's
    pods get ``$CUBE_LAB_SERVICE_URL`` and a token of the job's own from a Secret created
    with the job (never written into the job object), deleted when the job is stopped."""
    import json

    from cube_lab import job_credentials

    issuer = job_credentials.Issuer(os.urandom(32), "http://hub:8020")
    job_credentials.configure(issuer)
    service = ws.training
    try:
        async with api_server() as km:
            use(ws, km)
            job = await asyncio.to_thread(service.prepare, alice, BASE | {"kind": kind})
            job_id = await service.launch(job)
            secret_name = f"{job.name}-token"
            secret = km.objects["v1/secrets", NS, secret_name].raw
            token = secret["stringData"]["CUBE_LAB_TOKEN"]
            assert secret["stringData"]["CUBE_LAB_SERVICE_URL"] == "http://hub:8020"
            claims = issuer.verify(token)
            assert (claims.kind, claims.id, claims.owner) == ("training", job_id, "alice")
            assert job_credentials.active(ws.store, claims)

            obj = km.objects[PLURALS[plural], NS, job.name].raw
            check(obj)  # still fits the CRD
            assert token not in json.dumps(obj)
            containers = (
                [obj["spec"]["trainer"]]
                if plural == "TrainJob"
                else [
                    c
                    for replica in obj["spec"]["pytorchReplicaSpecs"].values()
                    for c in replica["template"]["spec"]["containers"]
                ]
            )
            assert containers
            for container in containers:
                refs = {
                    e["name"]: e["valueFrom"]["secretKeyRef"]
                    for e in container["env"]
                    if "valueFrom" in e
                }
                assert refs == {
                    key: {"name": secret_name, "key": key}
                    for key in ("CUBE_LAB_SERVICE_URL", "CUBE_LAB_TOKEN")
                }
            if plural == "PyTorchJob":
                for replica in obj["spec"]["pytorchReplicaSpecs"].values():
                    labels = replica["template"]["metadata"]["labels"]
                    assert labels[kubernetes.SERVICE_ACCESS_LABEL] == "true"

            await asyncio.to_thread(service.stop, alice, job_id)
            assert km.objects["v1/secrets", NS, secret_name].deleted
            assert not job_credentials.active(ws.store, claims)
    finally:
        job_credentials.configure(None)
