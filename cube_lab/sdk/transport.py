"""How the SDK reaches cube-lab: in this process (the embedded shape) or over REST.

Both transports hand the SDK the same JSON dicts (the REST API's shapes): the local one calls
the services and converts their results with ``cube_lab.serialize.to_jsonable``, the REST
one parses the answers of ``cube_lab.rest_client.ServiceClient``. Errors are the same
``cube_lab.errors`` classes with the same ``error`` / ``detail`` either way.
"""

from __future__ import annotations

import abc
import asyncio
import os
import shutil
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ENV_ROOT_DIR
from ..errors import InvalidInput
from ..locale.messages import _t

if TYPE_CHECKING:
    from ..identity import Caller
    from ..rest_client import ServiceClient
    from ..workspace import Workspace

Json = dict[str, Any]


def lineage_fields() -> Json:
    """What ``cube_lab.registry.register`` records of where it runs (REST shape)."""
    from .. import datasets as dataset_helper
    from ..registry import _current_source
    from ..training.local import ENV_JOB_ID

    return {
        "source": _current_source(),
        "training_job_id": os.environ.get(ENV_JOB_ID) or None,
        "datasets": dataset_helper.used() or None,
    }


def model_cache_root() -> Path:
    """Where model versions fetched over REST are kept, per user:
    ``$XDG_CACHE_HOME/cube-lab/models`` (``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "cube-lab" / "models"


def run_cache_root() -> Path:
    """Where pipeline run outputs fetched over REST are kept, per user, mirroring the server's
    runs folder: ``$XDG_CACHE_HOME/cube-lab/runs``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "cube-lab" / "runs"


def output_tops(results: list[str]) -> list[str]:
    """The saved outputs among a node's result paths (relative to the runs folder:
    ``RUN/nodes/NODE/outputs/I-NAME[/...]``), each once, in declared order (``I``)."""
    tops: dict[str, int] = {}
    for rel in results:
        parts = rel.split("/")
        if len(parts) >= 5 and parts[1] == "nodes" and parts[3] == "outputs":
            index, _, _ = parts[4].partition("-")
            tops.setdefault("/".join(parts[:5]), int(index) if index.isdigit() else 0)
    return sorted(tops, key=lambda top: tops[top])


def _fetched(path: Path, size: int) -> bool:
    """A run's saved output never changes: a copy of the right size is the one."""
    try:
        return path.stat().st_size == size
    except OSError:
        return False


def deliver(source: Path, target: Path, filename: str) -> Path:
    """Copy a file or folder to ``target``: into it when it is a folder, else as it."""
    dest = target / filename if target.is_dir() else target
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, dest, dirs_exist_ok=True)
    else:
        shutil.copyfile(source, dest)
    return dest


