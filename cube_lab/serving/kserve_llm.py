"""KServe InferenceServices for language models (and embedding models): OpenAI's API on the
cluster.

Two engines:

- ``huggingface`` (the default): KServe's Hugging Face serving runtime
  (``predictor.model.modelFormat.name: huggingface``, the ``kserve-huggingfaceserver``
  ClusterServingRuntime). Its arguments as huggingfaceserver parses them: ``--model_name``
  (the name clients send as ``model``), ``--model_dir`` (the folder under the mount the
  storage initializer fills from ``storageUri``, ``/mnt/models``), ``--backend`` (``vllm``:
  vLLM inside the runtime, or ``huggingface``: transformers); ``--task=text_embedding`` for
  an embedding model on the ``huggingface`` backend. With the ``vllm`` backend the runtime
  also takes vLLM's own server arguments, so an adapter goes as ``--enable-lora
  --lora-modules NAME=DIR``; the ``huggingface`` backend cannot apply one (refused). The
  runtime answers OpenAI's API under ``/openai/v1``.
- ``vllm``: a plain vLLM container (``predictor.containers``, the ``image`` given, e.g.
  ``vllm/vllm-openai``) running ``vllm serve DIR`` (vLLM's OpenAI server on port 8080,
  ``--served-model-name``, adapters as above). The storage initializer fills
  ``/mnt/models`` from the container's ``STORAGE_URI``, as KServe does for custom
  containers. It answers under ``/v1``.

A peft adapter is served on its registered base: the base and the adapter are mounted each
from its own folder of the artifacts claim with KServe's multiple storage URIs
(``predictor.storageUris``: ``/mnt/models/base`` and ``/mnt/models/adapters/NAME``), so the
pod sees those two folders and nothing else of the claim.

Accelerators come from the one table (``cube_lab.accelerators``) as for classic models:
``nvidia.com/gpu``, HAMi's ``nvidia.com/gpumem`` / ``nvidia.com/gpucores`` shares, MIG slices
(``nvidia.com/mig-1g.10gb``...), with their tolerations, node selectors and scheduler.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from . import kserve

ENGINES = ("huggingface", "vllm")
BACKENDS = ("vllm", "huggingface")
MOUNT = "/mnt/models"
PORT = 8080
VLLM_DEFAULT_LORA_RANK = 16  # vLLM's default --max-lora-rank


@dataclass(frozen=True)
class LLMArtifacts:
    """What the cluster serves: the model's folder as the pod sees it (``model_path``) served
    as ``name``, and adapters (name -> folder in the pod) on it. One artifact comes from
    ``storage_uri`` (mounted at ``/mnt/models``); a base with adapters from
    ``storage_uris`` (``{"uri", "mountPath"}``: KServe's multiple storage URIs, each folder
    mounted alone)."""

    name: str
    storage_uri: str | None
    model_path: str = MOUNT
    adapters: dict[str, str] = field(default_factory=dict)
    storage_uris: list[dict[str, str]] = field(default_factory=list)
    embedding: bool = False
    lora_rank: int | None = None  # the largest adapter rank

    @classmethod
    def with_adapter(
        cls, name: str, base_uri: str, adapter: str, adapter_uri: str, rank: int | None
    ) -> LLMArtifacts:
        """A base and one adapter, each from its own URI: ``/mnt/models/base`` and
        ``/mnt/models/adapters/NAME``."""
        base_at, adapter_at = f"{MOUNT}/base", f"{MOUNT}/adapters/{kserve.k8s_name(adapter)}"
        return cls(
            name,
            None,
            model_path=base_at,
            adapters={adapter: adapter_at},
            storage_uris=[
                {"uri": base_uri, "mountPath": base_at},
                {"uri": adapter_uri, "mountPath": adapter_at},
            ],
            lora_rank=rank,
        )


def lora_rank(adapter: Path) -> int | None:
    """The rank ``r`` an adapter's ``adapter_config.json`` records."""
    try:
        r = json.loads((adapter / "adapter_config.json").read_text()).get("r")
    except (OSError, ValueError):
        return None
    return r if isinstance(r, int) and not isinstance(r, bool) else None


