"""KServe InferenceService (serving.kserve.io/v1beta1) manifests for the cluster shape.

The predictor names the model's format (KServe picks the serving runtime that supports it),
where the artifact is (``storageUri``), the Open Inference Protocol v2, the replica range,
a canary percentage, and the container resources, accelerators included through the one
table in ``cube_lab.accelerators``. Manifests are plain dicts; tests check them against the
real CRD schema.
"""

from __future__ import annotations

import re
from typing import Any

from .. import accelerators
from ..errors import InvalidInput
from ..locale.messages import _t

API_VERSION = "serving.kserve.io/v1beta1"
# registry flavor -> KServe model format (the name ClusterServingRuntimes declare)
MODEL_FORMATS = {
    "sklearn": "sklearn",
    "pytorch": "pytorch",
    "onnx": "onnx",
    "transformers": "huggingface",
    "pyfunc": "mlflow",
}


def k8s_name(name: str) -> str:
    """A DNS-1035 label (what InferenceService names must be): lowercase, '-', <= 63 chars."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    if not label or not label[0].isalpha():
        label = f"m-{label}".rstrip("-")
    return label[:63].rstrip("-")


def inference_service(
    name: str,
    flavor: str,
    storage_uri: str,
    *,
    namespace: str = "default",
    min_replicas: int = 1,
    max_replicas: int | None = None,
    canary_percent: int | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    gpus: int = 0,
    gpu_type: str = "nvidia-gpu",
    runtime: str | None = None,
    labels: dict[str, str] | None = None,
    gpu_memory_mib: int | None = None,
    gpu_cores_percent: int | None = None,
) -> dict[str, Any]:
    model_format = MODEL_FORMATS.get(flavor)
    if model_format is None:
        raise InvalidInput(
            _t("KServe has no serving runtime for flavor {flavor!r}", flavor=flavor),
            _t(
                (
                    "Deployable formats: {value}; a custom predictor needs its own container "
                    "image (a KServe custom predictor)."
                ),
                value=", ".join(MODEL_FORMATS),
            ),
        )
    model: dict[str, Any] = {
        "modelFormat": {"name": model_format},
        "protocolVersion": "v2",
        "storageUri": storage_uri,
    }
    if runtime:
        model["runtime"] = runtime
    resources = container_resources(cpu, memory, gpus, gpu_type, gpu_memory_mib, gpu_cores_percent)
    if resources:
        model["resources"] = resources
    predictor = predictor_spec(min_replicas, max_replicas, canary_percent, gpus, gpu_type)
    predictor["model"] = model
    return wrap(name, namespace, labels, predictor)


def check_shape(min_replicas: int, max_replicas: int | None, canary_percent: int | None) -> None:
    if min_replicas < 0 or (max_replicas is not None and max_replicas < max(min_replicas, 1)):
        raise InvalidInput(
            _t("replicas: need 0 <= min_replicas <= max_replicas (and max_replicas >= 1)"),
            _t(
                "got min {min_replicas}, max {max_replicas}",
                min_replicas=min_replicas,
                max_replicas=max_replicas,
            ),
        )
    if canary_percent is not None and not 0 <= canary_percent <= 100:
        raise InvalidInput(
            _t("canary percent must be from 0 to 100"),
            _t("got {canary_percent}", canary_percent=canary_percent),
        )


def container_resources(
    cpu: str | None,
    memory: str | None,
    gpus: int,
    gpu_type: str,
    gpu_memory_mib: int | None = None,
    gpu_cores_percent: int | None = None,
) -> dict[str, Any]:
    """A container's ``resources``: CPU and memory (limits = requests), accelerators from the
    table (``nvidia.com/gpu``, HAMi's ``nvidia.com/gpumem``/``gpucores`` shares, MIG slices
    such as ``nvidia.com/mig-1g.10gb``...) as limits."""
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    for key, value in (("cpu", cpu), ("memory", memory)):
        if value:
            limits[key] = requests[key] = str(value)
    if gpus:
        limits.update(accelerators.resources_for(gpu_type, gpus, gpu_memory_mib, gpu_cores_percent))
    elif gpu_memory_mib is not None or gpu_cores_percent is not None:
        raise InvalidInput(
            _t("a GPU memory or cores share goes with gpus"),
            _t("e.g. gpus 1, gpu_type hami-vgpu, gpu_memory_mib 8192"),
        )
    if not limits:
        return {}
    return {"limits": limits, **({"requests": requests} if requests else {})}


def predictor_spec(
    min_replicas: int,
    max_replicas: int | None,
    canary_percent: int | None,
    gpus: int,
    gpu_type: str,
) -> dict[str, Any]:
    """The predictor's replica range, canary share and the accelerator's placement (node
    selector, tolerations, scheduler)."""
    check_shape(min_replicas, max_replicas, canary_percent)
    predictor: dict[str, Any] = {"minReplicas": min_replicas}
    if max_replicas is not None:
        predictor["maxReplicas"] = max_replicas
    if canary_percent is not None:
        predictor["canaryTrafficPercent"] = canary_percent
    if gpus:
        acc = accelerators.get(gpu_type)
        if acc.node_selector:
            predictor["nodeSelector"] = acc.node_selector_dict()
        if acc.tolerations:
            predictor["tolerations"] = [t.to_k8s() for t in acc.tolerations]
        if acc.scheduler:
            predictor["schedulerName"] = acc.scheduler
    return predictor


def wrap(
    name: str, namespace: str, labels: dict[str, str] | None, predictor: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceService",
        "metadata": {
            "name": k8s_name(name),
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "cube-lab", **(labels or {})},
        },
        "spec": {"predictor": predictor},
    }