class Transport(abc.ABC):
    """The calls the SDK makes; every one answers REST JSON."""

    kind = "?"

    @abc.abstractmethod
    def personal_project(self) -> str:
        """Implemented by each transport."""

    @abc.abstractmethod
    def list_models(self, project: str | None, q: str | None) -> list[Json]:
        """Implemented by each transport."""

    @abc.abstractmethod
    def get_version(self, project: str, name: str, ref: str) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def register(self, obj_or_path: Any, fields: Json) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def download(self, project: str, name: str, ref: str, target: Path) -> Path:
        """Implemented by each transport."""

    @abc.abstractmethod
    def artifact(self, version: Json) -> Path:
        """A path here of the version's artifact (its REST JSON), to read, not to change: the
        store's own file in this process, a copy cached once (a version never changes) over
        REST."""

    @abc.abstractmethod
    def start_run(self, path: str | os.PathLike[str], body: Json) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def get_run(self, run_id: str) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def list_runs(
        self, path: str | os.PathLike[str] | None, project: str | None, limit: int
    ) -> list[Json]:
        """Implemented by each transport."""

    @abc.abstractmethod
    def log_chunk(self, run_id: str, node_id: str, offset: int) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def cancel_run(self, run_id: str) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def node_outputs(self, run_id: str, node_id: str) -> list[Path]:
        """The run's saved copies of the node's declared outputs, in declared order: the run
        folder's own in this process, a cached download over REST."""

    # -- training jobs ------------------------------------------------------------------

    @abc.abstractmethod
    def start_job(self, spec: Json) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def get_job(self, job_id: str) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def list_jobs(self, project: str | None, limit: int) -> list[Json]:
        """Implemented by each transport."""

    @abc.abstractmethod
    def job_log(self, job_id: str, offset: int) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def job_metrics(self, job_id: str) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def stop_job(self, job_id: str) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def register_job(self, job_id: str, body: Json) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def start_finetune(self, config: Json, folder: Path, project: str | None, nproc: int) -> Json:
        """Implemented by each transport: a fine-tune, started as a training job."""

    @abc.abstractmethod
    def finetune_estimate(
        self, config: Json, folder: Path, project: str | None, nproc: int
    ) -> Json:
        """Implemented by each transport: the memory a fine-tune needs per process."""

    @abc.abstractmethod
    def start_merge(self, model: str, project: str | None) -> Json:
        """Implemented by each transport: an adapter version merged, as a training job."""

    @abc.abstractmethod
    def start_evaluation(self, config: Json, folder: Path, project: str | None) -> Json:
        """Implemented by each transport: an evaluation, started as a training job."""

    @abc.abstractmethod
    def evaluation(self, job_id: str) -> Json:
        """Implemented by each transport: an evaluation job's result."""

    # -- tuning experiments -------------------------------------------------------------

    @abc.abstractmethod
    def start_experiment(self, config: Json, folder: Path, project: str | None) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def get_experiment(self, experiment_id: str) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def list_experiments(self, project: str | None, limit: int) -> list[Json]:
        """Implemented by each transport."""

    @abc.abstractmethod
    def stop_experiment(self, experiment_id: str) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def register_trial(self, experiment_id: str, body: Json) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def trial_log(self, experiment_id: str, trial_id: str, offset: int) -> Json:
        """Implemented by each transport."""

    # -- deployments --------------------------------------------------------------------

    @abc.abstractmethod
    def deploy(self, body: Json) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def get_deployment(self, project: str, name: str) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def list_deployments(self, project: str | None) -> list[Json]:
        """Implemented by each transport."""

    @abc.abstractmethod
    def deployment_log(self, project: str, name: str, offset: int) -> Json:
        """Implemented by each transport."""

    @abc.abstractmethod
    def deployment_metrics(self, project: str, name: str) -> str:
        """Implemented by each transport: the router's Prometheus text."""

    @abc.abstractmethod
    def infer(self, project: str, name: str, body: Json) -> Json:
        """``{"status", "version", "body"}``: the deployment's answer to an OIP v2 request."""

    @abc.abstractmethod
    def undeploy(self, project: str, name: str) -> Json:
        """Implemented by each transport."""

    # -- datasets -----------------------------------------------------------------------

    @abc.abstractmethod
    def create_dataset(self, body: Json) -> Json:
        """Implemented by each transport: ``POST /datasets``'s fields (``path`` as given)."""

    @abc.abstractmethod
    def get_dataset(self, project: str, name: str) -> Json:
        """Implemented by each transport: the dataset with its versions."""

    @abc.abstractmethod
    def list_datasets(self, project: str | None) -> list[Json]:
        """Implemented by each transport."""

    @abc.abstractmethod
    def dataset_items(self, project: str, name: str) -> list[Json]:
        """Implemented by each transport: the items as registered (id, name, size or text)."""

    @abc.abstractmethod
    def item_content(self, project: str, name: str, item_id: int) -> bytes:
        """Implemented by each transport: one item's bytes (the image file, or the text)."""

    # -- labeling projects --------------------------------------------------------------

    @abc.abstractmethod
    def create_labeling(self, body: Json) -> Json:
        """Implemented by each transport: ``POST /labeling``'s fields."""

    @abc.abstractmethod
    def get_labeling(self, project: str, name: str) -> Json:
        """Implemented by each transport (with its progress)."""

    @abc.abstractmethod
    def list_labeling(self, project: str | None) -> list[Json]:
        """Implemented by each transport."""

    @abc.abstractmethod
    def assign_labeling(self, project: str, name: str, body: Json) -> Json:
        """Implemented by each transport: ``{"assigned": {user: count}}``."""

    @abc.abstractmethod
    def export_labeling(self, project: str, name: str, body: Json) -> Json:
        """Implemented by each transport: the dataset version written (``ExportView``)."""


def job_paths(spec: Json) -> tuple[Json, str | None]:
    """An absolute script with no working_dir runs in its own folder: (spec, working_dir)."""
    script, working_dir = spec.get("script"), spec.get("working_dir")
    if script and Path(script).expanduser().is_absolute() and not working_dir:
        where = Path(script).expanduser()
        return {**spec, "script": where.name}, str(where.parent)
    return spec, working_dir


def in_thread(target: Any, *args: Any, name: str) -> threading.Thread:
    """Run ``target(*args)`` in a daemon thread: the work goes on between notebook cells."""
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread


