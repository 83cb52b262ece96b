"""Fine-tuning REST handlers: ``POST /finetune/jobs`` starts a fine-tune as a training job,
``POST /finetune/merge`` a merge of an adapter into its base, ``POST /finetune/evaluations``
an evaluation (its result at ``GET /finetune/evaluations/{job_id}``).

The body is ``{"config": {...}, "folder", "project", "nproc"}``: the config in cube-lab's
keys or a LLaMA-Factory training YAML's, its relative paths starting at ``folder`` (under
the server root). The answer is the training job (follow it at ``/training/jobs/{id}``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tornado import web

from .. import containment
from ..errors import InvalidInput
from ..finetune.service import FinetuneService
from ..locale.messages import _t
from .base import CubeHandler

FIELDS = {"config", "folder", "project", "nproc", "cluster"}


class FinetuneJobsHandler(CubeHandler):
    fields = FIELDS  # of the body

    @web.authenticated
    async def post(self) -> None:
        parsed, nproc, folder = await self.parsed()
        service = FinetuneService(self.workspace)
        cluster = self.cluster_placement()
        job = await self.call(
            service.prepare, self.caller, parsed, nproc=nproc, cwd=folder, cluster=cluster
        )
        job_id = await self.workspace.training.launch(job)
        self.reply(await self.call(self.workspace.training.get, self.caller, job_id), 201)

    def cluster_placement(self) -> dict[str, Any] | None:
        """``cluster``: on Kubernetes, with this server's cluster credentials (the placement
        keys of ``cube_lab.finetune.cluster``); absent: on this machine."""
        cluster = self.json_body().get("cluster")
        if cluster is not None and not isinstance(cluster, dict):
            raise InvalidInput(
                _t("cluster must be an object (image, workers, resources, mounts...)"),
                _t("got {value!r}", value=cluster),
            )
        return cluster or None

    async def parsed(self) -> tuple[Any, int, Path]:
        """The checked config (its paths under the server root), nproc and its folder."""
        body = self.json_body()
        _known(body, self.fields)
        config = body.get("config")
        if not isinstance(config, dict):
            raise InvalidInput(_t("config must be an object (a fine-tune or LLaMA-Factory config)"))
        nproc = body.get("nproc", 1)
        if isinstance(nproc, bool) or not isinstance(nproc, int) or not 1 <= nproc <= 256:
            raise InvalidInput(
                _t("nproc must be a whole number from 1 to 256"), _t("got {nproc!r}", nproc=nproc)
            )
        if body.get("project"):
            config = {**config, "project": body["project"]}
        folder = containment.resolve(self.root_dir, body.get("folder") or ".", what="folder")
        service = FinetuneService(self.workspace)
        local = self.cluster_placement() is None
        parsed = await self.call(service.parse, self.caller, config, folder, local=local)
        # a registered base or dataset is the store's; the rest must be under the root
        if parsed.base_ref is None:
            containment.resolve(self.root_dir, parsed.model, what="model")
        if parsed.dataset_ref is None:
            containment.resolve(self.root_dir, parsed.data.path, what="data")
        others = {
            "output_dir": parsed.output_dir,
            "eval_data": parsed.eval_data.path if parsed.eval_data else None,
            "reward_file": parsed.reward_file,
            "resume_from_checkpoint": parsed.resume_from_checkpoint
            if isinstance(parsed.resume_from_checkpoint, str)
            else None,
        }
        for what, path in others.items():
            if path:
                containment.resolve(self.root_dir, path, what=what)
        return parsed, nproc, folder


class EstimateHandler(FinetuneJobsHandler):
    """``POST /finetune/estimate``: the body of ``/finetune/jobs``; the memory the fine-tune
    needs per process (``cube_lab.finetune.memory``), no job."""

    @web.authenticated
    async def post(self) -> None:
        from ..finetune.memory import estimate

        parsed, _, _ = await self.parsed()
        self.reply(await self.call(estimate, parsed))


class PreviewHandler(FinetuneJobsHandler):
    """``POST /finetune/preview``: the body of ``/finetune/jobs`` and ``n`` (default 3); the
    first records as the model reads them, the trained part marked
    (``cube_lab.finetune.records_preview``): ``{"records": [{"text", "segments", ...}]}``."""

    fields = FIELDS | {"n"}

    @web.authenticated
    async def post(self) -> None:
        from ..finetune.records_preview import preview

        parsed, _, _ = await self.parsed()
        n = self.json_body().get("n", 3)
        self.reply({"records": list(await self.call(preview, parsed, n))})


class MergeHandler(CubeHandler):
    """``POST /finetune/merge`` ``{"model": "NAME[:VERSION]", "project"}``: the merge job."""

    @web.authenticated
    async def post(self) -> None:
        from ..finetune.service import FinetuneService

        body = self.json_body()
        _known(body, {"model", "project"})
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise InvalidInput(_t("model must be the adapter's version, NAME[:VERSION]"))
        service = FinetuneService(self.workspace)
        job = await self.call(
            service.prepare_merge, self.caller, model, project=body.get("project") or None
        )
        job_id = await self.workspace.training.launch(job)
        self.reply(await self.call(self.workspace.training.get, self.caller, job_id), 201)


class EvaluationsHandler(CubeHandler):
    """``POST /finetune/evaluations`` ``{"config", "folder", "project"}``: the evaluation job."""

    @web.authenticated
    async def post(self) -> None:
        from ..finetune.evaluation_config import EvaluationConfig
        from ..finetune.service import FinetuneService

        body = self.json_body()
        _known(body, {"config", "folder", "project"})
        config = body.get("config")
        if not isinstance(config, dict):
            raise InvalidInput(_t("config must be an object (an evaluation config)"))
        if body.get("project"):
            config = {**config, "project": body["project"]}
        folder = containment.resolve(self.root_dir, body.get("folder") or ".", what="folder")
        parsed = EvaluationConfig.from_dict(config, folder)
        paths = {
            "data": parsed.data.path if parsed.data else None,
            "prompts": parsed.prompts,
            "scorer_file": parsed.scorer_file,
            "output_dir": parsed.output_dir,
            "model": parsed.model if Path(parsed.model).is_absolute() else None,
            "baseline": parsed.baseline if Path(parsed.baseline).is_absolute() else None,
        }
        for what, path in paths.items():
            if path:  # a registered version is the store's; a folder must be under the root
                containment.resolve(self.root_dir, path, what=what)
        service = FinetuneService(self.workspace)
        parsed = await self.call(service.resolve_evaluation, self.caller, parsed)
        job = await self.call(service.prepare_evaluation, self.caller, parsed)
        job_id = await self.workspace.training.launch(job)
        self.reply(await self.call(self.workspace.training.get, self.caller, job_id), 201)


class EvaluationHandler(CubeHandler):
    """``GET /finetune/evaluations/{job_id}``: the result (the job's project's members)."""

    @web.authenticated
    async def get(self, job_id: str) -> None:
        from ..finetune.service import FinetuneService

        service = FinetuneService(self.workspace)
        self.reply(await self.call(service.evaluation, self.caller, job_id))


def _known(body: dict, fields: set[str]) -> None:
    unknown = sorted(set(body) - fields)
    if unknown:
        raise InvalidInput(
            _t("unknown fields {unknown}", unknown=unknown),
            _t("Known: {value}", value=", ".join(sorted(fields))),
        )
