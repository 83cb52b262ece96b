"""Fine-tunes on Kubernetes and with DeepSpeed: the PyTorchJob a fine-tune becomes (checked
against the real CRDs, strictly), submitted through the real client to kmock and followed to
its end; files the pods could not read are refused (a TrainJob takes its volumes from its
runtime, so its files cannot be checked and it is refused); DeepSpeed presets and files,
refused here where there is no CUDA. No cluster and no GPU ran here."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_mock import api_server

from cube_lab.cli import main
from cube_lab.errors import InvalidInput
from cube_lab.finetune import tiny
from cube_lab.finetune.config import FinetuneConfig
from cube_lab.finetune.deepspeed import PRESETS, preset
from cube_lab.finetune.service import check_before_launch
from tests.training.test_cluster import NS, conditions, set_status, until
from tests.training.test_k8s import check

CLUSTER = ["--backend", "kubernetes", "--image", "reg/llm:1", "--workers", "2", "--nproc", "4"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's home as the lab server and the pods both see it (one volume)."""
    root = tmp_path_factory.mktemp("home")
    (root / "alpaca.json").write_text(json.dumps(tiny.alpaca_rows()))
    tiny.build(root / "base", [json.dumps(r) for r in tiny.alpaca_rows()])
    (root / "ds.json").write_text(json.dumps({"zero_optimization": {"stage": 2}}))
    return root


def write(home: Path, name: str = "ft.yaml", **extra: Any) -> Path:
    config = {"model": "base", "data": "alpaca.json", "output_dir": "saves/ft", **extra}
    (home / name).write_text(yaml.safe_dump(config))
    return home / name


def test_dry_run_gives_manifests_the_crds_accept(home: Path, capsys: Any) -> None:
    path = write(home, deepspeed="zero3_offload")
    mount = ["--mount", f"home-alice:{home}", "--gpus", "4", "--gang", "--queue", "llm"]
    code = main(["finetune", str(path), *CLUSTER, *mount, "--dry-run", "--namespace", NS])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    (doc,) = yaml.safe_load_all(printed.out)
    check(doc)
    assert doc["kind"] == "PyTorchJob" and doc["spec"]["nprocPerNode"] == "4"
    assert doc["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 2, "queue": "llm"}
    worker = doc["spec"]["pytorchReplicaSpecs"]["Worker"]
    pod = worker["template"]["spec"]
    assert worker["replicas"] == 1 and pod["volumes"][0]["persistentVolumeClaim"] == {
        "claimName": "home-alice"
    }
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert container["volumeMounts"][0]["mountPath"] == str(home)
    command = container["command"]
    assert command[:4] == ["torchrun", "-m", "cube_lab.finetune.trainer", "--config-json"]
    config = FinetuneConfig.from_json(command[4])  # what every rank trains
    assert config.deepspeed == "zero3_offload" and config.model == str(home / "base")
    assert config.output_dir == str(home / "saves" / "ft")

    # a TrainJob: the volume patches the runtime's trainer pods; gang scheduling is the runtime's
    trainjob = [*CLUSTER, "--mount", f"home-alice:{home}", "--kind", "trainjob", "--dry-run"]
    assert main(["finetune", str(path), *trainjob, "--namespace", NS]) == 0
    (doc,) = yaml.safe_load_all(capsys.readouterr().out)
    check(doc)
    assert doc["kind"] == "TrainJob" and doc["spec"]["trainer"]["numNodes"] == 2
    assert doc["spec"]["trainer"]["command"][:3] == ["torchrun", "-m", "cube_lab.finetune.trainer"]
    (patch,) = doc["spec"]["runtimePatches"]
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node["template"]["spec"]["template"]["spec"]
    assert pod["volumes"][0]["persistentVolumeClaim"] == {"claimName": "home-alice"}
    assert pod["containers"][0]["volumeMounts"][0]["mountPath"] == str(home)
    code = main(["finetune", str(path), *trainjob, "--gang", "--namespace", NS])
    assert code == 2 and "ClusterTrainingRuntime" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "extra", "message"),
    [
        (["--mount", "data:/elsewhere"], {}, "model: "),
        ([], {}, "is not on a volume the job's pods mount"),
        (["--mount", "home"], {}, "is not CLAIM:PATH[:ro]"),
        (["--mount", "h:{home}"], {"output_dir": None}, "output_dir is required"),
    ],
)
def test_what_the_pods_could_not_read_is_refused(
    home: Path, capsys: Any, args: list[str], extra: dict[str, Any], message: str
) -> None:
    raw = {"model": "base", "data": "alpaca.json", "output_dir": "saves/ft", **extra}
    path = home / "bad.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in raw.items() if v is not None}))
    args = [a.replace("{home}", str(home)) for a in args]
    assert main(["finetune", str(path), *CLUSTER, *args, "--dry-run"]) == 2
    assert message in capsys.readouterr().err


