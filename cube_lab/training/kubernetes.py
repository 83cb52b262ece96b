"""Kubernetes manifests for training jobs, as plain dicts (tests check them against the CRDs).

- pytorch / deepspeed: Kubeflow ``PyTorchJob`` (kubeflow.org/v1), one Master + Workers;
  or ``TrainJob`` (trainer.kubeflow.org/v1alpha1) with ``kind="trainjob"``.
- tensorflow: ``TFJob`` (kubeflow.org/v1); mpi: ``MPIJob`` (kubeflow.org/v2beta1).
- Volcano gang scheduling: ``schedulerName: volcano`` on the pods and the operator's
  ``runPolicy.schedulingPolicy`` (the operator creates the PodGroup with ``minAvailable``
  and the queue). ``podgroup`` builds a PodGroup by hand for pods nobody else groups.
  A TrainJob takes gang scheduling and RDMA from its ClusterTrainingRuntime; its volumes
  (``mounts``, ``shm_size``) go into a ``runtimePatches`` entry for the trainer's pods.
- ``shm_size``: a memory-backed ``emptyDir`` at /dev/shm; ``rdma``: an RDMA device
  resource plus ``IPC_LOCK`` so NCCL can register memory.
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import InvalidInput
from ..k8s.names import k8s_name
from ..k8s.objects import token_secret
from ..locale.messages import _t
from .spec import CLUSTER_KINDS, JobSpec

KINDS = CLUSTER_KINDS
RDMA_RESOURCE = "rdma/rdma_shared_device_a"  # the NVIDIA network operator's default name
TRAINJOB_RUNTIMES = {"pytorch": "torch-distributed", "deepspeed": "deepspeed-distributed"}
_CONTAINER = {"pytorchjob": "pytorch", "tfjob": "tensorflow", "mpijob": "mpi"}


def default_kind(framework: str) -> str:
    return {"tensorflow": "tfjob", "mpi": "mpijob"}.get(framework, "pytorchjob")


def manifests(
    spec: JobSpec,
    name: str,
    *,
    namespace: str = "default",
    kind: str | None = None,
    labels: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The objects to apply, in order (a PodGroup first where one is needed). ``labels``
    (``cube_lab.k8s.pod_labels.job``) go on the job object and on every pod it makes: the
    operators copy no job labels to pods, so they are in each replica's pod template (a
    TrainJob's: a runtime patch of the trainer's pods)."""
    kind = (kind or spec.kind or default_kind(spec.framework)).lower()
    if kind not in KINDS:
        raise InvalidInput(
            _t("unknown job kind {kind!r}", kind=kind),
            _t("Use one of {value}.", value=", ".join(KINDS)),
        )
    if not spec.image:
        raise InvalidInput(
            _t("image is required on Kubernetes"), _t("Give the container image to run.")
        )
    if spec.framework == "plain":
        raise InvalidInput(
            _t("framework 'plain' runs locally only"),
            _t("Pick pytorch, tensorflow or mpi for a cluster."),
        )
    meta = {
        "name": k8s_name(name),
        "namespace": namespace,
        "labels": {"app.kubernetes.io/managed-by": "cube-lab", **(labels or {})},
    }
    build = {"pytorchjob": _pytorchjob, "tfjob": _tfjob, "mpijob": _mpijob, "trainjob": _trainjob}
    docs = build[kind](spec, meta)
    if labels:
        _label_pods(docs[-1], labels)
    return docs


