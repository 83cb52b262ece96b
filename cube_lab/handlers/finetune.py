"""Fine-tuning REST handler: ``POST /finetune/jobs`` starts a fine-tune as a training job.

The body is ``{"config": {...}, "folder", "project", "nproc"}``: the config in cube-lab's
keys or a LLaMA-Factory training YAML's, its relative paths starting at ``folder`` (under
the server root). The answer is the training job (follow it at ``/training/jobs/{id}``).
"""

from __future__ import annotations

from tornado import web

from .. import containment
from ..errors import InvalidInput
from ..locale.messages import _t
from .base import CubeHandler

FIELDS = {"config", "folder", "project", "nproc"}


class FinetuneJobsHandler(CubeHandler):
    @web.authenticated
    async def post(self) -> None:
        from ..finetune.service import FinetuneService

        body = self.json_body()
        unknown = sorted(set(body) - FIELDS)
        if unknown:
            raise InvalidInput(
                _t("unknown fields {unknown}", unknown=unknown),
                _t("Known: {value}", value=", ".join(sorted(FIELDS))),
            )
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
        parsed = await self.call(service.parse, self.caller, config, folder)
        for what, path in (("model", parsed.model), ("data", parsed.data.path)):
            if parsed.base_ref is None or what != "model":  # a registered base is the store's
                containment.resolve(self.root_dir, path, what=what)
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
        job = await self.call(service.prepare, self.caller, parsed, nproc=nproc, cwd=folder)
        job_id = await self.workspace.training.launch(job)
        self.reply(await self.call(self.workspace.training.get, self.caller, job_id), 201)