class LocalTransport(Transport):
    """The embedded shape: this process opens the store (``default_workspace()``)."""

    kind = "local"

    def __init__(self, workspace: Workspace | None = None) -> None:
        self._workspace = workspace
        self._threads: dict[str, threading.Thread] = {}

    @property
    def ws(self) -> Workspace:
        if self._workspace is None:
            from ..workspace import default_workspace

            self._workspace = default_workspace()
        return self._workspace

    @property
    def caller(self) -> Caller:
        from ..config import local_username
        from ..identity import Caller

        return Caller(local_username())

    @staticmethod
    def _root() -> Path | None:
        raw = os.environ.get(ENV_ROOT_DIR)
        return Path(raw).resolve() if raw else None

    @staticmethod
    def _json(value: Any) -> Any:
        from ..serialize import to_jsonable

        return to_jsonable(value)

    def personal_project(self) -> str:
        with self.ws.store.write() as s:
            return str(self.ws.projects.personal_project(s, self.caller).name)

    def list_models(self, project: str | None, q: str | None) -> list[Json]:
        models: list[Json] = []
        while True:
            page = self._json(
                self.ws.registry.list_models(
                    self.caller, q=q, project=project, limit=500, offset=len(models)
                )
            )
            models.extend(page["models"])
            if len(models) >= page["total"] or not page["models"]:
                return models

    def get_version(self, project: str, name: str, ref: str) -> Json:
        return self._json(self.ws.registry.get_version(self.caller, project, name, ref))

    def register(self, obj_or_path: Any, fields: Json) -> Json:
        from .. import containment
        from .. import datasets as dataset_helper

        lineage = lineage_fields()
        is_path = isinstance(obj_or_path, str | os.PathLike)
        path = (
            containment.real(Path(containment.check_text(obj_or_path)).expanduser())
            if is_path
            else None
        )
        if path is not None and not path.exists():
            raise InvalidInput(
                _t("path {value!r} does not exist", value=str(obj_or_path)),
                _t("Give a model file or folder."),
            )
        version = self.ws.registry.register(
            self.caller,
            path=path,
            obj=None if is_path else obj_or_path,
            **{
                **fields,
                "source": fields.get("source") or lineage["source"],
                "training_job_id": fields.get("training_job_id") or lineage["training_job_id"],
                "datasets": dataset_helper.lineage_for_register(fields.get("datasets")),
            },
        )
        return self._json(version)

    def download(self, project: str, name: str, ref: str, target: Path) -> Path:
        found = self.ws.registry.download(self.caller, project, name, ref)
        return deliver(Path(found.path), target, found.filename)

    def artifact(self, version: Json) -> Path:
        found = self.ws.registry.download(
            self.caller, version["project"], version["model"], version["version"]
        )
        return Path(found.path)

    def _pipeline_root(self, path: Path) -> Path:
        # The rule of the CLI's ``cube-lab pipeline run``: the server root when the file is
        # inside it, else the current folder when it is under it, else the file's folder.
        root = self._root()
        if root and path.is_relative_to(root):
            return root
        cwd = Path.cwd().resolve()
        return cwd if path.is_relative_to(cwd) else path.parent

    def start_run(self, path: str | os.PathLike[str], body: Json) -> Json:
        from .. import containment

        file = containment.real(Path(containment.check_text(path)).expanduser())
        if file.suffix != ".pipeline":
            raise InvalidInput(_t("{raw!r} is not a .pipeline file", raw=str(path)))
        service = self.ws.pipelines
        runner, recorder = service.prepare(
            self.caller,
            file,
            self._pipeline_root(file),
            project=body.get("project"),
            params=body.get("params") or {},
            only=body.get("only"),
            cache=bool(body.get("cache")),
        )
        run_id = runner.plan.run_id
        # The kernel's own event loop runs only between cells: the run gets a loop of its
        # own in a thread, so it goes on while the user runs other cells (or waits).
        thread = threading.Thread(
            target=asyncio.run,
            args=(service.execute(runner, recorder),),
            name=f"cube-lab run {run_id}",
            daemon=True,
        )
        thread.start()
        self._threads[run_id] = thread
        return self.get_run(run_id)

    def get_run(self, run_id: str) -> Json:
        return self._json(self.ws.pipelines.get_run(self.caller, run_id, self._root()))

    def list_runs(
        self, path: str | os.PathLike[str] | None, project: str | None, limit: int
    ) -> list[Json]:
        file = Path(path).expanduser().resolve() if path is not None else None
        return self._json(
            self.ws.pipelines.list_runs(
                self.caller, path=file, project=project, root=self._root(), limit=limit
            )
        )

    def log_chunk(self, run_id: str, node_id: str, offset: int) -> Json:
        return self._json(self.ws.pipelines.tail_log(self.caller, run_id, node_id, offset))

    def cancel_run(self, run_id: str) -> Json:
        return self._json(self.ws.pipelines.cancel(self.caller, run_id))

    def node_outputs(self, run_id: str, node_id: str) -> list[Path]:
        service = self.ws.pipelines
        results = service.results(self.caller, run_id, node_id)
        return [service.runs_root / top for top in output_tops([r.path for r in results])]

    # -- training jobs ------------------------------------------------------------------

    def start_job(self, spec: Json) -> Json:
        service = self.ws.training
        spec, working_dir = job_paths(spec)
        cwd = Path.cwd().resolve()
        root = self._root()
        job = service.prepare(
            self.caller,
            {**spec, "working_dir": working_dir} if working_dir else spec,
            root if root and cwd.is_relative_to(root) else None,
            cwd=cwd,
        )
        return self._launch(job)

    def start_finetune(self, config: Json, folder: Path, project: str | None, nproc: int) -> Json:
        from ..finetune.service import FinetuneService

        service = FinetuneService(self.ws)
        parsed = service.parse(self.caller, {**config, "project": project} if project else config,
                               folder.resolve())  # fmt: skip
        return self._launch(service.prepare(self.caller, parsed, nproc=nproc, cwd=folder))

    def finetune_estimate(
        self, config: Json, folder: Path, project: str | None, nproc: int
    ) -> Json:
        from ..finetune.memory import estimate
        from ..finetune.service import FinetuneService

        service = FinetuneService(self.ws)
        parsed = service.parse(self.caller, {**config, "project": project} if project else config,
                               folder.resolve())  # fmt: skip
        return estimate(parsed)

    def start_merge(self, model: str, project: str | None) -> Json:
        from ..finetune.service import FinetuneService

        service = FinetuneService(self.ws)
        return self._launch(service.prepare_merge(self.caller, model, project=project))

    def start_evaluation(self, config: Json, folder: Path, project: str | None) -> Json:
        from ..finetune.service import FinetuneService

        service = FinetuneService(self.ws)
        raw = {**config, "project": project} if project else config
        parsed = service.parse_evaluation(self.caller, raw, folder.resolve())
        return self._launch(service.prepare_evaluation(self.caller, parsed))

    def evaluation(self, job_id: str) -> Json:
        from ..finetune.service import FinetuneService

        return FinetuneService(self.ws).evaluation(self.caller, job_id)

    def _launch(self, job: Any) -> Json:
        """Start a prepared training job in a thread of this process (a cluster one is
        submitted first, then followed)."""
        from ..training.cluster import ClusterJob

        service = self.ws.training
        if isinstance(job, ClusterJob):
            asyncio.run(service.submit(job))  # its objects exist on the cluster, or this fails
            job_id = job.job_id

            async def follow() -> str:
                return await service._follow(job)  # the CLI foreground path

            self._threads[job_id] = in_thread(asyncio.run, follow(), name=f"cube-lab {job_id}")
        else:
            job_id = job.plan.job_id
            service._running[job_id] = job  # a stop() at once finds it
            self._threads[job_id] = in_thread(
                asyncio.run, service.execute(job), name=f"cube-lab job {job_id}"
            )
        return self.get_job(job_id)

    def get_job(self, job_id: str) -> Json:
        return self._json(self.ws.training.get(self.caller, job_id))

    def list_jobs(self, project: str | None, limit: int) -> list[Json]:
        return self._json(self.ws.training.list(self.caller, project=project, limit=limit))

    def job_log(self, job_id: str, offset: int) -> Json:
        return self._json(self.ws.training.tail_log(self.caller, job_id, offset))

    def job_metrics(self, job_id: str) -> Json:
        return self._json(self.ws.training.metrics(self.caller, job_id))

    def stop_job(self, job_id: str) -> Json:
        return self._json(self.ws.training.stop(self.caller, job_id))

    def register_job(self, job_id: str, body: Json) -> Json:
        path = body.get("path")
        version = self.ws.training.register_model(
            self.caller,
            job_id,
            body.get("name"),
            str(Path(path).expanduser().resolve()) if path else None,
            project=body.get("project"),
            description=body.get("description") or "",
        )
        return self._json(version)

    # -- tuning experiments -------------------------------------------------------------

    def start_experiment(self, config: Json, folder: Path, project: str | None) -> Json:
        from ..tuning.quiet import tuners_quiet

        service = self.ws.tuning
        if project:
            config = {**config, "project": project}
        engine = service.prepare(self.caller, service.parse(config, folder.resolve()))

        def work() -> None:
            with tuners_quiet():
                asyncio.run(service.execute(engine))

        exp_id = engine.experiment_id
        self._threads[exp_id] = in_thread(work, name=f"cube-lab tune {exp_id}")
        return self.get_experiment(exp_id)

    def get_experiment(self, experiment_id: str) -> Json:
        return self._json(self.ws.tuning.get(self.caller, experiment_id))

    def list_experiments(self, project: str | None, limit: int) -> list[Json]:
        return self._json(self.ws.tuning.list(self.caller, project=project, limit=limit))

    def stop_experiment(self, experiment_id: str) -> Json:
        return self._json(self.ws.tuning.stop(self.caller, experiment_id))

    def register_trial(self, experiment_id: str, body: Json) -> Json:
        version = self.ws.tuning.register_trial(
            self.caller,
            experiment_id,
            body.get("name"),
            body.get("trial"),
            body.get("path"),
            project=body.get("project"),
            description=body.get("description") or "",
        )
        return self._json(version)

    def trial_log(self, experiment_id: str, trial_id: str, offset: int) -> Json:
        return self._json(self.ws.tuning.tail_log(self.caller, experiment_id, trial_id, offset))

    # -- deployments --------------------------------------------------------------------

    def deploy(self, body: Json) -> Json:
        fields = {k: v for k, v in body.items() if k != "model"}
        return self._json(self.ws.serving.deploy(self.caller, body.get("model"), **fields))

    def get_deployment(self, project: str, name: str) -> Json:
        return self._json(self.ws.serving.get(self.caller, name, project))

    def list_deployments(self, project: str | None) -> list[Json]:
        return self._json(self.ws.serving.list(self.caller, project=project))

    def deployment_log(self, project: str, name: str, offset: int) -> Json:
        return self._json(self.ws.serving.tail_log(self.caller, name, offset, project=project))

    def deployment_metrics(self, project: str, name: str) -> str:
        return self.ws.serving.metrics(self.caller, name, project)

    def infer(self, project: str, name: str, body: Json) -> Json:
        # what the server's infer route does: to the router with its token (no API key)
        import json
        import urllib.error
        import urllib.request

        from ..errors import Conflict

        view = self.ws.serving.get(self.caller, name, project)
        if not view.endpoint:
            raise Conflict(
                _t("deployment {name!r} is not running ({status})", name=name, status=view.status)
            )
        token = self.ws.serving.router_token(self.caller, name, project)
        request = urllib.request.Request(
            f"{view.endpoint}/v2/models/{view.model}/infer",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "X-Cube-Token": token},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as resp:
                code, headers, raw = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as exc:
            code, headers, raw = exc.code, exc.headers, exc.read()
        except OSError as exc:
            raise Conflict(
                _t("deployment {name!r} does not answer: {exc}", name=name, exc=str(exc))
            ) from None
        try:
            answer: Any = json.loads(raw or b"null")
        except ValueError:
            answer = raw.decode("utf-8", "replace")
        return {"status": code, "version": headers.get("X-Cube-Version"), "body": answer}

    def undeploy(self, project: str, name: str) -> Json:
        return self._json(self.ws.serving.undeploy(self.caller, name, project=project))

    # -- datasets -----------------------------------------------------------------------

    def create_dataset(self, body: Json) -> Json:
        view = self.ws.datasets.create(
            self.caller,
            body.get("name"),
            Path(body["path"]).expanduser().resolve(),
            project=body.get("project"),
            kind=body.get("kind"),
            text_field=body.get("text_field"),
        )
        return self._json(view)

    def get_dataset(self, project: str, name: str) -> Json:
        return self._json(self.ws.datasets.get(self.caller, project, name))

    def list_datasets(self, project: str | None) -> list[Json]:
        return self._json(self.ws.datasets.list(self.caller, project))

    def dataset_items(self, project: str, name: str) -> list[Json]:
        return self._json(self.ws.datasets.items(self.caller, project, name))

    def item_content(self, project: str, name: str, item_id: int) -> bytes:
        from .. import containment

        content, _ = self.ws.datasets.item_content(self.caller, project, name, item_id)
        if isinstance(content, bytes):
            return content
        return containment.read_inside(content, content.parent)  # what the REST route does

    # -- labeling projects --------------------------------------------------------------

    def create_labeling(self, body: Json) -> Json:
        fields = {k: v for k, v in body.items() if k != "name"}
        return self._json(self.ws.labeling.create(self.caller, body.get("name"), **fields))

    def get_labeling(self, project: str, name: str) -> Json:
        return self._json(self.ws.labeling.get(self.caller, project, name))

    def list_labeling(self, project: str | None) -> list[Json]:
        return self._json(self.ws.labeling.list(self.caller, project))

    def assign_labeling(self, project: str, name: str, body: Json) -> Json:
        assigned = self.ws.labeling.assign(
            self.caller,
            project,
            name,
            body.get("users"),
            body.get("mode") or "round_robin",
            body.get("batch_size"),
        )
        return {"assigned": self._json(assigned)}

    def export_labeling(self, project: str, name: str, body: Json) -> Json:
        view = self.ws.labeling.export(
            self.caller, project, name, body.get("format"), body.get("only"),
            body.get("class_order"),
        )  # fmt: skip
        return self._json(view)