def _label_pods(job: dict[str, Any], labels: dict[str, str]) -> None:
    """Every pod of ``job`` labelled with ``labels`` (in place)."""
    for template in _templates(job):
        template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    if job["kind"] == "TrainJob":
        pod_meta = {"labels": dict(labels)}
        patches = job["spec"].setdefault("runtimePatches", [])
        if patches:  # the volumes patch of the same pods
            node = patches[0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
            node["template"]["spec"]["template"]["metadata"] = pod_meta
        else:
            patches.append(_node_patch({"metadata": pod_meta}))


# the pods that may reach the cube-lab service (the chart's network policy lets them)
SERVICE_ACCESS_LABEL = "cube-lab.io/service-access"


def with_service_access(docs: list[dict[str, Any]], values: dict[str, str]) -> list[dict[str, Any]]:
    """``docs`` with a Secret first holding ``values`` (the job's token and the cube-lab
    service's URL: ``job_credentials.service_vars``), and every container of the job taking
    them as environment variables from it (the token is never in the job object, which more
    people may read than its pods' secrets). The Secret is deleted with the job's objects."""
    job = copy.deepcopy(docs[-1])
    meta = job["metadata"]
    secret, env = token_secret(f"{k8s_name(meta['name'], 52)}-token", meta, values)
    for container in _containers(job):
        container["env"] = [*container.get("env", []), *env]
    for template in _templates(job):
        template.setdefault("metadata", {}).setdefault("labels", {})[SERVICE_ACCESS_LABEL] = "true"
    return [secret, *docs[:-1], job]


def _containers(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Every container of a job object (a TrainJob's trainer stands for its containers)."""
    if job["kind"] == "TrainJob":
        return [job["spec"]["trainer"]]
    return [c for template in _templates(job) for c in template["spec"]["containers"]]


def _templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a job object's replica specs (none in a TrainJob's own spec)."""
    replicas = job["spec"].get("pytorchReplicaSpecs") or job["spec"].get("tfReplicaSpecs")
    replicas = replicas or job["spec"].get("mpiReplicaSpecs") or {}
    return [replica["template"] for replica in replicas.values()]


# -- the pieces every kind shares -----------------------------------------------------------


def _command(spec: JobSpec) -> list[str]:
    user = spec.argv()
    return ["python", *user] if user[0].endswith(".py") else user


def _container(spec: JobSpec, name: str, command: list[str] | None) -> dict[str, Any]:
    limits = spec.resources.limits()
    container: dict[str, Any] = {"name": name, "image": spec.image}
    if command:
        container["command"] = command
    if spec.env:
        container["env"] = [{"name": k, "value": v} for k, v in spec.env.items()]
    if spec.working_dir and spec.working_dir.startswith("/"):
        container["workingDir"] = spec.working_dir
    if spec.rdma:
        limits[RDMA_RESOURCE] = "1"
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    if limits:
        container["resources"] = {"limits": limits, "requests": dict(limits)}
    mounts = [
        {"name": f"data-{i}", "mountPath": m.mount_path, "readOnly": m.read_only}
        for i, m in enumerate(spec.mounts)
    ]
    if spec.shm_size:
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    if mounts:
        container["volumeMounts"] = mounts
    return container


def _pod_spec(spec: JobSpec, container: dict[str, Any], restart: str | None) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [container]}
    if restart:
        pod["restartPolicy"] = restart
    volumes: list[dict[str, Any]] = [
        {"name": f"data-{i}", "persistentVolumeClaim": {"claimName": m.claim}}
        for i, m in enumerate(spec.mounts)
    ]
    if spec.shm_size:
        volumes.append(
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": spec.shm_size}}
        )
    if volumes:
        pod["volumes"] = volumes
    acc = spec.resources.accelerator if spec.resources.gpus else None
    if acc is not None:
        if acc.node_selector:
            pod["nodeSelector"] = acc.node_selector_dict()
        if acc.tolerations:
            pod["tolerations"] = [t.to_k8s() for t in acc.tolerations]
    scheduler = "volcano" if spec.gang else (acc.scheduler if acc else None)
    if scheduler:
        pod["schedulerName"] = scheduler
    return pod


def _replica(spec: JobSpec, replicas: int, container: dict[str, Any]) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "restartPolicy": "OnFailure" if spec.retries else "Never",
        "template": {
            "metadata": {"labels": {"app.kubernetes.io/managed-by": "cube-lab"}},
            "spec": _pod_spec(spec, copy.deepcopy(container), None),
        },
    }


def _run_policy(spec: JobSpec, pods: int) -> dict[str, Any]:
    policy: dict[str, Any] = {"backoffLimit": spec.retries, "cleanPodPolicy": "None"}
    if spec.timeout_s:
        policy["activeDeadlineSeconds"] = spec.timeout_s
    if spec.gang:
        scheduling: dict[str, Any] = {"minAvailable": pods}
        if spec.queue:
            scheduling["queue"] = spec.queue
        policy["schedulingPolicy"] = scheduling
    return policy


# -- one builder per kind ----------------------------------------------------------------


def _pytorchjob(spec: JobSpec, meta: dict[str, Any]) -> list[dict[str, Any]]:
    container = _container(spec, _CONTAINER["pytorchjob"], _command(spec))
    replicas = {"Master": _replica(spec, 1, container)}
    if spec.workers > 1:
        replicas["Worker"] = _replica(spec, spec.workers - 1, container)
    body = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": meta,
        "spec": {
            "nprocPerNode": str(spec.nproc_per_worker),
            "runPolicy": _run_policy(spec, spec.workers),
            "pytorchReplicaSpecs": replicas,
        },
    }
    return [body]


def _tfjob(spec: JobSpec, meta: dict[str, Any]) -> list[dict[str, Any]]:
    if spec.nproc_per_worker != 1:
        raise InvalidInput(
            _t("a TFJob runs one process per worker pod"),
            _t("Set nproc_per_worker to 1 and raise workers."),
        )
    container = _container(spec, _CONTAINER["tfjob"], _command(spec))
    body = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": meta,
        "spec": {
            "runPolicy": _run_policy(spec, spec.workers),
            "tfReplicaSpecs": {"Worker": _replica(spec, spec.workers, container)},
        },
    }
    return [body]


def _mpijob(spec: JobSpec, meta: dict[str, Any]) -> list[dict[str, Any]]:
    slots = spec.nproc_per_worker
    launcher_cmd = ["mpirun", "-np", str(spec.processes), "--allow-run-as-root", "--tag-output"]
    launcher = {
        "name": "launcher",
        "image": spec.image,
        "command": [*launcher_cmd, *_command(spec)],
    }
    if spec.env:
        launcher["env"] = [{"name": k, "value": v} for k, v in spec.env.items()]
    worker = _container(spec, "worker", None)
    launcher_replica = _replica(spec, 1, launcher)
    launcher_replica["template"]["spec"].pop("volumes", None)  # the launcher needs no data
    body = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": meta,
        "spec": {
            "slotsPerWorker": slots,
            "mpiImplementation": "OpenMPI",
            "runPolicy": _run_policy(spec, spec.workers + 1),
            "mpiReplicaSpecs": {
                "Launcher": launcher_replica,
                "Worker": _replica(spec, spec.workers, worker),
            },
        },
    }
    return [body]


def _trainjob(spec: JobSpec, meta: dict[str, Any]) -> list[dict[str, Any]]:
    runtime = TRAINJOB_RUNTIMES.get(spec.framework)
    if runtime is None:
        raise InvalidInput(
            _t("a TrainJob runs pytorch or deepspeed, not {framework}", framework=spec.framework),
            _t("Use kind tfjob or mpijob for the others."),
        )
    pod_level = [n for n, on in (("gang", spec.gang), ("rdma", spec.rdma)) if on]
    if pod_level:
        raise InvalidInput(
            _t(
                "a TrainJob takes {value} from its ClusterTrainingRuntime",
                value=", ".join(pod_level),
            ),
            _t(
                (
                    "Set them (podGroupPolicy, RDMA devices) in the {runtime!r} runtime, or "
                    "use a PyTorchJob."
                ),
                runtime=runtime,
            ),
        )
    container = _container(spec, "node", _command(spec))
    trainer: dict[str, Any] = {
        "image": spec.image,
        "command": container["command"],
        "numNodes": spec.workers,
        "numProcPerNode": spec.nproc_per_worker,
    }
    if "env" in container:
        trainer["env"] = container["env"]
    if "resources" in container:
        trainer["resourcesPerNode"] = container["resources"]
    body: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": meta,
        "spec": {
            "runtimeRef": {
                "apiGroup": "trainer.kubeflow.org",
                "kind": "ClusterTrainingRuntime",
                "name": runtime,
            },
            "trainer": trainer,
        },
    }
    if spec.timeout_s:
        body["spec"]["activeDeadlineSeconds"] = spec.timeout_s
    volumes = _pod_spec(spec, container, None).get("volumes")
    if volumes:
        body["spec"]["runtimePatches"] = [_volumes_patch(volumes, container["volumeMounts"])]
    return [body]


def _volumes_patch(volumes: list[Any], mounts: list[Any]) -> dict[str, Any]:
    """A TrainJob's volumes (claims, /dev/shm): a runtime patch of the trainer's pods, the
    replicated job and container both named ``node`` in Kubeflow Trainer's torch runtimes."""
    pod = {"volumes": volumes, "containers": [{"name": "node", "volumeMounts": mounts}]}
    return _node_patch({"spec": pod})


def _node_patch(template: dict[str, Any]) -> dict[str, Any]:
    """A runtime patch of the pod template of the trainer's ``node`` replicated job."""
    node = {"name": "node", "template": {"spec": {"template": template}}}
    return {
        "manager": "cube-lab.io/training",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [node]}}},
    }


def podgroup(spec: JobSpec, name: str, namespace: str = "default") -> dict[str, Any]:
    """A Volcano PodGroup for ``spec``'s pods (annotate them scheduling.k8s.io/group-name)."""
    group: dict[str, Any] = {"minMember": spec.workers}
    if spec.queue:
        group["queue"] = spec.queue
    limits = spec.resources.limits()
    if limits:
        group["minResources"] = {
            k: str(int(v) * spec.workers) if v.isdigit() else v for k, v in limits.items()
        }
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": k8s_name(name), "namespace": namespace},
        "spec": group,
    }