def test_deepspeed_presets_files_and_refusals(
    home: Path, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in PRESETS:
        zero = preset(name)["zero_optimization"]
        assert zero["stage"] == (3 if name.startswith("zero3") else 2)
        assert ("offload_optimizer" in zero) == name.endswith("_offload")
    lf = {"model_name_or_path": "base", "stage": "sft", "dataset": "d", "dataset_dir": "."}
    (home / "dataset_info.json").write_text(json.dumps({"d": {"file_name": "alpaca.json"}}))
    config = FinetuneConfig.from_dict({**lf, "deepspeed": "ds.json"}, home)  # LLaMA-Factory's key
    assert config.deepspeed == str(home / "ds.json")
    check_before_launch(config, local=False)
    (home / "not-ds.json").write_text("{}")
    with pytest.raises(InvalidInput, match="has no zero_optimization section"):
        check_before_launch(FinetuneConfig.from_dict({**lf, "deepspeed": "not-ds.json"}, home))
    with pytest.raises(InvalidInput, match="neither a preset nor a file"):
        FinetuneConfig.from_dict({**lf, "deepspeed": "zero4"}, home)

    from cube_lab.training import gpus

    monkeypatch.setattr(gpus, "inventory", lambda: ([], set()))  # a machine without GPUs
    data_dir = tmp_path / "d"
    code = main(["--data-dir", str(data_dir), "finetune", str(write(home, deepspeed="zero2"))])
    err = capsys.readouterr().err
    assert code == 2 and "deepspeed needs CUDA GPUs" in err and "--backend kubernetes" in err


async def test_submitted_to_kmock_and_followed_to_the_end(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    path = write(home, name="sub.yaml", deepspeed="zero2", name_="x")
    path.write_text(path.read_text().replace("name_: x", "name: ft-demo"))
    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        argv = ["--data-dir", str(home / "cube-data"), "finetune", str(path), *CLUSTER,
                "--mount", f"home-alice:{home}", "--namespace", NS]  # fmt: skip
        cli = asyncio.create_task(asyncio.to_thread(main, argv))
        key = await until(lambda: next((k for k in km.objects if k[2] == "ft-demo"), None))
        obj = km.objects[key].raw
        check(obj)
        container = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"]
        assert container[0]["command"][:3] == ["torchrun", "-m", "cube_lab.finetune.trainer"]
        await set_status(km, "PyTorchJob", "ft-demo", conditions("Created", "Running"))
        await set_status(km, "PyTorchJob", "ft-demo", conditions("Created", "Succeeded"))
        assert await cli == 0
    out, err = capsys.readouterr()
    assert "sft lora of" in out and "2 pod(s) x 4 process(es)" in out, out
    assert "succeeded" in err


async def test_over_rest_with_the_servers_credentials_and_only_the_callers_volumes(
    api: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``POST /finetune/jobs`` with ``cluster``: the server submits the PyTorchJob with its
    own credentials (as the hub's service does for a user's server, which holds none). Under
    the hub a job mounts only its owner's claim or their project groups' claims, since the
    service's credentials could mount any."""
    from cube_lab import job_credentials

    (jp_root_dir / "alpaca.json").write_text(json.dumps(tiny.alpaca_rows()))
    tiny.build(jp_root_dir / "base", [json.dumps(r) for r in tiny.alpaca_rows()])
    config = {"model": "base", "data": "alpaca.json", "output_dir": "saves/ft", "name": "ft-rest"}

    def body(claim: str) -> dict[str, Any]:
        mount = {"claim": claim, "mount_path": str(jp_root_dir)}
        cluster = {"image": "reg/llm:1", "workers": 2, "mounts": [mount]}
        return {"config": config, "nproc": 2, "cluster": cluster}

    issuer = job_credentials.Issuer(b"s" * 32, "http://hub:8020")
    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        monkeypatch.setenv("CUBE_LAB_K8S_NAMESPACE", NS)
        code, err = await api("alice", "POST", "finetune/jobs", {**body("x"), "cluster": [1]})
        assert code == 400 and "cluster must be an object" in err["error"]
        job_credentials.configure(issuer)
        try:
            code, err = await api("alice", "POST", "finetune/jobs", body("claim-bob"))
            assert code == 403 and "'claim-bob'" in err["error"], err
            assert "claim-alice" in err["detail"]
            assert not [k for k in km.objects if k[2] == "ft-rest"]  # nothing submitted
            code, job = await api("alice", "POST", "finetune/jobs", body("claim-alice"))
        finally:
            job_credentials.configure(None)
        assert code == 201, job
        assert job["backend"] == "kubernetes" and job["workers"] == 2
        obj = km.objects[next(k for k in km.objects if k[2] == "ft-rest")].raw
        check(obj)
        pod = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
        container = pod["containers"][0]
        assert container["command"][:3] == ["torchrun", "-m", "cube_lab.finetune.trainer"]
        trained = FinetuneConfig.from_json(container["command"][4])
        assert trained.model == str(jp_root_dir / "base")
        assert pod["volumes"][0]["persistentVolumeClaim"] == {"claimName": "claim-alice"}
        env = {e["name"]: e for e in container.get("env", [])}
        assert "CUBE_LAB_JOB_TOKEN" in env or any("TOKEN" in k for k in env), env
        code, seen = await api("bob", "GET", f"training/jobs/{job['id']}")
        assert code == 404
        await set_status(km, "PyTorchJob", "ft-rest", conditions("Created", "Succeeded"))
        for _ in range(200):  # followed to its end (and its watch closed)
            code, seen = await api("alice", "GET", f"training/jobs/{job['id']}")
            if seen["status"] == "succeeded":
                break
            await asyncio.sleep(0.05)
        assert seen["status"] == "succeeded", seen
