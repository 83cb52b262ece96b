"""Fine-tuning as training jobs: a config becomes a normal job of the training service.

``FinetuneService.prepare`` reads the config (ours or LLaMA-Factory's), resolves a
registered base version to its folder, and hands the training service a job spec that runs
``cube_lab/finetune/job/finetune_job.py --config-json ...`` under torchrun, so quota,
logs, metrics and stop are the training service's (local jobs in this version: a cluster
job needs the files on a volume and cube-lab in the image). ``register``
records the saved adapter (``peft`` flavor) or full model with its lineage: the base, the
data file, the hyperparameters, the final metrics and the job.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import Conflict, InvalidInput, NotFound
from ..identity import Caller
from ..locale.messages import _t
from ..projects.service import personal_name
from . import chat_templates
from .config import FinetuneConfig, check_records
from .data import load_prompt_set, load_records
from .evaluation_config import EvaluationConfig

CHECKED = 1000  # records converted before launch

JOB_SCRIPT = Path(__file__).parent / "job" / "finetune_job.py"
MERGE_SCRIPT = JOB_SCRIPT.with_name("merge_job.py")
EVALUATE_SCRIPT = JOB_SCRIPT.with_name("evaluate_job.py")


def read_config_file(path: Path) -> Any:
    import yaml

    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InvalidInput(_t("config file {path!r} not found", path=str(path))) from None
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise InvalidInput(_t("{name} is not valid YAML/JSON", name=path.name), str(exc)) from None


def check_before_launch(config: FinetuneConfig, *, local: bool = True) -> None:
    """What would fail in the job, said now (a 400, nothing recorded): records that do not
    convert (the first ``CHECKED`` of the data and of the eval file), data that does not fit
    the method, a tokenizer without the chat template conversational data needs, and for a
    job of this machine (``local``) QLoRA or DeepSpeed without a CUDA GPU or their package.
    Reads files only (no torch)."""
    firsts = []
    for source in (config.data, config.eval_data):
        if source is not None:
            data = replace(source, max_samples=min(source.max_samples or CHECKED, CHECKED))
            firsts.append(load_records(data)[0])
            check_records(config.method, firsts[-1], Path(source.path).name)
    if config.deepspeed is not None:
        from .deepspeed import resolve

        resolve(config.deepspeed)  # a file that is not a DeepSpeed config: said now
    if local and (config.quantization_bit is not None or config.deepspeed is not None):
        import importlib.util

        from ..training import gpus
        from .deepspeed import check_local
        from .trainer import check_quantization

        cuda = bool(gpus.inventory()[0])
        if config.quantization_bit is not None:
            check_quantization(config, cuda, importlib.util.find_spec("bitsandbytes") is not None)
        if config.deepspeed is not None:
            check_local(cuda, importlib.util.find_spec("deepspeed") is not None)
    first = firsts[0]
    folder = Path(config.model)
    settings = folder / "tokenizer_config.json"
    try:
        has_template = (folder / "chat_template.jinja").is_file() or bool(
            json.loads(settings.read_text()).get("chat_template")
        )
    except (OSError, ValueError):
        has_template = False
    if "text" not in first and not (has_template or chat_templates.is_named(config.template)):
        raise InvalidInput(
            _t("the tokenizer of {model} has no chat template", model=config.base_ref or folder),
            _t(
                "Conversational data is rendered with the tokenizer's chat "
                "template: save one with the tokenizer "
                "(tokenizer.chat_template = ...; save_pretrained), or use "
                "plain text data."
            ),
        )


class FinetuneService:
    def __init__(self, workspace: Any) -> None:
        self.ws = workspace

    def parse(
        self, caller: Caller, data: Any, base_dir: Path, *, local: bool = True
    ) -> FinetuneConfig:
        """The checked config, its base model a folder (a registered version resolved);
        ``local``: it runs on this machine (not on the cluster)."""
        data, dataset_ref = self.dataset_source(caller, data)
        config = FinetuneConfig.from_dict(data, base_dir)
        config.dataset_ref = dataset_ref
        if not Path(config.model).is_dir():  # NAME:VERSION of the registry
            config.base_ref, config.model = self.resolve_version(caller, config.model, config)
        check_before_launch(config, local=local)
        return config

    def dataset_source(self, caller: Caller, data: Any) -> tuple[Any, str | None]:
        """``data: {dataset: NAME[:VERSION], file: ...}`` (our keys) made the path of that
        file in the registered dataset version (or its source), and the reference."""
        source = data.get("data") if isinstance(data, dict) else None
        if not isinstance(source, dict) or "dataset" not in source:
            return data, None
        ref = source["dataset"]
        if not isinstance(ref, str) or not ref:
            raise InvalidInput(_t("data.dataset must be a dataset's NAME[:VERSION]"))
        name, _, version = ref.partition(":")
        found = self.ws.datasets.resolve(caller, name, version or None, data.get("project"))
        path = found.path
        if path.is_dir():
            path = _data_file(path, source.get("file"), ref)
        elif source.get("file"):
            raise InvalidInput(
                _t("data.file: dataset {ref} is one file, not a folder", ref=ref),
                _t("Remove data.file."),
            )
        rest = {k: v for k, v in source.items() if k not in ("dataset", "file")}
        recorded = f"{found.project}/{found.name}:{found.version or 'source'}"
        return {**data, "data": {**rest, "path": str(path)}}, recorded

    def resolve_version(
        self, caller: Caller, ref: str, config: FinetuneConfig | None = None
    ) -> tuple[str, str]:
        """``name:version`` (in the config's project, else the personal one) -> (the
        reference as recorded, the folder of its files)."""
        name, version = ref.rsplit(":", 1)
        project = (config.project if config else None) or personal_name(caller.username)
        found = self.ws.registry.get_version(caller, project, name, version)
        if found.flavor not in ("transformers", "peft"):
            raise InvalidInput(
                _t(
                    "model {ref}: version {version} is a {flavor} model",
                    ref=ref,
                    version=found.version,
                    flavor=found.flavor,
                ),
                _t("Fine-tune a transformers model version (a Hugging Face folder)."),
            )
        path = self.ws.registry.download(caller, project, name, found.version).path
        if not (path / "config.json").is_file():
            raise InvalidInput(
                _t(
                    "model {ref}: its files are not a Hugging Face folder (no config.json)", ref=ref
                ),
                _t("Register the folder saved with save_pretrained."),
            )
        return f"{project}/{name}:{found.version}", str(path)

    def job_spec(
        self, config: FinetuneConfig, *, nproc: int = 1, cluster: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The training job's spec: here, or on Kubernetes with ``cluster`` (the job spec's
        placement keys: image, workers, resources, mounts, gang, queue, kind...). On the
        cluster every pod runs ``torchrun -m cube_lab.finetune.trainer`` (cube-lab in the
        image), so the config's files must be on a volume the pods mount at the same path."""
        spec: dict[str, Any] = {
            "backend": "local",
            "framework": "pytorch",
            "script": str(JOB_SCRIPT),
            "args": ["--config-json", config.to_json()],
            "nproc_per_worker": nproc,
            "name": config.name or f"finetune-{config.method}",
            "project": config.project,
            "output_dir": config.output_dir,
        }
        # a file of a registered dataset (version) becomes the job's lineage
        spec["env"] = {"CUBE_LAB_DATASET": config.data.path}
        if cluster:
            from .cluster import cluster_spec

            spec = cluster_spec(spec, config, cluster)
        return {k: v for k, v in spec.items() if v is not None}

    def prepare(
        self,
        caller: Caller,
        config: FinetuneConfig,
        *,
        nproc: int = 1,
        cwd: Path | None = None,
        on_line: Any = None,
        cluster: dict[str, Any] | None = None,
        cluster_config: Any = None,
    ) -> Any:
        """A prepared training job (recorded, admitted, not started); on Kubernetes with
        ``cluster`` (placement, see ``job_spec``) through ``cluster_config``."""
        spec = self.job_spec(config, nproc=nproc, cluster=cluster)
        if cluster:
            return self.ws.training.prepare(
                caller, spec, None, on_line=on_line, cluster=cluster_config
            )
        return self.ws.training.prepare(caller, spec, None, cwd=cwd, on_line=on_line)

    def register(
        self, caller: Caller, job_id: str, name: str, *, project: str | None = None
    ) -> Any:
        """Register the job's saved model: the adapter as ``peft``, a full model as
        ``transformers``; params and metrics from its ``cube_finetune.json``."""
        from .trainer import METADATA

        job = self.ws.training.get(caller, job_id)
        if job.status != "succeeded":
            raise Conflict(
                _t("job {job_id} has not succeeded ({status})", job_id=job_id, status=job.status)
            )
        folder = Path(job.output_dir) / "model"
        meta_path = folder / METADATA
        if not meta_path.is_file():
            raise InvalidInput(
                _t(
                    "job {job_id} saved no fine-tuned model ({meta_path} is missing)",
                    job_id=job_id,
                    meta_path=meta_path,
                ),
                _t("Register the output of a job started by cube-lab finetune."),
            )
        meta = json.loads(meta_path.read_text())
        is_lora = meta["finetuning_type"] == "lora"
        base = meta["hyperparameters"]["base_model"]
        tags = {"base_model": base, "dataset": meta["dataset"]}
        if meta.get("merged_from"):
            tags["merged_from"] = meta["merged_from"]
        params = {
            k: v if isinstance(v, int | float | str | bool) else json.dumps(v)
            for k, v in meta["hyperparameters"].items()
        }
        return self.ws.registry.register(
            caller,
            name=name,
            path=folder,
            project=project or job.project,
            flavor="peft" if is_lora else "transformers",
            description=f"{meta['method']} {meta['finetuning_type']} of {base}",
            params=params,
            metrics={k: v for k, v in meta["metrics"].items() if isinstance(v, int | float)},
            tags=tags,
            source=meta["dataset"],
            training_job_id=job_id,
            datasets=job.datasets or None,
        )

    def load(self, caller: Caller, project: str, name: str, version: str | int = "latest") -> Any:
        """A registered fine-tuned version, ready to generate: (model, tokenizer); an
        adapter is loaded onto its base (the folder, or the registered base version)."""
        from ..registry.flavors import load_peft

        found = self.ws.registry.get_version(caller, project, name, version)
        path = self.ws.registry.download(caller, project, name, found.version).path
        if found.flavor != "peft":
            from transformers import AutoModelForCausalLM, AutoTokenizer

            return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
        return load_peft(path, base_resolver=lambda ref: self._base_folder(caller, ref))

    # -- after a fine-tune: merge an adapter, evaluate before vs after ---------------------

    def prepare_merge(
        self, caller: Caller, ref: str, *, project: str | None = None, on_line: Any = None
    ) -> Any:
        """A prepared job that merges the LoRA adapter version ``ref`` (``name[:version]``)
        into its base; register its result with ``register`` (flavor ``transformers``)."""
        project = project or personal_name(caller.username)
        name, _, version = ref.partition(":")
        found = self.ws.registry.get_version(caller, project, name, version or "latest")
        if found.flavor != "peft":
            raise InvalidInput(
                _t(
                    "model {ref}: version {version} is a {flavor} model, not a LoRA adapter",
                    ref=ref,
                    version=found.version,
                    flavor=found.flavor,
                ),
                _t("Merge a peft version (an adapter registered by cube-lab finetune)."),
            )
        adapter, base = self._adapter_and_base(caller, project, name, found.version)
        recorded = f"{project}/{name}:{found.version}"
        spec = {
            "backend": "local",
            "framework": "pytorch",
            "script": str(MERGE_SCRIPT),
            "args": ["--adapter", adapter, "--base", base, "--merged-from", recorded],
            "name": f"merge-{name}-{found.version}",
            "project": project,
        }
        return self.ws.training.prepare(caller, spec, None, on_line=on_line)

    def parse_evaluation(self, caller: Caller, raw: Any, base_dir: Path) -> EvaluationConfig:
        """The checked evaluation config with its models resolved (``config.models``)."""
        return self.resolve_evaluation(caller, EvaluationConfig.from_dict(raw, base_dir))

    def resolve_evaluation(self, caller: Caller, config: EvaluationConfig) -> EvaluationConfig:
        """``config.models`` filled (registered versions and adapters' bases resolved to
        folders); the first records of the data and prompts read, so a bad file is a 400."""
        project = config.project or personal_name(caller.username)
        after = self._entry(caller, project, config.model)
        meta = after.pop("meta")
        if config.baseline == "none":
            config.models = [{**after, "label": "model"}]
        else:
            if config.baseline == "base":
                before = _base_entry(after, meta)
            else:
                before = self._entry(caller, project, config.baseline)
                before.pop("meta")
            config.models = [{**before, "label": "before"}, {**after, "label": "after"}]
        if config.data is not None:
            data = replace(config.data, max_samples=min(config.max_samples or CHECKED, CHECKED))
            if "chosen" in load_records(data)[0]:
                raise InvalidInput(
                    _t("data: preference pairs have no perplexity"),
                    _t("Give plain text or conversations (alpaca, sharegpt, OpenAI messages)."),
                )
        if config.prompts is not None:
            load_prompt_set(Path(config.prompts), min(config.max_samples or CHECKED, CHECKED))
        return config

    def prepare_evaluation(
        self, caller: Caller, config: EvaluationConfig, *, on_line: Any = None
    ) -> Any:
        """A prepared evaluation job (its result: ``evaluation``)."""
        spec = {
            "backend": "local",
            "framework": "pytorch",
            "script": str(EVALUATE_SCRIPT),
            "args": ["--config-json", config.to_json()],
            "name": config.name or "evaluate-" + config.model.rsplit("/", 1)[-1].replace(":", "-"),
            "project": config.project,
            "output_dir": config.output_dir,
        }
        return self.ws.training.prepare(
            caller, {k: v for k, v in spec.items() if v is not None}, None, on_line=on_line
        )

    def evaluation(self, caller: Caller, job_id: str) -> dict[str, Any]:
        """The ``evaluation.json`` an evaluation job wrote (the job's project's members only)."""
        from .evaluation import RESULT

        job = self.ws.training.get(caller, job_id)
        path = Path(job.output_dir or "") / RESULT
        if not job.output_dir or not path.is_file():
            raise NotFound(
                _t(
                    "job {job_id} has no evaluation result ({status})",
                    job_id=job_id,
                    status=job.status,
                ),
                _t("Evaluation jobs (cube-lab evaluate) write one when they succeed."),
            )
        return dict(json.loads(path.read_text()), job_id=job_id, status=job.status)

    def _entry(self, caller: Caller, project: str, text: str) -> dict[str, Any]:
        """A model to evaluate: ``{"ref", "path", "adapter", "base_ref"}`` of a folder or a
        registered version (transformers, or a peft adapter over its base)."""
        from ..registry.flavors import peft_base

        if Path(text).is_dir():
            folder = Path(text)
            if (folder / "adapter_config.json").is_file():
                base = peft_base(folder, lambda ref: self._base_folder(caller, ref))
                return {"ref": text, "path": base, "adapter": text, "meta": _meta(folder)}
            return {"ref": text, "path": text, "adapter": None, "meta": _meta(folder)}
        name, _, version = text.partition(":")
        found = self.ws.registry.get_version(caller, project, name, version or "latest")
        ref = f"{project}/{name}:{found.version}"
        if found.flavor == "peft":
            adapter, base = self._adapter_and_base(caller, project, name, found.version)
            return {"ref": ref, "path": base, "adapter": adapter, "meta": _meta(Path(adapter))}
        if found.flavor != "transformers":
            raise InvalidInput(
                _t("model {ref} is a {flavor} model", ref=ref, flavor=found.flavor),
                _t("Evaluate a transformers or peft version (a causal language model)."),
            )
        path = self.ws.registry.download(caller, project, name, found.version).path
        return {"ref": ref, "path": str(path), "adapter": None, "meta": _meta(path)}

    def _adapter_and_base(
        self, caller: Caller, project: str, name: str, version: int | str
    ) -> tuple[str, str]:
        from ..registry.flavors import peft_base

        adapter = self.ws.registry.download(caller, project, name, version).path
        return str(adapter), peft_base(adapter, lambda ref: self._base_folder(caller, ref))

    def _base_folder(self, caller: Caller, ref: str) -> str:
        project, rest = ref.split("/", 1) if "/" in ref else (None, ref)
        name, version = rest.rsplit(":", 1)
        project = project or personal_name(caller.username)
        return str(self.ws.registry.download(caller, project, name, version).path)