def check_options(engine: Any, backend: Any, image: Any) -> tuple[str, str]:
    engine = engine or "huggingface"
    backend = backend or "vllm"
    if engine not in ENGINES:
        raise InvalidInput(
            _t("unknown engine {value!r}", value=engine),
            _t(
                "Use huggingface (KServe's Hugging Face serving runtime) or vllm (a vLLM "
                "container, with image)."
            ),
        )
    if backend not in BACKENDS:
        raise InvalidInput(
            _t("unknown llm_backend {value!r}", value=backend),
            _t("The Hugging Face runtime runs vllm or huggingface (transformers)."),
        )
    if engine == "vllm" and not image:
        raise InvalidInput(
            _t("engine vllm needs the container image"),
            _t("Give image, e.g. vllm/vllm-openai:v0.11.0 (--image on the CLI)."),
        )
    if image is not None and not isinstance(image, str):
        raise InvalidInput(_t("image must be a string"), _t("got {value!r}", value=image))
    return engine, backend


def _lora_args(art: LLMArtifacts) -> list[str]:
    if not art.adapters:
        return []
    args = ["--enable-lora"]
    for adapter, relative in art.adapters.items():  # in the pod
        args += ["--lora-modules", f"{adapter}={relative}"]
    if art.lora_rank and art.lora_rank > VLLM_DEFAULT_LORA_RANK:
        args += ["--max-lora-rank", str(art.lora_rank)]
    return args


def llm_inference_service(
    name: str,
    art: LLMArtifacts,
    *,
    engine: str | None = None,
    llm_backend: str | None = None,
    image: str | None = None,
    namespace: str = "default",
    min_replicas: int = 1,
    max_replicas: int | None = None,
    canary_percent: int | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    gpus: int = 0,
    gpu_type: str = "nvidia-gpu",
    gpu_memory_mib: int | None = None,
    gpu_cores_percent: int | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The InferenceService serving ``art`` with OpenAI's API (see the module's text)."""
    engine, backend = check_options(engine, llm_backend, image)
    resources = kserve.container_resources(
        cpu, memory, gpus, gpu_type, gpu_memory_mib, gpu_cores_percent
    )
    predictor = kserve.predictor_spec(min_replicas, max_replicas, canary_percent, gpus, gpu_type)
    if engine == "huggingface":
        if art.adapters and backend == "huggingface":
            raise InvalidInput(
                _t(
                    "the Hugging Face runtime's huggingface backend cannot apply a LoRA "
                    "adapter ({value})",
                    value=", ".join(art.adapters),
                ),
                _t("Use llm_backend vllm (the default) or engine vllm."),
            )
        args = [
            f"--model_name={art.name}",
            f"--model_dir={art.model_path}",
            f"--backend={backend}",
        ]
        if art.embedding and backend == "huggingface":
            args.append("--task=text_embedding")
        args += _lora_args(art)
        model: dict[str, Any] = {"modelFormat": {"name": "huggingface"}, "args": args}
        if art.storage_uri:
            model["storageUri"] = art.storage_uri
        if resources:
            model["resources"] = resources
        predictor["model"] = model
    else:
        args = [
            art.model_path,
            "--served-model-name",
            art.name,
            "--host",
            "0.0.0.0",
            "--port",
            str(PORT),
            *_lora_args(art),
        ]
        container: dict[str, Any] = {
            "name": "kserve-container",
            "image": image,
            "command": ["vllm", "serve"],
            "args": args,
            "ports": [{"containerPort": PORT, "protocol": "TCP"}],
        }
        if art.storage_uri:  # KServe's storage initializer fills /mnt/models from it
            container["env"] = [{"name": "STORAGE_URI", "value": art.storage_uri}]
        if resources:
            container["resources"] = resources
        predictor["containers"] = [container]
    if art.storage_uris:
        predictor["storageUris"] = [dict(u) for u in art.storage_uris]
    doc = kserve.wrap(name, namespace, labels, predictor)
    doc["metadata"]["labels"]["cube-lab/runtime"] = "llm"
    doc["metadata"]["labels"]["cube-lab/engine"] = engine
    return doc


def storage_uri_of(predictor: dict[str, Any]) -> str | None:
    """Where an InferenceService's model comes from: the model's ``storageUri``, a vLLM
    container's ``STORAGE_URI``, or the first of ``storageUris`` (a base's, beside its
    adapters')."""
    uri = (predictor.get("model") or {}).get("storageUri")
    if uri:
        return str(uri)
    for entry in predictor.get("storageUris") or []:
        return str(entry.get("uri"))
    for container in predictor.get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") == "STORAGE_URI":
                return str(env.get("value"))
    return None
