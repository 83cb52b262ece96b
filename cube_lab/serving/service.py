"""Deployments as a service: deploy a registered model version, list, undeploy, and change
traffic (canary split, shadow, promote, roll back, switch versions without dropping a request).

A local deployment is a folder ``<data_dir>/serving/<id>/`` (``log.txt`` with every
process' output, ``config.json`` the routing table, ``ready/`` the port files) and a group of
background processes: one router on the deployment's port and one model server per replica
and version. This service knows no processes: its backend (``backend.ServingBackend``;
``local_backend.LocalBackend`` here) starts them from a plan (an ``OIPSpec`` or an
``LLMPlan``), watches and ends them. Their pids and ports are recorded, so a restarted server
adopts the deployments still answering and marks the others dead, ending what is left of their
processes: only those the backend still finds its own (start time and boot id).

Who may call a deployment (API keys, rate limits, client address lists) is its ``access``
(see ``access.py``): stored on the record and in ``deployment_keys``, pushed to the router with
the routing table, enforced there.

Plain Python and synchronous: the REST handlers call it in a worker thread, the CLI directly.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from .. import accounts, quota
from ..accounts import RunAs
from ..config import Settings
from ..errors import Conflict, InvalidInput, NotFound
from ..identity import Caller, check_name
from ..locale.messages import _t
from ..logtail import LOG_CHUNK, LogChunk, read_chunk
from ..projects import ProjectService
from ..serialize import aware
from ..store import Store
from ..store.models import Deployment, DeploymentKey
from . import access as acc
from . import backend_auth
from .backend import DeploymentFailed, OIPSpec, ServingBackend, Started
from .llm import deploy as llm
from .local_backend import READY_TIMEOUT_S, RUN_DIR, STOP_GRACE_S, Forked, LocalBackend, share_read
from .local_backend import identity as _identity
from .local_backend import still_ours_of as _still_ours
from .router_client import RouterClient
from .router_client import loopback as _loopback

__all__ = [  # what other modules import from here (some moved to the backend's modules)
    "ACTIVE",
    "DRAIN_TIMEOUT_S",
    "READY_TIMEOUT_S",
    "RUN_DIR",
    "STOP_GRACE_S",
    "DeploymentFailed",
    "DeploymentService",
    "DeploymentView",
    "Forked",
    "KeyView",
    "RouterClient",
    "_identity",
    "_still_ours",
]

ACTIVE = ("starting", "running", "updating")
MAX_REPLICAS = 16
DRAIN_TIMEOUT_S = 30.0
MODELS_DIR = "models"  # under os_accounts: the copies of the versions they serve


@dataclass(frozen=True)
class DeploymentView:
    id: str
    name: str
    project: str
    owner: str
    model: str
    version: int
    backend: str
    status: str
    replicas: int
    endpoint: str | None  # the base URL: <endpoint>/v2/models/<model>/infer
    traffic: list[dict[str, Any]]  # [{"version": 3, "weight": 90, "shadow": false}, ...]
    previous_version: int | None
    batching: dict[str, Any] | None  # {"max_rows", "wait_ms"} when adaptive batching is on
    samples_percent: float  # the share of requests kept with their answers (opt-in)
    processes: list[dict[str, Any]]
    error: str | None
    created_at: datetime
    updated_at: datetime
    stopped_at: datetime | None
    access: dict[str, Any]  # {"auth", "rate_limit", "allow", "deny"}: who may call it
    # "oip" (OIP v2 and /predict) or "llm" (OpenAI's /v1 API: models, completions, chat)
    runtime: str = "oip"
    # an LLM's engine: transformers, vllm, llamacpp or ollama (None for oip)
    engine: str | None = None
    engine_options: dict[str, Any] | None = None

    @classmethod
    def of(cls, row: Deployment, project: str) -> DeploymentView:
        info = row.info or {}
        running = row.status in ACTIVE and row.port
        processes = []
        if info.get("router"):
            processes.append({"role": "router", **info["router"]})
        processes += [{"role": "server", **s} for s in info.get("servers", [])]
        return cls(
            row.id,
            row.name,
            project,
            row.owner,
            row.model_name,
            row.version,
            row.backend,
            row.status,
            row.replicas,
            f"http://{row.host}:{row.port}" if running else None,
            list(info.get("traffic", [])),
            info.get("previous_version"),
            info.get("batching"),
            float(info.get("samples_percent") or 0.0),
            processes,
            row.error,
            aware(row.created_at),
            aware(row.updated_at),
            aware(row.stopped_at) if row.stopped_at else None,
            acc.normalized(row.access),
            str(info.get("runtime") or "oip"),
            _engine_of(info),
            dict(info.get("engine_options") or {}) if _engine_of(info) else None,
        )


@dataclass(frozen=True)
class KeyView:
    """An API key as listed: never the key itself, except ``key`` in the answer that made it."""

    id: str
    name: str
    prefix: str  # the key's first characters, to tell keys apart
    state: str  # "active" | "expired" | "revoked"
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    key: str | None = None

    @classmethod
    def of(cls, row: DeploymentKey, key: str | None = None) -> KeyView:
        expires = aware(row.expires_at) if row.expires_at else None
        state = (
            "revoked"
            if row.revoked_at
            else "expired"
            if expires is not None and expires <= datetime.now(UTC)
            else "active"
        )
        return cls(
            row.id,
            row.name,
            row.prefix,
            state,
            row.created_by,
            aware(row.created_at),
            expires,
            aware(row.revoked_at) if row.revoked_at else None,
            aware(row.last_used_at) if row.last_used_at else None,
            key,
        )


def _new_id() -> str:
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def _check_percent(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise InvalidInput(
            _t("percent must be a number from 0 to 100"), _t("got {value!r}", value=value)
        )
    return float(value)


class DeploymentService:
    def __init__(
        self,
        store: Store,
        projects: ProjectService,
        settings: Settings,
        registry: Any,
        backend: ServingBackend | None = None,
    ) -> None:
        self.store = store
        self.projects = projects
        self.settings = settings
        self.registry = registry
        self.root = settings.data_dir / "serving"
        # the processes: the router and model servers on this machine unless told otherwise
        self.backend: ServingBackend = backend or LocalBackend(self.root, settings)

    # -- deploy ------------------------------------------------------------------------------------

    def deploy(
        self,
        caller: Caller,
        ref: str,
        *,
        name: str | None = None,
        project: str | None = None,
        replicas: int = 1,
        port: int | None = None,
        host: str = "127.0.0.1",
        batch_max_rows: int = 0,
        batch_wait_ms: float = 0.0,
        samples_percent: float = 0.0,
        auth: str | None = None,
        runtime: str | None = None,
        engine: str | None = None,
        engine_options: dict[str, Any] | None = None,
    ) -> DeploymentView:
        """Serve ``MODEL[:VERSION|ALIAS]``; returns once every process answers ready.

        ``engine`` (an LLM's: ``transformers``, ``vllm``, ``llamacpp``, ``ollama``; None:
        auto) with ``engine_options`` is checked before anything starts (see
        ``llm/deploy.py``); it is stored with the deployment, so canaries and switches start
        their replicas on it too.

        ``runtime`` is ``llm`` (OpenAI's API on the transformers engine: a causal LM folder
        or a peft adapter on its base), ``oip`` (the OIP v2 model server), or left out to
        choose by the version's flavor (see ``llm/deploy.py``).

        ``auth`` is ``required`` (callers need an API key) or ``none``; left out, a name
        deployed before keeps its access settings (and its keys), a new one gets the shape's
        default (``required`` under the hub, ``none`` on the embedded single-user shape).

        ``batch_max_rows`` > 0 turns on adaptive batching in the model servers (up to that
        many rows a call, waiting up to ``batch_wait_ms`` for more); ``samples_percent`` keeps
        that share of requests with their answers in ``samples.jsonl`` (opt-in: it holds
        user data)."""
        model, version_ref = _split(ref)
        name = check_name(name or model, "deployment name")
        replicas = _check_replicas(replicas)
        batching = _check_batching(batch_max_rows, batch_wait_ms)
        samples_percent = _check_percent(samples_percent)
        asked = llm.check_runtime(runtime)
        engine_asked, options = llm.check_engine(engine, engine_options)
        access = acc.default_settings(auth)
        if port is not None and (
            isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535
        ):
            raise InvalidInput(_t("port must be a number from 0 to 65535 (0: any free port)"))
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            project_name = self.projects.resolve(s, caller, project).name
        version = self.registry.get_version(caller, project_name, model, version_ref)
        artifact = self.registry.download(caller, project_name, model, version.version).path
        what = f"{model}:{version.version}"
        chosen = llm.choose(version.flavor, artifact, asked, what, engine_asked)
        picked = _pick_engine(engine_asked, chosen, version.flavor, artifact, what)
        if chosen == "llm" and batching:
            raise InvalidInput(
                _t("the LLM engine batches requests itself (continuous batching)"),
                _t("Leave batch_max_rows and batch_wait_ms out for an LLM deployment."),
            )
        base = self._llm_base(caller, project_name, model, version, artifact)
        dep_id = _new_id()
        folder = self.root / dep_id
        who = self._owner(caller.username, caller.groups)
        # under the hub, the replicas' CPU is reserved for the project before anything starts
        reservation = quota.reserve(project_name, f"serving/{dep_id}", cpu=replicas)
        info: dict[str, Any] = {
            "reservation": reservation,
            "dir": str(folder),
            "token": secrets.token_urlsafe(24),
            # the model servers answer only the router (the key derives from the token);
            # deployments started before it lack the mark, and their routers the key
            "backend_auth": 1,
            "creator_pid": self.backend.creator(),
            "servers": [],
            "traffic": [{"version": version.version, "weight": 100.0, "shadow": False}],
            "previous_version": None,
            "batching": batching,
            "samples_percent": samples_percent,
            "runtime": chosen,
            "runtime_asked": asked,  # a canary or switch of it chooses the same way
            "engine": picked,
            "engine_asked": engine_asked,  # a canary's version picks its engine the same way
            "engine_options": options,
        }
        if who is not None:
            info["owner_groups"] = list(caller.groups)  # a later switch starts servers as them
        try:
            self._record(caller, project_name, dep_id, name, model, version.version, replicas,
                         host, info, access, keep_access=auth is None)  # fmt: skip
        except BaseException:
            quota.release(reservation)
            raise
        try:
            if who is not None:  # first: the folders on the way become passable, not readable
                accounts.job_folder(folder / RUN_DIR, who, self.settings.data_dir)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "ready").mkdir(exist_ok=True)
            # the router starts with the access settings: it never answers unguarded
            first = {"groups": [], "access": self._access_table(dep_id)}
            (folder / "config.json").write_text(json.dumps(first))
            # the router and the model servers start side by side: the import of the
            # model's library is most of the wait, the router's start hides behind it
            router_proc, router_ready = self.backend.start_router(
                name, folder, info["token"], host, port
            )
            info["router"] = {
                "pid": router_proc.pid,
                "port": None,
                **self.backend.identity(router_proc.pid),
            }
            model_path = self._model_files(folder, version.version, artifact, who)
            plan = (
                self._llm_plan(
                    folder, model, version.version, model_path, base, who, (picked, options)
                )
                if chosen == "llm"
                else OIPSpec(model, version.version, version.flavor, model_path, batching)
            )
            spawned = self.backend.start_servers(folder, plan, replicas, _backend_key(info), who)
            info["servers"] = [
                {"version": version.version, "pid": p.pid, **self.backend.identity(p.pid)}
                for p, _ in spawned
            ]
            found = self.backend.wait_ready([(router_proc, router_ready), *spawned], folder)
            info["router"]["port"] = found[0]["port"]
            info["servers"] = self._servers(version.version, spawned, found[1:])
            self._set(dep_id, info=info, port=found[0]["port"], router_pid=router_proc.pid)
            self._apply(dep_id, host, found[0]["port"], info)
        except BaseException as exc:
            self.backend.stop(info)
            quota.release(reservation)
            self._set(
                dep_id,
                status="failed",
                info=info,
                error=getattr(exc, "error", None) or str(exc),
                stopped_at=datetime.now(UTC),
            )
            raise
        self._set(dep_id, status="running", info=info)
        self.backend.started(who)
        return self.get(caller, name, project_name)

    def _record(
        self,
        caller: Caller,
        project_name: str,
        dep_id: str,
        name: str,
        model: str,
        version: int,
        replicas: int,
        host: str,
        info: dict[str, Any],
        access: dict[str, Any],
        keep_access: bool,
    ) -> None:
        with self.store.write() as s:
            proj = self.projects.resolve(s, caller, project_name)
            old = s.scalars(
                select(Deployment).where(Deployment.project_id == proj.id, Deployment.name == name)
            ).first()
            if old is not None:
                if old.status in ACTIVE and self._router_alive(old):
                    raise Conflict(
                        _t(
                            "deployment {name!r} is already running (v{version})",
                            name=name,
                            version=old.version,
                        ),
                        _t("Switch its version (cube-lab deploy --switch), or undeploy it first."),
                    )
                self.backend.stop(old.info or {})
                if keep_access and old.access:
                    access = old.access  # deployed again: the same door (its keys stay too)
                s.delete(old)
                s.flush()
            s.add(
                Deployment(
                    id=dep_id,
                    project_id=proj.id,
                    owner=caller.username,
                    name=name,
                    model_name=model,
                    version=version,
                    backend="local",
                    status="starting",
                    replicas=replicas,
                    host=host,
                    port=None,
                    runner_host=self.backend.host_name(),
                    info=info,
                    access=access,
                )
            )

    def manifest(
        self,
        caller: Caller,
        ref: str,
        *,
        name: str | None = None,
        project: str | None = None,
        storage_uri: str | None = None,
        runtime: str | None = None,
        engine: str | None = None,
        llm_backend: str | None = None,
        image: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """The KServe InferenceService for ``MODEL[:VERSION]`` (nothing is submitted).

        Without ``storage_uri`` the artifact is addressed on the ``cube-lab-artifacts`` volume
        claim, the data dir's artifacts folder as the cluster shape mounts it. ``runtime`` is
        chosen as for local deployments: an LLM (a causal LM folder, a peft adapter on its
        registered base, an embedding model) gets an OpenAI-compatible InferenceService
        (``kserve_llm``: ``engine`` huggingface with ``llm_backend``, or vllm with ``image``),
        anything else the classic one."""
        from . import kserve, kserve_llm

        model, version_ref = _split(ref)
        asked = llm.check_runtime(runtime)
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            project_name = self.projects.resolve(s, caller, project).name
        version = self.registry.get_version(caller, project_name, model, version_ref)
        path = self.registry.download(caller, project_name, model, version.version).path
        what = f"{model}:{version.version}"
        labels = {
            "cube-lab/project": kserve.k8s_name(project_name),
            "cube-lab/model": kserve.k8s_name(model),
            "cube-lab/version": str(version.version),
        }
        if llm.choose(version.flavor, path, asked, what) != "llm":
            given = [k for k, v in (("engine", engine), ("llm_backend", llm_backend),
                                    ("image", image)) if v]  # fmt: skip
            if given:
                raise InvalidInput(
                    _t(
                        "{value} go with an LLM deployment; {what} is served by the OIP runtime",
                        value=", ".join(given),
                        what=what,
                    ),
                    _t(
                        "Leave them out, or deploy a causal LM, a peft adapter or an "
                        "embedding model."
                    ),
                )
            if storage_uri is None:
                storage_uri = self._claim_uri(path)
            doc = kserve.inference_service(
                name or model, version.flavor, storage_uri, labels=labels, **options
            )
            return _with_pod_labels(doc, project_name, caller.username)
        art = self._cluster_artifacts(caller, project_name, model, version, path, storage_uri)
        doc = kserve_llm.llm_inference_service(
            name or model,
            art,
            engine=engine,
            llm_backend=llm_backend,
            image=image,
            labels=labels,
            **options,
        )
        return _with_pod_labels(doc, project_name, caller.username)

    def _claim_uri(self, path: Path) -> str:
        relative = path.relative_to(self.settings.artifacts_dir).as_posix()
        return f"pvc://cube-lab-artifacts/{relative}"

    def _cluster_artifacts(
        self,
        caller: Caller,
        project: str,
        model: str,
        version: Any,
        path: Path,
        storage_uri: str | None,
    ) -> Any:
        """What an LLM InferenceService mounts: the model's folder; for an adapter, its
        registered base's folder and its own, each from its own URI."""
        from . import kserve_llm

        what = f"{model}:{version.version}"
        base = self._llm_base(caller, project, model, version, path)
        if base is None:
            return kserve_llm.LLMArtifacts(
                model,
                storage_uri or self._claim_uri(path),
                embedding=llm.is_embedding_model(path),
            )
        base_name, base_dir, in_store = base
        if not in_store:
            raise InvalidInput(
                _t(
                    "the base of adapter {what} is a folder outside the registry ({value}): "
                    "the cluster cannot reach it",
                    what=what,
                    value=str(base_dir),
                ),
                _t("Register the base and record it as the adapter's base_ref."),
            )
        if storage_uri is not None:
            raise InvalidInput(
                _t("storage_uri cannot address adapter {what} and its base at once", what=what),
                _t("Leave it out: both are mounted from the cube-lab-artifacts claim."),
            )
        return kserve_llm.LLMArtifacts.with_adapter(
            llm.base_name(base_name, model),
            self._claim_uri(base_dir),
            model,
            self._claim_uri(path),
            kserve_llm.lora_rank(path),
        )

    def _start_servers(
        self,
        folder: Path,
        model: str,
        version: int,
        flavor: str,
        artifact: Path,
        replicas: int,
        batching: dict[str, Any] | None,
        key: str,
        who: RunAs | None = None,
        runtime: str = "oip",
        base: tuple[str, Path, bool] | None = None,
        engine: tuple[str, dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """Start ``replicas`` model servers at once and wait until each has loaded the model."""
        started: list[Started] = []
        try:
            path = self._model_files(folder, version, artifact, who)
            plan = (
                self._llm_plan(folder, model, version, path, base, who, engine)
                if runtime == "llm"
                else OIPSpec(model, version, flavor, path, batching)
            )
            started = self.backend.start_servers(folder, plan, replicas, key, who)
            found = self._servers(version, started, self.backend.wait_ready(started, folder))
            self.backend.started(who)
            return found
        except BaseException:
            for proc, _ in started:
                self.backend.stop_pid(proc.pid)
            raise

    def _servers(
        self, version: int, started: list[Started], found: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        return [
            {
                "version": version,
                "pid": proc.pid,
                "port": f["port"],
                **self.backend.identity(proc.pid),
            }
            for (proc, _), f in zip(started, found, strict=True)
        ]

    def quit_warm_hosts(self) -> None:
        """Ask every warm host this service's backend started to leave (tests, a clean
        shutdown)."""
        self.backend.quit_warm_hosts()

    def _table(self, info: dict[str, Any]) -> dict[str, Any]:
        """The router's routing table from the recorded traffic and servers."""
        groups = []
        for t in info["traffic"]:
            backends = [
                {"host": "127.0.0.1", "port": s["port"]}
                for s in info["servers"]
                if s["version"] == t["version"]
            ]
            groups.append(
                {
                    "version": str(t["version"]),
                    "weight": t["weight"],
                    "shadow": t.get("shadow", False),
                    "backends": backends,
                }
            )
        folder = Path(info["dir"])
        return {
            "groups": groups,
            "runtime": info.get("runtime") or "oip",
            "shadow_log": str(folder / "shadow.jsonl"),
            "samples": {
                "percent": info.get("samples_percent", 0.0),
                "log": str(folder / "samples.jsonl"),
            },
        }

    def _apply(self, dep_id: str, host: str, port: int, info: dict[str, Any]) -> None:
        """Write the routing table with the access settings (a restarted router reads it) and
        hand it to the router."""
        table = {**self._table(info), "access": self._access_table(dep_id)}
        folder = Path(info["dir"])
        tmp = folder / "config.json.tmp"
        tmp.write_text(json.dumps(table))
        os.replace(tmp, folder / "config.json")
        self.backend.router(_loopback(host), port, info["token"]).configure(table)

    # -- traffic -----------------------------------------------------------------------------------

    def switch(
        self, caller: Caller, name: str, ref: str, *, project: str | None = None
    ) -> DeploymentView:
        """Serve another version with no request dropped: start it, wait until it is ready,
        switch the router, let the old servers finish what they hold, then stop them."""
        return self._change(caller, name, project, ref, "switch")

    def canary(
        self, caller: Caller, name: str, ref: str, percent: float, *, project: str | None = None
    ) -> DeploymentView:
        """Send ``percent`` of the traffic to another version, the rest to the primary."""
        return self._change(caller, name, project, ref, "canary", _check_percent(percent))

    def shadow(
        self, caller: Caller, name: str, ref: str, *, project: str | None = None
    ) -> DeploymentView:
        """Mirror every request to another version; its answers go to ``shadow.jsonl`` only."""
        return self._change(caller, name, project, ref, "shadow")

    def set_traffic(
        self, caller: Caller, name: str, percent: float, *, project: str | None = None
    ) -> DeploymentView:
        """Move the canary's share of the traffic (the slider)."""
        percent = _check_percent(percent)
        with self._locked(caller, name, project) as (dep_id, row):
            info = row["info"]
            if len(info["traffic"]) < 2 or info["traffic"][1].get("shadow"):
                raise Conflict(
                    _t("deployment {name!r} has no canary", name=name),
                    _t("Start one with a version."),
                )
            info["traffic"][0]["weight"] = 100.0 - percent
            info["traffic"][1]["weight"] = percent
            self._apply(dep_id, row["host"], row["port"], info)
            self._set(dep_id, info=info)
        return self.get(caller, name, project)

    def promote(self, caller: Caller, name: str, *, project: str | None = None) -> DeploymentView:
        """The canary or shadow version takes all the traffic; the old primary is stopped."""
        with self._locked(caller, name, project) as (dep_id, row):
            info = row["info"]
            if len(info["traffic"]) < 2:
                raise Conflict(
                    _t("deployment {name!r} has no canary or shadow to promote", name=name)
                )
            old, new = info["traffic"][0]["version"], info["traffic"][1]["version"]
            info["traffic"] = [{"version": new, "weight": 100.0, "shadow": False}]
            self._cut_over(row, info, keep={new})
            info["previous_version"] = old
            self._set(dep_id, info=info, version=new)
        return self.get(caller, name, project)

    def rollback(self, caller: Caller, name: str, *, project: str | None = None) -> DeploymentView:
        """Drop a canary or shadow; without one, switch back to the previous version."""
        with self._locked(caller, name, project) as (dep_id, row):
            info = row["info"]
            primary = info["traffic"][0]["version"]
            if len(info["traffic"]) >= 2:
                info["traffic"] = [{"version": primary, "weight": 100.0, "shadow": False}]
                self._cut_over(row, info, keep={primary})
                self._set(dep_id, info=info)
                return self.get(caller, name, project)
            previous = info.get("previous_version")
        if previous is None:
            raise Conflict(
                _t("deployment {name!r} has no previous version to roll back to", name=name)
            )
        return self._change(caller, name, project, str(previous), "switch")

    def _change(
        self,
        caller: Caller,
        name: str,
        project: str | None,
        ref: str,
        mode: str,
        percent: float = 0.0,
    ) -> DeploymentView:
        with self._locked(caller, name, project) as (dep_id, row):
            info = row["info"]
            version = self.registry.get_version(caller, row["project"], row["model"], ref)
            artifact = self.registry.download(
                caller, row["project"], row["model"], version.version
            ).path
            primary = info["traffic"][0]["version"]
            if version.version == primary:
                raise Conflict(
                    _t("deployment {name!r} already serves v{primary}", name=name, primary=primary)
                )
            what = f"{row['model']}:{version.version}"
            engine_asked = info.get("engine_asked") or "auto"
            runtime = llm.choose(
                version.flavor, artifact, info.get("runtime_asked", "auto"), what, engine_asked
            )
            picked = _pick_engine(engine_asked, runtime, version.flavor, artifact, what)
            if runtime != info.get("runtime", "oip"):
                raise Conflict(
                    _t(
                        (
                            "{what} is served by the {runtime} runtime, deployment {name!r} "
                            "by {value}: one deployment cannot route between them"
                        ),
                        what=what,
                        runtime=runtime,
                        name=name,
                        value=info.get("runtime", "oip"),
                    ),
                    _t("Deploy that version under another name."),
                )
            base = self._llm_base(caller, row["project"], row["model"], version, artifact)
            self._set(dep_id, status="updating")
            try:
                # a candidate already running for this version is reused, others are replaced
                have = [s for s in info["servers"] if s["version"] == version.version]
                if not have:
                    # the new servers run as the deployment's owner, whoever asks for them
                    who = self._owner(row["owner"], info.get("owner_groups") or ())
                    have = self._start_servers(
                        Path(info["dir"]),
                        row["model"],
                        version.version,
                        version.flavor,
                        artifact,
                        row["replicas"],
                        info.get("batching"),
                        _backend_key(info),
                        who,
                        runtime,
                        base,
                        (picked, dict(info.get("engine_options") or {})) if picked else None,
                    )
                    info["servers"] = info["servers"] + have
                if mode == "switch":
                    info["traffic"] = [
                        {"version": version.version, "weight": 100.0, "shadow": False}
                    ]
                    info["previous_version"] = primary
                    self._cut_over(row, info, keep={version.version})
                    self._set(dep_id, info=info, version=version.version, status="running")
                else:
                    info["traffic"] = [
                        {"version": primary, "weight": 100.0 - percent, "shadow": False},
                        {
                            "version": version.version,
                            "weight": 0.0 if mode == "shadow" else percent,
                            "shadow": mode == "shadow",
                        },
                    ]
                    self._cut_over(row, info, keep={primary, version.version})
                    self._set(dep_id, info=info, status="running")
            except BaseException:
                self._set(dep_id, status="running")
                raise
        return self.get(caller, name, project)

    def _cut_over(self, row: dict[str, Any], info: dict[str, Any], keep: set[int]) -> None:
        """Route by the new table, wait for the servers left out to drain, then stop them."""
        retired = [s for s in info["servers"] if s["version"] not in keep]
        info["servers"] = [s for s in info["servers"] if s["version"] in keep]
        self._apply(row["id"], row["host"], row["port"], info)
        client = self.backend.router(_loopback(row["host"]), row["port"], info["token"])
        ports = {s["port"] for s in retired}
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while ports and time.monotonic() < deadline:
            busy = [
                b for b in client.state()["backends"] if b["port"] in ports and b["in_flight"] > 0
            ]
            if not busy:
                break
            time.sleep(0.02)
        for server in retired:
            self.backend.stop_pid(server["pid"])

    # -- read --------------------------------------------------------------------------------------

    def list(self, caller: Caller, *, project: str | None = None) -> list[DeploymentView]:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            rows = s.execute(
                self.projects.visible(s, caller, Deployment, project).order_by(
                    Deployment.created_at.desc()
                )
            ).all()
            views = [
                ((row.id, row.runner_host, row.router_pid), DeploymentView.of(row, name))
                for row, name in rows
            ]
        here = self.backend.host_name()
        dead = [
            dep_id
            for (dep_id, runner_host, pid), view in views
            if view.status == "running" and runner_host == here and not self._alive(pid)
        ]
        if dead:
            self._mark_dead(dead, "its router process is gone")
            return self.list(caller, project=project)
        return [view for _, view in views]

    def get(self, caller: Caller, name: str, project: str | None = None) -> DeploymentView:
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            row, project_name = self._row(s, caller, name, project)
            return DeploymentView.of(row, project_name)

    def _row(
        self, s: Session, caller: Caller, name: str, project: str | None
    ) -> tuple[Deployment, str]:
        proj = self.projects.resolve(s, caller, project)
        row = s.scalars(
            select(Deployment).where(Deployment.project_id == proj.id, Deployment.name == name)
        ).first()
        if row is None:
            raise NotFound(
                _t(
                    "deployment {name!r} not found in project {name2!r}", name=name, name2=proj.name
                ),
                _t("GET /cube/api/v1/deployments lists the deployments you can see."),
            )
        return row, proj.name

    def tail_log(
        self,
        caller: Caller,
        name: str,
        offset: int = 0,
        limit: int = LOG_CHUNK,
        project: str | None = None,
    ) -> LogChunk:
        if offset < 0:
            raise InvalidInput(_t("offset must be 0 or more"))
        view, folder = self._folder(caller, name, project)
        return read_chunk(folder / "log.txt", offset, limit, view.status not in ACTIVE)

    def shadow_log(
        self, caller: Caller, name: str, limit: int = 100, project: str | None = None
    ) -> list[dict[str, Any]]:
        """The latest mirrored requests: the primary's and the shadow's answers side by side."""
        _, folder = self._folder(caller, name, project)
        return _jsonl_tail(folder / "shadow.jsonl", limit)

    def samples(
        self, caller: Caller, name: str, limit: int = 100, project: str | None = None
    ) -> dict[str, Any]:
        """The sampling share and the latest sampled requests with their answers."""
        view, folder = self._folder(caller, name, project)
        return {
            "percent": view.samples_percent,
            "samples": _jsonl_tail(folder / "samples.jsonl", limit),
        }

    def set_samples(
        self, caller: Caller, name: str, percent: float, *, project: str | None = None
    ) -> DeploymentView:
        """Keep ``percent`` of the requests with their answers (0 stops sampling)."""
        percent = _check_percent(percent)
        with self._locked(caller, name, project) as (dep_id, row):
            info = row["info"]
            info["samples_percent"] = percent
            self._apply(dep_id, row["host"], row["port"], info)
            self._set(dep_id, info=info)
        return self.get(caller, name, project)

    # -- access: keys, rate limit, address lists -------------------------------------------------

    def access(self, caller: Caller, name: str, project: str | None = None) -> dict[str, Any]:
        """Who may call the deployment: ``{"auth", "rate_limit", "allow", "deny"}``."""
        return self.get(caller, name, project).access

    def set_access(
        self, caller: Caller, name: str, changes: dict[str, Any], *, project: str | None = None
    ) -> DeploymentView:
        """Change the access settings (fields left out keep their value); a running
        deployment's router takes them at once."""
        with self._locked(caller, name, project, active=False) as (dep_id, row):
            settings = acc.check_settings(changes, row["access"])
            self._set(dep_id, access=settings)
            self._push_access(dep_id, row)
        return self.get(caller, name, project)

    def create_key(
        self,
        caller: Caller,
        name: str,
        key_name: str,
        *,
        expires_at: object = None,
        expires_in_days: object = None,
        project: str | None = None,
    ) -> KeyView:
        """A new API key for the deployment; the answer holds the key itself (``key``), which
        is not kept and is never shown again. A running deployment accepts it at once."""
        key_name = check_name(key_name, "key name")
        now = datetime.now(UTC)
        expires = acc.check_expiry(expires_at, expires_in_days, now)
        key = acc.new_key()
        with self._locked(caller, name, project, active=False) as (dep_id, row):
            with self.store.write() as s:
                dep = s.get(Deployment, dep_id)
                assert dep is not None  # _locked re-read it under the lock
                taken = s.scalars(
                    select(DeploymentKey.id).where(
                        DeploymentKey.project_id == dep.project_id,
                        DeploymentKey.deployment == dep.name,
                        DeploymentKey.name == key_name,
                        DeploymentKey.revoked_at.is_(None),
                    )
                ).first()
                if taken is not None:
                    raise Conflict(
                        _t(
                            "deployment {name!r} already has a key named {key_name!r}",
                            name=name,
                            key_name=key_name,
                        ),
                        _t("Choose another name, or revoke that key first."),
                    )
                made = DeploymentKey(
                    id=f"k{uuid.uuid4().hex[:15]}",
                    project_id=dep.project_id,
                    deployment=dep.name,
                    name=key_name,
                    prefix=acc.shown_prefix(key),
                    key_hash=acc.hash_key(key),
                    created_by=caller.username,
                    created_at=now,
                    expires_at=expires,
                )
                s.add(made)
                s.flush()
                view = KeyView.of(made, key)
            self._push_access(dep_id, row)
        return view

    def list_keys(self, caller: Caller, name: str, project: str | None = None) -> list[KeyView]:
        """The deployment's keys, newest first, with when each was last used (the router
        counts uses; they are read from it here and kept)."""
        with self.store.read() as s:
            row, _ = self._row(s, caller, name, project)
            where = (DeploymentKey.project_id == row.project_id, DeploymentKey.deployment == name)
            running = row.status in ACTIVE and row.port
            host, port, token = row.host, row.port, (row.info or {}).get("token", "")
        used: dict[str, float] = {}
        if running:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                state = self.backend.router(_loopback(host), port or 0, token).state()
                used = dict(state["access"]["keys_used"])
        with self.store.write() if used else self.store.read() as s:
            rows = s.scalars(
                select(DeploymentKey).where(*where).order_by(DeploymentKey.created_at.desc())
            ).all()
            for key in rows:
                seen = used.get(key.id)
                if seen is None:
                    continue
                when = datetime.fromtimestamp(float(seen), UTC)
                if key.last_used_at is None or aware(key.last_used_at) < when:
                    key.last_used_at = when
            return [KeyView.of(key) for key in rows]

    def revoke_key(
        self, caller: Caller, name: str, ref: str, *, project: str | None = None
    ) -> KeyView:
        """Revoke a key (by id, or by the name of a key in force): a running deployment
        refuses it at once. Revoked keys stay listed, marked revoked."""
        with self._locked(caller, name, project, active=False) as (dep_id, row):
            with self.store.write() as s:
                dep = s.get(Deployment, dep_id)
                assert dep is not None
                mine = (
                    DeploymentKey.project_id == dep.project_id,
                    DeploymentKey.deployment == dep.name,
                )
                by_id = select(DeploymentKey).where(*mine, DeploymentKey.id == ref)
                found = s.scalars(by_id).first()
                if found is None:
                    found = s.scalars(
                        select(DeploymentKey).where(
                            *mine, DeploymentKey.name == ref, DeploymentKey.revoked_at.is_(None)
                        )
                    ).first()
                if found is None:
                    raise NotFound(
                        _t("deployment {name!r} has no key {ref!r}", name=name, ref=ref),
                        _t(
                            "`cube-lab deployment keys list {name}` lists its keys (id and name).",
                            name=name,
                        ),
                    )
                if found.revoked_at is None:
                    found.revoked_at = datetime.now(UTC)
                view = KeyView.of(found)
            self._push_access(dep_id, row)
        return view

    def router_token(self, caller: Caller, name: str, project: str | None = None) -> str:
        """The deployment's router token, for the lab server's own requests to it (the test
        form): it passes the access gate as the owner's console. Never sent to a browser."""
        with self.store.read() as s:
            row, _ = self._row(s, caller, name, project)
            return str((row.info or {}).get("token") or "")

    def _access_table(self, dep_id: str) -> dict[str, Any]:
        """What the router enforces: the settings and the hashes of the keys in force."""
        with self.store.read() as s:
            dep = s.get(Deployment, dep_id)
            if dep is None:
                raise NotFound(_t("the deployment was removed meanwhile"))
            keys = s.scalars(
                select(DeploymentKey).where(
                    DeploymentKey.project_id == dep.project_id,
                    DeploymentKey.deployment == dep.name,
                    DeploymentKey.revoked_at.is_(None),
                )
            ).all()
            return {
                **acc.normalized(dep.access),
                "keys": [
                    {
                        "id": k.id,
                        "hash": k.key_hash,
                        "expires_at": aware(k.expires_at).timestamp() if k.expires_at else None,
                    }
                    for k in keys
                ],
            }

    def _push_access(self, dep_id: str, row: dict[str, Any]) -> None:
        """Hand a running deployment's router the access settings in force now."""
        if row["status"] not in ACTIVE or not row["port"]:
            return
        try:
            self._apply(dep_id, row["host"], row["port"], row["info"])
        except OSError as exc:
            raise Conflict(
                _t("deployment {name!r} did not take the change: {exc}", name=row["name"], exc=exc),
                _t("It is saved; the deployment's router takes it when it is deployed again."),
            ) from None

    def metrics(self, caller: Caller, name: str, project: str | None = None) -> str:
        """The router's Prometheus text (its /metrics)."""
        with self.store.read() as s:
            row, _ = self._row(s, caller, name, project)
            host, port, status, token = (
                row.host,
                row.port,
                row.status,
                (row.info or {}).get("token"),
            )
        if status not in ACTIVE or not port:
            raise Conflict(
                _t("deployment {name!r} is not running ({status})", name=name, status=status)
            )
        try:
            return self.backend.router(_loopback(host), port, token or "").metrics()
        except OSError as exc:
            raise Conflict(
                _t("deployment {name!r} does not answer: {exc}", name=name, exc=exc)
            ) from None

    def _folder(self, caller: Caller, name: str, project: str | None) -> tuple[Any, Path]:
        with self.store.read() as s:
            row, project_name = self._row(s, caller, name, project)
            return DeploymentView.of(row, project_name), Path((row.info or {}).get("dir", ""))

    # -- stop, recover -----------------------------------------------------------------------------

    def undeploy(self, caller: Caller, name: str, *, project: str | None = None) -> DeploymentView:
        """Stop a running deployment (its record stays, "stopped", to deploy again or read its
        log); a deployment that is not running (failed, dead, stopped) is removed: whatever of
        it still runs is killed, its quota given back, its record and folder deleted. The
        view returned then says status "removed"."""
        with self._locked(caller, name, project, active=False) as (dep_id, row):
            self.backend.stop(row["info"])
            quota.release(row["info"].get("reservation"))  # a no-op when already given back
            if row["status"] in ACTIVE:
                self._set(dep_id, status="stopped", stopped_at=datetime.now(UTC))
                return self.get(caller, name, project)
            with self.store.write() as s:
                found = s.get(Deployment, dep_id)
                if found is None:
                    raise NotFound(_t("deployment {name!r} was removed meanwhile", name=name))
                last = DeploymentView.of(found, row["project"])
                s.execute(
                    delete(DeploymentKey).where(
                        DeploymentKey.project_id == found.project_id,
                        DeploymentKey.deployment == found.name,
                    )
                )
                s.delete(found)
        shutil.rmtree(row["info"].get("dir") or self.root / dep_id, ignore_errors=True)
        now = datetime.now(UTC)
        return replace(last, status="removed", endpoint=None, updated_at=now, stopped_at=now)

    def delete(self, caller: Caller, name: str, *, project: str | None = None) -> None:
        """Undeploy and forget: the record and the folder go, running or not."""
        if self.undeploy(caller, name, project=project).status != "removed":
            self.undeploy(caller, name, project=project)  # stopped now: this removes it

    def prewarm(self) -> bool:
        """Start the warm host now if models were served from this data dir before, so the
        first deploy after a restart is warm too; True when one was started."""
        return self.backend.prewarm()

    def recover(self) -> dict[str, list[str]]:
        """At server start: adopt deployments whose router still answers, mark the rest dead."""
        host = self.backend.host_name()
        with self.store.read() as s:
            rows = s.scalars(
                select(Deployment).where(
                    Deployment.status.in_(ACTIVE), Deployment.backend == "local"
                )
            ).all()
            found = [(r.id, r.name, r.status, dict(r.info or {}), r.runner_host) for r in rows]
            routers = {r.id: (r.host, r.port, r.router_pid) for r in rows}
        adopted, dead = [], []
        for dep_id, name, status, info, runner_host in found:
            if runner_host != host:
                continue
            creator = info.get("creator_pid")
            if status == "starting" and self.backend.creator_busy(creator):
                continue  # a CLI is deploying it right now
            rhost, rport, rpid = routers[dep_id]
            if self._answers(rhost, rport, rpid, info, name):
                adopted.append(name)
                continue
            self.backend.stop(self.backend.still_ours(info, runner_host))
            quota.release(info.get("reservation"))
            dead.append(dep_id)
        if dead:
            self._mark_dead(dead, "its processes were gone when the server started")
        return {"adopted": adopted, "dead": dead}

    def _answers(
        self, host: str, port: int | None, pid: int | None, info: dict[str, Any], name: str
    ) -> bool:
        if not port or not self._alive(pid):
            return False
        try:
            state = self.backend.router(_loopback(host), port, info.get("token", "")).state()
        except (OSError, ValueError):
            return False
        return state.get("name") == name  # the port may since belong to another program

    def _mark_dead(self, ids: list[str], why: str) -> None:
        with self.store.write() as s:
            for row in s.scalars(select(Deployment).where(Deployment.id.in_(ids))):
                if row.status in ACTIVE:
                    row.status, row.error = "dead", why
                    row.stopped_at = row.updated_at = datetime.now(UTC)

    # -- helpers -----------------------------------------------------------------------------------

    def _owner(self, owner: str, groups: Any) -> RunAs | None:
        """The account a deployment's model servers run as (its owner's, in the owner's
        project groups); None unless ``Settings.os_accounts``."""
        if not self.settings.os_accounts:
            return None
        return accounts.run_as(owner, tuple(groups))

    def _llm_base(
        self, caller: Caller, project: str, model: str, version: Any, artifact: Path
    ) -> tuple[str, Path, bool] | None:
        """A peft version's base: (its name, its folder, whether the folder is the store's).
        The registered base the adapter records (``base_ref``) first, else the folder it was
        trained on; None for a version that is no adapter."""
        if version.flavor != "peft":
            return None
        ref, folder = llm.adapter_base(artifact)
        what = f"{model}:{version.version}"
        if ref:
            base_model, _, base_version = ref.rpartition(":")
            if not base_model:
                base_model, base_version = ref, "latest"
            with contextlib.suppress(NotFound):
                found = self.registry.get_version(caller, project, base_model, base_version)
                if found.flavor != "transformers":
                    raise InvalidInput(
                        _t(
                            "the base of adapter {what}, {ref}, is a {flavor} model",
                            what=what,
                            ref=ref,
                            flavor=found.flavor,
                        ),
                        _t("An adapter is served on a transformers causal LM."),
                    )
                path = self.registry.download(caller, project, base_model, found.version).path
                return base_model, path, True
        if folder and Path(folder).is_dir():
            return Path(folder).name, Path(folder), False
        raise InvalidInput(
            _t(
                "the base model of adapter {what} is not available (it records {value!r})",
                what=what,
                value=ref or folder or "none",
            ),
            _t(
                (
                    "Register the base in project {project!r} (as the adapter's base_ref "
                    "names it) or restore the folder the adapter was trained on."
                ),
                project=project,
            ),
        )

    def _llm_plan(
        self,
        folder: Path,
        model: str,
        version: int,
        path: Path,
        base: tuple[str, Path, bool] | None,
        who: RunAs | None,
        engine: tuple[str, dict[str, Any]] | None = None,
    ) -> llm.LLMPlan:
        """What an LLM replica serves: the causal LM under the model's name, or for an
        adapter its base (a copy under os_accounts when it is the store's; a folder outside
        the store is read as the owner, with the owner's rights) with the adapter on it."""
        kind, options = engine or ("transformers", {})
        if base is None:
            embedding = llm.is_embedding_model(path)
            return llm.LLMPlan(path, model, embedding=embedding, engine=kind,
                               engine_options=options)  # fmt: skip
        name, base_dir, in_store = base
        if in_store:
            base_dir = self._model_files(folder, version, base_dir, who, f"v{version}-base")
        return llm.LLMPlan(base_dir, llm.base_name(name, model), {model: path}, engine=kind,
                           engine_options=options)  # fmt: skip

    def _model_files(
        self, folder: Path, version: int, artifact: Path, who: RunAs | None, tag: str = ""
    ) -> Path:
        """What a model server loads: the registry's artifact itself, or under os_accounts a
        copy in ``<folder>/models/v<N>/`` (``tag`` instead of ``v<N>`` when given; root's,
        readable by the owner's group only, not writable by it), so the owner's account never
        gets a path into the store."""
        if who is None:
            return artifact
        models = folder / MODELS_DIR
        models.mkdir(mode=0o750, exist_ok=True)
        os.chown(models, 0, who.gid, follow_symlinks=False)
        os.chmod(models, 0o750, follow_symlinks=False)
        final = models / (tag or f"v{version}")
        tmp = models / f".{tag or f'v{version}'}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir(mode=0o700)
        try:
            dest = tmp / artifact.name
            if artifact.is_dir():
                # links are copied as links: read through them as the owner, they open only
                # what the owner's account may open anyway
                shutil.copytree(artifact, dest, symlinks=True)
            else:
                shutil.copy2(artifact, dest, follow_symlinks=False)
            share_read(tmp, who.gid)
            if final.exists():  # no server of this version runs (they would be reused)
                shutil.rmtree(final)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return final / artifact.name

    @contextlib.contextmanager
    def _locked(
        self, caller: Caller, name: str, project: str | None, active: bool = True
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The deployment's record, with a file lock so the server and the CLI take turns."""
        self.projects.ensure_personal(caller)
        with self.store.read() as s:
            row, project_name = self._row(s, caller, name, project)
            folder = Path((row.info or {}).get("dir") or self.root / row.id)
            dep_id = row.id
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with self.store.read() as s:  # re-read: someone may have changed it meanwhile
                row = s.get(Deployment, dep_id)
                if row is None:
                    raise NotFound(_t("deployment {name!r} was removed meanwhile", name=name))
                if active and row.status not in ACTIVE:
                    raise Conflict(
                        _t(
                            "deployment {name!r} is not running ({status})",
                            name=name,
                            status=row.status,
                        ),
                        _t(
                            "Deploy it again: cube-lab deploy {model_name}:{version}",
                            model_name=row.model_name,
                            version=row.version,
                        ),
                    )
                snapshot = {
                    "id": dep_id,
                    "name": row.name,
                    "project": project_name,
                    "model": row.model_name,
                    "owner": row.owner,
                    "host": row.host,
                    "port": row.port,
                    "replicas": row.replicas,
                    "status": row.status,
                    "info": json.loads(json.dumps(row.info or {})),
                    "access": acc.normalized(row.access),
                }
            yield dep_id, snapshot

    def _set(self, dep_id: str, **fields: Any) -> None:
        with self.store.write() as s:
            row = s.get(Deployment, dep_id)
            if row is None:
                return
            for key, value in fields.items():
                setattr(row, key, value)
            row.updated_at = datetime.now(UTC)

    def _router_alive(self, row: Deployment) -> bool:
        return row.runner_host == self.backend.host_name() and self._alive(row.router_pid)

    def _alive(self, pid: int | None) -> bool:
        return self.backend.alive(pid)


def _backend_key(info: dict[str, Any]) -> str:
    """The key the deployment's model servers demand; "" for a deployment started before
    there was one (its router, still running that code, would not send it)."""
    return backend_auth.derive(info.get("token") or "") if info.get("backend_auth") else ""


def _jsonl_tail(path: Path, limit: int) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    size = path.stat().st_size
    start = max(0, size - LOG_CHUNK * 4)
    lines = read_chunk(path, start, LOG_CHUNK * 4, True).text.splitlines()
    if start:
        lines = lines[1:]  # the first one may be cut
    out = []
    for line in lines[-limit:]:
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def _check_batching(max_rows: object, wait_ms: object) -> dict[str, Any] | None:
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 0 <= max_rows <= 65536:
        raise InvalidInput(
            _t("batch_max_rows must be a whole number from 0 (no batching) to 65536"),
            _t("got {max_rows!r}", max_rows=max_rows),
        )
    number = isinstance(wait_ms, int | float) and not isinstance(wait_ms, bool)
    if not number or not 0 <= wait_ms <= 1000:  # type: ignore[operator]
        raise InvalidInput(_t("batch_wait_ms must be a number of milliseconds from 0 to 1000"))
    return {"max_rows": max_rows, "wait_ms": float(wait_ms)} if max_rows else None


def _split(ref: str) -> tuple[str, str]:
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidInput(
            _t("give the model to deploy as NAME[:VERSION|ALIAS]"), _t("e.g. iris:3")
        )
    model, _, version = ref.strip().partition(":")
    check_name(model, "model name")
    return model, version or "latest"


def _check_replicas(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPLICAS:
        raise InvalidInput(
            _t(
                "replicas must be a whole number from 1 to {MAX_REPLICAS}",
                MAX_REPLICAS=MAX_REPLICAS,
            )
        )
    return value


def _pick_engine(asked: str, runtime: str, flavor: str, artifact: Path, what: str) -> str | None:
    """The engine an LLM version runs on (None for the OIP runtime, where a named engine is
    an error)."""
    if runtime != "llm":
        if asked not in ("auto", "transformers"):
            raise InvalidInput(_t("engine {engine} goes with runtime llm, not oip", engine=asked))
        return None
    return llm.pick_engine(asked, flavor, artifact, what)


def _engine_of(info: dict[str, Any]) -> str | None:
    if (info.get("runtime") or "oip") != "llm":
        return None
    return str(info.get("engine") or "transformers")


def _with_pod_labels(doc: dict[str, Any], project: str, owner: str) -> dict[str, Any]:
    """An InferenceService with ``cube_lab.k8s.pod_labels``' vocabulary (the deployment's id
    is the InferenceService's name) on itself and on its predictor's pods: KServe copies the
    InferenceService's labels to the predictor's pods, and ``spec.predictor.labels`` are the
    pods' own by the CRD."""
    from ..k8s import pod_labels

    labels = pod_labels.deployment(project, owner, doc["metadata"]["name"])
    doc["metadata"]["labels"].update(labels)
    predictor = doc["spec"]["predictor"]
    predictor["labels"] = {**(predictor.get("labels") or {}), **labels}
    return doc