class RestTransport(Transport):
    """A cube-lab server or service over REST, as the token's user.

    Paths go to the server relative to its root: ``root`` is that folder as seen from here
    (the home under the hub); without it only relative paths can be sent, as they are."""

    kind = "rest"

    def __init__(self, client: ServiceClient, root: Path | None = None) -> None:
        from .view_locale import view_locale

        client.locale = view_locale  # the server's errors in the notebook's language
        self.client = client
        self.root = Path(os.path.abspath(root)) if root is not None else None
        self._personal: str | None = None

    def __repr__(self) -> str:
        return f"<cube-lab REST connection to {self.client.base_url}>"

    def relative(self, raw: str | os.PathLike[str], what: str) -> str:
        given = Path(raw).expanduser()
        if self.root is None:
            if given.is_absolute():
                raise InvalidInput(
                    _t(
                        "{what} {raw!r} is absolute, but the server's root is not known here",
                        what=what,
                        raw=str(raw),
                    ),
                    _t(
                        "Give it relative to the server's root, or cl.connect(url, token=..., "
                        "root=FOLDER) with the server's root as this machine sees it."
                    ),
                )
            return given.as_posix()
        absolute = Path(os.path.abspath(Path.cwd() / given))
        for base, p in ((self.root, absolute), (self.root.resolve(), absolute.resolve())):
            if p.is_relative_to(base):
                return p.relative_to(base).as_posix() or "."
        raise InvalidInput(
            _t(
                "{what} {raw!r} is outside the server's root {root}",
                what=what,
                raw=str(raw),
                root=str(self.root),
            ),
            _t("The server reaches only files under its root; copy or move it there first."),
        )

    def personal_project(self) -> str:
        if self._personal is None:
            me = self.client.get("whoami")
            for project in me.get("projects") or []:
                if project.get("kind") == "personal" and project.get("role") == "owner":
                    self._personal = str(project["name"])
                    return self._personal
            raise InvalidInput(
                _t(
                    "the cube-lab server names no personal project of {user}",
                    user=me.get("user"),
                ),
                _t("Pass project=NAME."),
            )
        return self._personal

    @staticmethod
    def _model(project: str, name: str) -> str:
        from ..rest_client import segment

        return f"projects/{segment(project)}/models/{segment(name)}"

    def list_models(self, project: str | None, q: str | None) -> list[Json]:
        models: list[Json] = []
        while True:
            page = self.client.get("models", q=q, project=project, limit=500, offset=len(models))
            models.extend(page["models"])
            if len(models) >= page["total"] or not page["models"]:
                return models

    def get_version(self, project: str, name: str, ref: str) -> Json:
        from ..rest_client import segment

        return self.client.get(f"{self._model(project, name)}/versions/{segment(ref)}")

    def register(self, obj_or_path: Any, fields: Json) -> Json:
        lineage = lineage_fields()
        body = {k: v for k, v in {**lineage, **fields}.items() if v is not None}
        if lineage["datasets"] and fields.get("datasets"):
            body["datasets"] = [*fields["datasets"], *lineage["datasets"]]
        if isinstance(obj_or_path, str | os.PathLike):
            return self.client.post("models", {**body, "path": self.relative(obj_or_path, "path")})
        if self.root is None:
            raise InvalidInput(
                _t("an object can be registered over REST only when the server's root is known"),
                _t(
                    "Save it to a file under the server's root and register the path, or "
                    "cl.connect(url, token=..., root=FOLDER)."
                ),
            )
        from ..registry.flavors import save_object

        scratch = self.root / ".cube-lab" / "uploads"
        scratch.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="model-", dir=scratch))
        try:  # the server copies the artifact from here into its store
            artifact, flavor, _ = save_object(obj_or_path, folder)
            body.setdefault("flavor", flavor)
            rel = (folder / artifact).relative_to(self.root).as_posix()
            return self.client.post("models", {**body, "path": rel})
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def download(self, project: str, name: str, ref: str, target: Path) -> Path:
        from ..rest_client import segment

        where = f"{self._model(project, name)}/versions/{segment(ref)}/download"
        with self.client.stream(where) as answer:
            filename = answer.filename or f"{name}-{ref}"
            if answer.headers.get("Content-Type", "").startswith("application/zip"):
                with tempfile.TemporaryDirectory(prefix="cube-download-") as tmp:
                    archive = Path(tmp) / "a.zip"
                    answer.save(archive)
                    out = Path(tmp) / "out"
                    with zipfile.ZipFile(archive) as zf:
                        for member in zf.namelist():  # nothing may land outside ``out``
                            if Path(member).is_absolute() or ".." in Path(member).parts:
                                raise InvalidInput(
                                    _t("the download holds a bad path {member!r}", member=member)
                                )
                        zf.extractall(out)
                    entries = list(out.iterdir())
                    folder = entries[0] if len(entries) == 1 and entries[0].is_dir() else out
                    return deliver(folder, target, filename.removesuffix(".zip"))
            dest = target / filename if target.is_dir() else target
            dest.parent.mkdir(parents=True, exist_ok=True)
            answer.save(dest)
            return dest

    def artifact(self, version: Json) -> Path:
        from .. import datasets as cache  # the datasets' cache rules, in a folder of models'
        from ..rest_client import segment

        project, name, number = version["project"], version["model"], int(version["version"])
        folder = model_cache_root() / cache._safe(project) / cache._safe(name) / str(number)
        mark = {"id": version["id"], "version": number, "checksum": version["checksum"]}
        target = folder / str(version["artifact_name"])
        if not cache._cached(folder, mark, target):
            where = f"{self._model(project, name)}/versions/{segment(str(number))}/download"
            cache._download(self.client, where, folder, target.name, mark)
        return target

    def start_run(self, path: str | os.PathLike[str], body: Json) -> Json:
        payload = {k: v for k, v in body.items() if v is not None}
        return self.client.post(
            "pipelines/runs", {**payload, "path": self.relative(path, "pipeline")}
        )

    def get_run(self, run_id: str) -> Json:
        from ..rest_client import segment

        return self.client.get(f"pipelines/runs/{segment(run_id)}")

    def list_runs(
        self, path: str | os.PathLike[str] | None, project: str | None, limit: int
    ) -> list[Json]:
        rel = self.relative(path, "pipeline") if path is not None else None
        return self.client.get("pipelines/runs", path=rel, project=project, limit=limit)["runs"]

    def log_chunk(self, run_id: str, node_id: str, offset: int) -> Json:
        from ..rest_client import segment

        return self.client.get(
            f"pipelines/runs/{segment(run_id)}/nodes/{segment(node_id)}/log", offset=offset
        )

    def cancel_run(self, run_id: str) -> Json:
        from ..rest_client import segment

        return self.client.post(f"pipelines/runs/{segment(run_id)}/cancel")

    def node_outputs(self, run_id: str, node_id: str) -> list[Path]:
        from ..rest_client import segment

        where = f"pipelines/runs/{segment(run_id)}/nodes/{segment(node_id)}/results"
        files = self.client.get(where)["results"]
        cache = run_cache_root()
        for f in files:
            rel = str(f["path"])
            if output_tops([rel]) and not _fetched(cache / rel, int(f["size_bytes"])):
                parts = "/".join(segment(p) for p in rel.split("/"))
                target = cache / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(f".{target.name}.part")
                with self.client.stream(f"{where}/{parts}") as answer:
                    answer.save(partial)
                partial.replace(target)  # whole or not at all
        return [cache / top for top in output_tops([str(f["path"]) for f in files])]

    # -- training jobs ------------------------------------------------------------------

    @staticmethod
    def _job(job_id: str) -> str:
        from ..rest_client import segment

        return f"training/jobs/{segment(job_id)}"

    def start_job(self, spec: Json) -> Json:
        spec, working_dir = job_paths(spec)
        # the server starts relative paths at its root: the working dir is this folder
        where = self.relative(working_dir or ".", "working_dir")
        return self.client.post("training/jobs", {**spec, "working_dir": where})

    def get_job(self, job_id: str) -> Json:
        return self.client.get(self._job(job_id))

    def start_finetune(self, config: Json, folder: Path, project: str | None, nproc: int) -> Json:
        body = {"config": config, "folder": self.relative(folder, "folder"), "nproc": nproc}
        return self.client.post("finetune/jobs", {**body, "project": project} if project else body)

    def finetune_estimate(
        self, config: Json, folder: Path, project: str | None, nproc: int
    ) -> Json:
        body = {"config": config, "folder": self.relative(folder, "folder"), "nproc": nproc}
        path = "finetune/estimate"
        return self.client.post(path, {**body, "project": project} if project else body)

    def start_merge(self, model: str, project: str | None) -> Json:
        body = {"model": model, "project": project} if project else {"model": model}
        return self.client.post("finetune/merge", body)

    def start_evaluation(self, config: Json, folder: Path, project: str | None) -> Json:
        body = {"config": config, "folder": self.relative(folder, "folder")}
        path = "finetune/evaluations"
        return self.client.post(path, {**body, "project": project} if project else body)

    def evaluation(self, job_id: str) -> Json:
        from ..rest_client import segment

        return self.client.get(f"finetune/evaluations/{segment(job_id)}")

    def list_jobs(self, project: str | None, limit: int) -> list[Json]:
        return self.client.get("training/jobs", project=project, limit=limit)["jobs"]

    def job_log(self, job_id: str, offset: int) -> Json:
        return self.client.get(f"{self._job(job_id)}/log", offset=offset)

    def job_metrics(self, job_id: str) -> Json:
        return self.client.get(f"{self._job(job_id)}/metrics")

    def stop_job(self, job_id: str) -> Json:
        return self.client.post(f"{self._job(job_id)}/stop")

    def register_job(self, job_id: str, body: Json) -> Json:
        payload = {k: v for k, v in body.items() if v not in (None, "")}
        if payload.get("path"):
            payload["path"] = self.relative(payload["path"], "path")
        return self.client.post(f"{self._job(job_id)}/register", payload)

    # -- tuning experiments -------------------------------------------------------------

    @staticmethod
    def _experiment(experiment_id: str) -> str:
        from ..rest_client import segment

        return f"tuning/experiments/{segment(experiment_id)}"

    def start_experiment(self, config: Json, folder: Path, project: str | None) -> Json:
        body = {"config": config, "folder": self.relative(folder, "folder")}
        if project:
            body["project"] = project
        return self.client.post("tuning/experiments", body)

    def get_experiment(self, experiment_id: str) -> Json:
        return self.client.get(self._experiment(experiment_id))

    def list_experiments(self, project: str | None, limit: int) -> list[Json]:
        return self.client.get("tuning/experiments", project=project, limit=limit)["experiments"]

    def stop_experiment(self, experiment_id: str) -> Json:
        return self.client.post(f"{self._experiment(experiment_id)}/stop")

    def register_trial(self, experiment_id: str, body: Json) -> Json:
        payload = {k: v for k, v in body.items() if v not in (None, "")}
        return self.client.post(f"{self._experiment(experiment_id)}/register", payload)

    def trial_log(self, experiment_id: str, trial_id: str, offset: int) -> Json:
        from ..rest_client import segment

        return self.client.get(
            f"{self._experiment(experiment_id)}/trials/{segment(trial_id)}/log", offset=offset
        )

    # -- deployments --------------------------------------------------------------------

    @staticmethod
    def _deployment(project: str, name: str) -> str:
        from ..rest_client import segment

        return f"projects/{segment(project)}/deployments/{segment(name)}"

    def deploy(self, body: Json) -> Json:
        return self.client.post("deployments", {k: v for k, v in body.items() if v is not None})

    def get_deployment(self, project: str, name: str) -> Json:
        return self.client.get(self._deployment(project, name))

    def list_deployments(self, project: str | None) -> list[Json]:
        return self.client.get("deployments", project=project)["deployments"]

    def deployment_log(self, project: str, name: str, offset: int) -> Json:
        return self.client.get(f"{self._deployment(project, name)}/log", offset=offset)

    def deployment_metrics(self, project: str, name: str) -> str:
        with self.client.stream(f"{self._deployment(project, name)}/metrics") as answer:
            return b"".join(answer.iter_bytes()).decode()

    def infer(self, project: str, name: str, body: Json) -> Json:
        return self.client.post(f"{self._deployment(project, name)}/infer", body)

    def undeploy(self, project: str, name: str) -> Json:
        return self.client.delete(self._deployment(project, name))

    # -- datasets -----------------------------------------------------------------------

    def create_dataset(self, body: Json) -> Json:
        payload = {k: v for k, v in body.items() if v is not None}
        payload["path"] = self.relative(body["path"], "dataset path")
        return self.client.post("datasets", payload)

    def get_dataset(self, project: str, name: str) -> Json:
        from ..rest_client import segment

        return self.client.get(f"projects/{segment(project)}/datasets/{segment(name)}")

    def list_datasets(self, project: str | None) -> list[Json]:
        return self.client.get("datasets", project=project)["datasets"]

    def dataset_items(self, project: str, name: str) -> list[Json]:
        from ..rest_client import segment

        path = f"projects/{segment(project)}/datasets/{segment(name)}/items"
        return self.client.get(path)["items"]

    def item_content(self, project: str, name: str, item_id: int) -> bytes:
        from ..rest_client import segment

        path = f"projects/{segment(project)}/datasets/{segment(name)}/items/{item_id}/content"
        with self.client.stream(path) as answer:
            return b"".join(answer.iter_bytes())

    # -- labeling projects --------------------------------------------------------------

    @staticmethod
    def _labeling(project: str, name: str) -> str:
        from ..rest_client import segment

        return f"projects/{segment(project)}/labeling/{segment(name)}"

    def create_labeling(self, body: Json) -> Json:
        return self.client.post("labeling", {k: v for k, v in body.items() if v is not None})

    def get_labeling(self, project: str, name: str) -> Json:
        return self.client.get(self._labeling(project, name))

    def list_labeling(self, project: str | None) -> list[Json]:
        return self.client.get("labeling", project=project)["projects"]

    def assign_labeling(self, project: str, name: str, body: Json) -> Json:
        payload = {k: v for k, v in body.items() if v is not None}
        return self.client.post(f"{self._labeling(project, name)}/assign", payload)

    def export_labeling(self, project: str, name: str, body: Json) -> Json:
        payload = {k: v for k, v in body.items() if v is not None}
        return self.client.post(f"{self._labeling(project, name)}/export", payload)
