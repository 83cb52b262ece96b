"""Katib experiments run by the service (REST ``backend: kubernetes``), end to end against
kmock with the real kubernetes_asyncio client: the Experiment the service creates (checked
against Katib's OpenAPI), its Trials copied into the record as Katib changes them, the best
trial, stop, tenancy, a restart, and under the hub the trials' token in a Secret. No cluster
runs here: Katib's part (status, Trial objects) is played by the test."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from alert_util import Hooks, webhook
from k8s_mock import api_server

from cube_lab import job_credentials
from cube_lab.identity import Caller
from cube_lab.k8s import ClusterConfig
from cube_lab.tuning.spec import parse
from tests.tuning.test_katib import check

NS = "ml"
EXPERIMENTS = "kubeflow.org/v1beta1/experiments"
TRIALS = "kubeflow.org/v1beta1/trials"
CONFIG = {
    "experimentName": "lr-search",
    "searchSpace": {"lr": {"_type": "loguniform", "_value": [0.001, 0.1]}},
    "trialCommand": "python3 trial.py",
    "maxTrialNumber": 3,
    "trialConcurrency": 2,
    "tuner": {"name": "Random", "classArgs": {"optimize_mode": "maximize"}},
}


async def until(what: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await what() if asyncio.iscoroutinefunction(what) else what()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def experiment_obj(km: Any) -> tuple[str, dict[str, Any]]:
    (key,) = [k for k in km.objects if k[0] == EXPERIMENTS and not km.objects[k].deleted]
    return key[2], km.objects[key].raw


async def katib_says(km: Any, name: str, status: dict[str, Any], namespace: str = NS) -> None:
    """What Katib's controller does: a status change, through the API (watches see it)."""
    url = f"/apis/{EXPERIMENTS.rsplit('/', 1)[0]}/namespaces/{namespace}/experiments/{name}"
    response = await km.patch(url, json={"status": status})
    assert response.status == 200, await response.text()


def add_trial(
    km: Any,
    experiment: str,
    suffix: str,
    assigned: dict[str, str],
    state: str,
    value: str | None,
    namespace: str = NS,
) -> None:
    """A Trial as Katib makes it: labelled with its Experiment, its parameters as Katib
    assigned them (strings), its conditions and observed objective."""
    name = f"{experiment}-{suffix}"
    status: dict[str, Any] = {
        "conditions": [{"type": "Created", "status": "True"}, {"type": state, "status": "True"}],
        "startTime": "2026-12-02T03:00:00Z",
    }
    if state in ("Succeeded", "Failed"):
        status["completionTime"] = "2026-12-02T03:01:00Z"
    if value is not None:
        status["observation"] = {"metrics": [{"name": "default", "latest": value}]}
    km.objects[TRIALS, namespace, name] = {
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "Trial",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"katib.kubeflow.org/experiment": experiment},
            "creationTimestamp": f"2026-12-02T03:00:0{len(km.objects) % 10}Z",
        },
        "spec": {"parameterAssignments": [{"name": k, "value": v} for k, v in assigned.items()]},
        "status": status,
    }


def running(trials: int) -> dict[str, Any]:
    return {"conditions": [{"type": "Running", "status": "True"}], "trials": trials}


def succeeded(best: str, assigned: dict[str, str], value: str) -> dict[str, Any]:
    return {
        "conditions": [
            {"type": "Running", "status": "False"},
            {"type": "Succeeded", "status": "True", "reason": "MaxTrialsReached"},
        ],
        "trials": 3,
        "trialsSucceeded": 2,
        "trialsFailed": 1,
        "currentOptimalTrial": {
            "bestTrialName": best,
            "parameterAssignments": [{"name": k, "value": v} for k, v in assigned.items()],
            "observation": {"metrics": [{"name": "default", "latest": value}]},
        },
    }


def code_folder(root: Path) -> None:
    (root / "search").mkdir(parents=True, exist_ok=True)
    (root / "search" / "trial.py").write_text("import nni\n")