def _meta(folder: Path) -> dict[str, Any]:
    """A fine-tuned folder's ``cube_finetune.json`` (empty for other folders)."""
    path = folder / "cube_finetune.json"
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def _base_entry(after: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """What ``after`` was fine-tuned from: an adapter's base, or the base a full fine-tune
    records in its ``cube_finetune.json``."""
    if after["adapter"]:
        return {
            "ref": meta.get("base_ref") or after["path"],
            "path": after["path"],
            "adapter": None,
        }
    base = meta.get("base_model")
    if not base or not Path(base).is_dir():
        raise InvalidInput(
            _t("model {ref} records no base model to compare with", ref=after["ref"]),
            _t("Set baseline: to a registered version or a folder, or to none."),
        )
    return {"ref": meta.get("base_ref") or base, "path": base, "adapter": None}


DATA_SUFFIXES = (".json", ".jsonl", ".csv", ".parquet")


def _data_file(folder: Path, name: Any, ref: str) -> Path:
    """``name`` in a dataset version's folder, or its only data file."""
    if name:
        path = (folder / str(name)).resolve()
        if not path.is_relative_to(folder.resolve()) or not path.is_file():
            raise InvalidInput(
                _t("data.file: {name!r} is not a file of dataset {ref}", name=name, ref=ref),
                _t("Files: {files}", files=", ".join(sorted(p.name for p in folder.iterdir()))),
            )
        return path
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in DATA_SUFFIXES)
    if len(files) != 1:
        raise InvalidInput(
            _t(
                "dataset {ref} holds {count} data files: name one with data.file",
                ref=ref,
                count=len(files),
            ),
            _t("Files: {files}", files=", ".join(p.name for p in files) or "none"),
        )
    return files[0]
