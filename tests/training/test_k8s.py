"""Training manifests checked against the real CRD schemas (tests/data/crds), strictly:
a field the CRD does not know fails, as `kubectl apply --validate=strict` would."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cube_lab.cli import main
from cube_lab.errors import InvalidInput
from cube_lab.training import kubernetes
from cube_lab.training.spec import JobSpec

CRDS = Path(__file__).parents[1] / "data" / "crds"
FILES = {
    "PyTorchJob": "kubeflow.org_pytorchjobs.yaml",
    "TFJob": "kubeflow.org_tfjobs.yaml",
    "MPIJob": "kubeflow.org_mpijobs.yaml",
    "TrainJob": "trainer.kubeflow.org_trainjobs.yaml",
    "PodGroup": "scheduling.volcano.sh_podgroups.yaml",
}


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@functools.cache
def validator(kind: str) -> tuple[str, jsonschema.Draft4Validator]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # 2 MB of CRDs: C is 10x faster
    crd = yaml.load((CRDS / FILES[kind]).read_text(), Loader=loader)
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    api = f"{crd['spec']['group']}/{version['name']}"
    return api, jsonschema.Draft4Validator(_strict(version["schema"]["openAPIV3Schema"]))


def check(doc: dict[str, Any]) -> None:
    api, v = validator(doc["kind"])
    assert doc["apiVersion"] == api
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(doc)]
    assert not errors, errors


def spec(**kw: Any) -> JobSpec:
    return JobSpec.from_dict({"script": "train.py", "args": ["--epochs", "3"], "image": "i:1"} | kw)


FULL = {
    "workers": 3,
    "nproc_per_worker": 2,
    "resources": {"gpus": 2, "cpu": "8", "memory": "32Gi"},
    "env": {"NCCL_DEBUG": "INFO"},
    "retries": 2,
    "timeout_s": 3600,
    "mounts": [{"claim": "datasets", "mount_path": "/data", "read_only": True}],
    "gang": True,
    "queue": "research",
    "shm_size": "8Gi",
    "rdma": True,
}


@pytest.mark.parametrize(
    "framework, kind, expect",
    [
        ("pytorch", None, "PyTorchJob"),
        ("deepspeed", None, "PyTorchJob"),
        ("tensorflow", None, "TFJob"),
        ("mpi", None, "MPIJob"),
        ("pytorch", "trainjob", "TrainJob"),
    ],
)
def test_manifests_match_the_crds(framework: str, kind: str | None, expect: str) -> None:
    extra = {"nproc_per_worker": 1} if framework == "tensorflow" else {}
    if kind == "trainjob":  # gang scheduling and RDMA live in the runtime
        extra |= {"gang": False, "rdma": False}
    s = spec(framework=framework, **(FULL | extra))
    for doc in kubernetes.manifests(s, "My Job_1", kind=kind):
        check(doc)
    (doc,) = kubernetes.manifests(s, "My Job_1", kind=kind)
    assert doc["kind"] == expect and doc["metadata"]["name"] == "my-job-1"
    if kind == "trainjob":  # the volumes patch the trainer's pods, as the CRD takes them
        (patch,) = doc["spec"]["runtimePatches"]
        (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        pod = node["template"]["spec"]["template"]["spec"]
        assert pod["volumes"][0] == {
            "name": "data-0",
            "persistentVolumeClaim": {"claimName": "datasets"},
        }
        assert pod["volumes"][1]["emptyDir"] == {"medium": "Memory", "sizeLimit": "8Gi"}
        mounts = pod["containers"][0]["volumeMounts"]
        assert [m["mountPath"] for m in mounts] == ["/data", "/dev/shm"]
    # minimal specs validate too
    for d in kubernetes.manifests(spec(framework=framework), "m", kind=kind):
        check(d)


def test_pytorchjob_carries_gang_shm_rdma_and_gpus() -> None:
    (doc,) = kubernetes.manifests(spec(**FULL), "j")
    assert doc["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 3, "queue": "research"}
    master, worker = (doc["spec"]["pytorchReplicaSpecs"][r] for r in ("Master", "Worker"))
    assert (master["replicas"], worker["replicas"]) == (1, 2)
    pod = worker["template"]["spec"]
    assert pod["schedulerName"] == "volcano"
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}} in pod["volumes"]
    (c,) = pod["containers"]
    assert c["name"] == "pytorch" and c["command"][:2] == ["python", "train.py"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert c["resources"]["limits"][kubernetes.RDMA_RESOURCE] == "1"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]


def test_accelerator_table_drives_resources() -> None:
    s = spec(resources={"gpus": 1, "gpu_type": "hami-vgpu", "gpu_memory_mib": 4096})
    (doc,) = kubernetes.manifests(s, "j")
    limits = doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0][
        "resources"
    ]["limits"]
    assert limits == {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4096"}
    s = spec(resources={"gpus": 2, "gpu_type": "ascend-910"})
    (doc,) = kubernetes.manifests(s, "j")
    pod = doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"huawei.com/Ascend910": "2"}
    assert pod["nodeSelector"] == {"accelerator": "huawei-Ascend910"}
    check(doc)


def test_podgroup_matches_the_volcano_crd() -> None:
    doc = kubernetes.podgroup(spec(workers=4, queue="q", resources={"gpus": 2}), "j")
    check(doc)
    assert doc["spec"]["minMember"] == 4 and doc["spec"]["minResources"]["nvidia.com/gpu"] == "8"


def test_cluster_only_errors_are_clear() -> None:
    with pytest.raises(InvalidInput, match="image is required"):
        kubernetes.manifests(spec(image=None), "j")
    with pytest.raises(InvalidInput, match="from its ClusterTrainingRuntime"):
        kubernetes.manifests(spec(gang=True), "j", kind="trainjob")
    with pytest.raises(InvalidInput, match="one process per worker"):
        kubernetes.manifests(spec(framework="tensorflow", nproc_per_worker=2), "j")


def test_cli_dry_run_prints_the_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    options = ["--backend", "kubernetes", "--dry-run", "--image", "i:1", "--workers", "2"]
    code = main(
        ["train", *options, "--nproc", "4", "--gang", "--queue", "q", "train.py", "-e", "3"]
    )
    assert code == 0
    (doc,) = yaml.safe_load_all(capsys.readouterr().out)
    check(doc)
    assert doc["kind"] == "PyTorchJob" and doc["spec"]["nprocPerNode"] == "4"
    cmd = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert cmd["command"] == ["python", "train.py", "-e", "3"]


@pytest.mark.parametrize(
    "framework, kind",
    [("pytorch", None), ("tensorflow", None), ("mpi", None), ("pytorch", "trainjob")],
)
def test_every_pod_of_every_kind_carries_the_pod_labels(framework: str, kind: str | None) -> None:
    from cube_lab.k8s import pod_labels

    extra = {"nproc_per_worker": 1} if framework == "tensorflow" else {}
    if kind == "trainjob":
        extra |= {"gang": False, "rdma": False}
    labels = pod_labels.job("Vision Team", "张三", "20261204-101010-abcdef")
    assert labels == {
        "cube-lab.io/project": "x---56ision-20-54eam",
        "cube-lab.io/owner": "x---e5-bc-a0-e4-b8-89",
        "cube-lab.io/kind": "job",
        "cube-lab.io/job-id": "20261204-101010-abcdef",
    }
    for full in (True, False):  # with volumes (a TrainJob's patch exists already) and without
        s = spec(framework=framework, **((FULL | extra) if full else {}))
        (doc,) = kubernetes.manifests(s, "j", kind=kind, labels=labels)
        check(doc)
        assert labels.items() <= doc["metadata"]["labels"].items()
        if doc["kind"] == "TrainJob":
            (patch,) = doc["spec"]["runtimePatches"]
            (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
            templates = [node["template"]["spec"]["template"]]
            assert ("spec" in templates[0]) is full  # the volumes stay in the same patch
        else:
            replicas = next(v for k, v in doc["spec"].items() if k.endswith("ReplicaSpecs"))
            templates = [r["template"] for r in replicas.values()]
            # Master + Worker with 3 workers, MPI's Launcher + Worker always, a TFJob's Worker
            want = {"pytorch": 2 if full else 1, "mpi": 2, "tensorflow": 1}[framework]
            assert len(templates) == want
        for template in templates:
            assert labels.items() <= template["metadata"]["labels"].items()
            if doc["kind"] != "TrainJob":  # the existing labels stay
                assert template["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "cube-lab"