async def test_rest_runs_a_katib_experiment_and_records_its_trials(
    api: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code_folder(jp_root_dir)
    body = {"config": CONFIG, "folder": "search", "backend": "kubernetes", "image": "reg/t:1"}
    hooks = Hooks()  # the experiments' ends reach alert rules as local ones do
    rule = {"name": "katib", "events": ["experiment.*"], "channel": webhook(hooks.url + "/k")}
    assert (await api("alice", "POST", "projects/alice/alert-rules", rule))[0] == 201
    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        monkeypatch.setenv("CUBE_LAB_K8S_NAMESPACE", NS)
        code, view = await api("alice", "POST", "tuning/experiments", body)
        assert code == 201, view
        assert view["status"] == "queued" and view["spec"]["backend"] == "kubernetes"
        name, obj = experiment_obj(km)
        check(obj)  # what reached the API server is a valid Katib Experiment
        assert name == view["spec"]["cluster"]["name"] and name.startswith("lr-search-")
        assert obj["metadata"]["labels"]["cube-lab.io/experiment-id"] == view["id"]
        # each trial's pods carry the pod-label vocabulary; Katib writes the Trial's name in
        trial_template = obj["spec"]["trialTemplate"]
        pod_meta = trial_template["trialSpec"]["spec"]["template"]["metadata"]
        assert pod_meta["labels"] == {
            "cube-lab.io/experiment-id": view["id"],
            "cube-lab.io/owner": "alice",
            "cube-lab.io/project": "alice",
            "cube-lab.io/kind": "trial",
            "cube-lab.io/trial": "${trialParameters.cubeLabTrialName}",
        }
        assert {
            "name": "cubeLabTrialName",
            "description": "the Trial's name, for its pods' cube-lab.io/trial label",
            "reference": "${trialSpec.Name}",
        } in trial_template["trialParameters"]
        container = obj["spec"]["trialTemplate"]["trialSpec"]["spec"]["template"]["spec"]
        assert container["containers"][0]["image"] == "reg/t:1"
        where = f"tuning/experiments/{view['id']}"
        assert (await api("bob", "GET", where))[0] == 404
        assert (await api("bob", "POST", f"{where}/stop"))[0] == 404

        add_trial(km, name, "aaaaaaaa", {"lr": "0.01"}, "Succeeded", "0.81")
        add_trial(km, name, "bbbbbbbb", {"lr": "0.05"}, "Running", None)
        add_trial(km, "someone-elses", "cccccccc", {"lr": "0.09"}, "Running", None)
        await katib_says(km, name, running(2))

        async def two_trials() -> Any:
            got = (await api("alice", "GET", where))[1]
            return got if got["status"] == "running" and len(got["trials"]) == 2 else None

        got = await until(two_trials)
        first = next(t for t in got["trials"] if t["parameters"] == {"lr": 0.01})
        assert (first["status"], first["final"]) == ("succeeded", 0.81)

        add_trial(km, name, "bbbbbbbb", {"lr": "0.05"}, "Succeeded", "0.93")
        add_trial(km, name, "dddddddd", {"lr": "0.002"}, "Failed", None)
        await katib_says(km, name, succeeded(f"{name}-bbbbbbbb", {"lr": "0.05"}, "0.93"))

        async def done() -> Any:
            got = (await api("alice", "GET", where))[1]
            return got if got["status"] == "done" else None

        got = await until(done)
        assert got["trial_count"] == 3 and got["finished_at"]
        assert got["best"]["parameters"] == {"lr": 0.05} and got["best"]["final"] == 0.93
        assert sorted(t["status"] for t in got["trials"]) == ["failed", "succeeded", "succeeded"]
        listed = (await api("alice", "GET", "tuning/experiments"))[1]["experiments"]
        assert [e["id"] for e in listed] == [view["id"]]
        assert (await api("bob", "GET", "tuning/experiments"))[1]["experiments"] == []
        code, err = await api("alice", "POST", f"{where}/resume")
        assert code == 409 and "cannot be resumed" in err["error"]

        # a second one, stopped: the Experiment is deleted and the record says stopped
        code, other = await api("alice", "POST", "tuning/experiments", body)
        assert code == 201, other
        other_name = other["spec"]["cluster"]["name"]
        assert other_name != name
        code, stopped = await api("alice", "POST", f"tuning/experiments/{other['id']}/stop")
        assert (code, stopped["status"]) == (200, "stopped")
        assert km.objects[EXPERIMENTS, NS, other_name].deleted

        async def told() -> Any:
            got = sorted(r["body"]["event"] for r in hooks.at("/k"))
            return got if len(got) >= 2 else None

        assert await until(told) == ["experiment.stopped", "experiment.succeeded"]
        hooks.close()

        for bad, why in (
            ({"backend": "slurm"}, "not local or kubernetes"),
            ({"backend": "local", "image": "x"}, "for backend kubernetes"),
        ):
            code, err = await api("alice", "POST", "tuning/experiments", {**body, **bad})
            assert code == 400 and why in err["error"], err

        monkeypatch.setenv("CUBE_LAB_K8S_HOST", "http://127.0.0.1:1")
        code, err = await api("alice", "POST", "tuning/experiments", body)
        assert code == 503 and "cannot be reached" in err["error"], err
        listed = (await api("alice", "GET", "tuning/experiments"))[1]["experiments"]
        assert len(listed) == 2  # the refused one left no record


async def test_under_the_hub_the_trials_get_the_experiments_token_from_a_secret(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    code_folder(tmp_path)
    spec = parse({**CONFIG, "trialCodeDirectory": "search"}, tmp_path)
    spec.backend = "kubernetes"
    issuer = job_credentials.Issuer(os.urandom(32), "http://hub:8020")
    job_credentials.configure(issuer)
    try:
        async with api_server() as km:
            ws.tuning.on_cluster.config = ClusterConfig(host=str(km.url), token="t", namespace=NS)
            run = await asyncio.to_thread(ws.tuning.on_cluster.prepare, alice, spec)
            experiment_id = await ws.tuning.on_cluster.launch(run)
            name, obj = experiment_obj(km)
            check(obj)
            secret = km.objects["v1/secrets", NS, f"{name}-token"].raw
            token = secret["stringData"]["CUBE_LAB_TOKEN"]
            assert secret["stringData"]["CUBE_LAB_SERVICE_URL"] == "http://hub:8020"
            claims = issuer.verify(token)
            assert (claims.kind, claims.id, claims.owner) == ("tuning", experiment_id, "alice")
            assert job_credentials.active(ws.store, claims)  # while the experiment runs
            assert token not in json.dumps(obj)
            (container,) = obj["spec"]["trialTemplate"]["trialSpec"]["spec"]["template"]["spec"][
                "containers"
            ]
            assert {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]} == {
                k: {"name": f"{name}-token", "key": k}
                for k in ("CUBE_LAB_SERVICE_URL", "CUBE_LAB_TOKEN")
            }
            await asyncio.to_thread(ws.tuning.stop, alice, experiment_id)
            assert km.objects[EXPERIMENTS, NS, name].deleted
            assert km.objects["v1/secrets", NS, f"{name}-token"].deleted
            assert not job_credentials.active(ws.store, claims)  # ended with it
    finally:
        job_credentials.configure(None)


async def test_a_restarted_service_follows_its_cluster_experiments_again(
    ws: Any, alice: Caller, tmp_path: Path
) -> None:
    from cube_lab.store.models import TuningExperiment

    code_folder(tmp_path)
    spec = parse({**CONFIG, "trialCodeDirectory": "search"}, tmp_path)
    spec.backend = "kubernetes"
    local = parse({**CONFIG, "trialCodeDirectory": "search"}, tmp_path)
    async with api_server() as km:
        ws.tuning.on_cluster.config = ClusterConfig(host=str(km.url), token="t", namespace=NS)
        run = await asyncio.to_thread(ws.tuning.on_cluster.prepare, alice, spec)
        await run.submit()  # created, but its follower "died" with the process
        engine = await asyncio.to_thread(ws.tuning.prepare, alice, local)  # never run
        with ws.store.write() as s:
            for experiment_id in (run.experiment_id, engine.experiment_id):
                s.get(TuningExperiment, experiment_id).runner_pid = 2**22 + 7  # no such pid
        interrupted = await asyncio.to_thread(ws.tuning.recover)
        assert interrupted == [engine.experiment_id]  # the local one; the cluster's waits
        assert ws.tuning.on_cluster.resume() == [run.experiment_id]
        name, _ = experiment_obj(km)
        add_trial(km, name, "eeeeeeee", {"lr": "0.02"}, "Succeeded", "0.7")
        await katib_says(km, name, succeeded(f"{name}-eeeeeeee", {"lr": "0.02"}, "0.7"))

        def ended() -> Any:
            view = ws.tuning.get(alice, run.experiment_id)
            return view if view.status == "done" else None

        view = await until(ended)
        assert view.best is not None and view.best.final == 0.7
        assert ws.tuning.get(alice, engine.experiment_id).status == "interrupted"
