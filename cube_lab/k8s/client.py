"""A small async client over ``kubernetes_asyncio``: namespaced custom objects and pod logs.

``kubernetes_asyncio`` is the optional extra ``cube-lab[kubernetes]``; it is imported on
first use, so the embedded shape never pays for it. Where to connect comes from a
``ClusterConfig``: an explicit host and token (tests, service setups), a kubeconfig file
(``$KUBECONFIG`` or ``~/.kube/config``, with a context), or the pod's service account.
Every failure becomes a ``CubeError`` (see ``errors.py``) that says what to fix.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from ..errors import CubeError, InvalidInput
from ..locale.messages import _t
from .errors import (
    ClientMissing,
    NoCluster,
    WatchExpired,
    api_error,
    unreachable,
)

ENV_HOST = "CUBE_LAB_K8S_HOST"
ENV_TOKEN = "CUBE_LAB_K8S_TOKEN"
ENV_CONTEXT = "CUBE_LAB_K8S_CONTEXT"
ENV_NAMESPACE = "CUBE_LAB_K8S_NAMESPACE"
# where the cluster is and who we are there: what from_env reads
ENV_VARS = (ENV_HOST, ENV_TOKEN, ENV_CONTEXT, ENV_NAMESPACE, "KUBECONFIG")
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_KUBECONFIG = "~/.kube/config"
WATCH_TIMEOUT_S = 300  # the server ends each watch after this; we watch again from there

T = TypeVar("T")


def require() -> ModuleType:
    """The ``kubernetes_asyncio`` package, or a clear error saying how to get it."""
    try:
        import kubernetes_asyncio
        import kubernetes_asyncio.client
        import kubernetes_asyncio.config
        import kubernetes_asyncio.watch
    except ImportError as exc:
        raise ClientMissing(
            _t("the Kubernetes client is not installed"),
            _t("pip install 'cube-lab[kubernetes]' (kubernetes_asyncio): {exc}", exc=exc),
        ) from exc
    return kubernetes_asyncio


@dataclass(frozen=True)
class ClusterConfig:
    """Where the API server is and who we are there; empty fields mean "find it"."""

    host: str | None = None  # e.g. https://10.0.0.1:6443; with token, skips kubeconfig
    token: str | None = None
    kubeconfig: str | None = None  # a path (or several, ':'-separated, like $KUBECONFIG)
    context: str | None = None
    namespace: str | None = None  # default: the context's, the service account's, "default"
    ca_file: str | None = None

    @classmethod
    def from_env(cls, **overrides: str | None) -> ClusterConfig:
        """From ``$CUBE_LAB_K8S_*`` and ``$KUBECONFIG``; non-empty ``overrides`` win."""
        env = cls(
            host=os.environ.get(ENV_HOST) or None,
            token=os.environ.get(ENV_TOKEN) or None,
            kubeconfig=os.environ.get("KUBECONFIG") or None,
            context=os.environ.get(ENV_CONTEXT) or None,
            namespace=os.environ.get(ENV_NAMESPACE) or None,
        )
        return replace(env, **{k: v for k, v in overrides.items() if v})

    def kubeconfig_paths(self) -> list[Path]:
        """The kubeconfig files to read; none when a host is given or none exists."""
        if self.host:
            return []
        text = self.kubeconfig or DEFAULT_KUBECONFIG
        paths = [Path(p).expanduser() for p in text.split(os.pathsep) if p]
        return [p for p in paths if p.is_file()] if not self.kubeconfig else paths

    def default_namespace(self) -> str:
        """The namespace to use: the configured one, the kubeconfig context's, the service
        account's, else "default" (read without connecting, so manifests can name it)."""
        if self.namespace:
            return self.namespace
        if self.host:
            return "default"
        paths = self.kubeconfig_paths()
        if paths:
            return _context_namespace(paths, self.context) or "default"
        ns_file = SERVICE_ACCOUNT / "namespace"
        if ns_file.is_file():
            return ns_file.read_text().strip() or "default"
        return "default"

    def describe(self) -> str:
        if self.host:
            return self.host
        if self.kubeconfig_paths():
            path = self.kubeconfig or DEFAULT_KUBECONFIG
            return f"kubeconfig {path}" + (f" (context {self.context})" if self.context else "")
        return "the in-cluster service account"


def _context_namespace(paths: list[Path], context: str | None) -> str | None:
    """The namespace of ``context`` (else the current context) in kubeconfig files."""
    import yaml

    docs = []
    for path in paths:
        try:
            docs.append(yaml.safe_load(path.read_text()) or {})
        except (OSError, yaml.YAMLError):
            continue
    name = context or next(
        (d.get("current-context") for d in docs if d.get("current-context")), None
    )
    for doc in docs:
        for entry in doc.get("contexts") or []:
            if entry.get("name") == name:
                return (entry.get("context") or {}).get("namespace")
    return None


# core kinds cube-lab creates beside custom objects (a job's Secret): kind -> the client's name
CORE_KINDS = {"Secret": "secret"}


@dataclass(frozen=True)
class Resource:
    """A namespaced resource: its group, version and plural (``kind`` for messages)."""

    group: str
    version: str
    plural: str
    kind: str = ""

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Resource:
        """The resource of a manifest; every kind we create pluralizes with an ``s``. Of the
        core group (``apiVersion: v1``) only the kinds in ``CORE_KINDS``."""
        api, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        if api == "v1" and kind in CORE_KINDS:
            return cls("", "v1", CORE_KINDS[kind] + "s", kind)
        if "/" not in api or not kind:
            raise InvalidInput(
                _t("a custom object needs apiVersion group/version and kind"),
                _t("got apiVersion={api!r}, kind={kind!r}", api=api, kind=kind),
            )
        group, version = api.split("/", 1)
        return cls(group, version, kind.lower() + "s", kind)


@dataclass
class Kube:
    """One connection to an API server. ``async with Kube(config) as kube: ...``."""

    config: ClusterConfig = field(default_factory=ClusterConfig)
    namespace: str = "default"
    _api: Any = None
    _k: Any = None

    async def __aenter__(self) -> Kube:
        self._k = require()
        self._api, self.namespace = await self._connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._api is not None:
            await self._api.close()
            self._api = None

    @property
    def server(self) -> str:
        """The API server's address, for messages."""
        if self._api is not None:
            return str(self._api.configuration.host)
        return self.config.describe()

    async def _connect(self) -> tuple[Any, str]:
        k, c = self._k, self.config
        configuration = type.__call__(k.client.Configuration)  # not the process-wide default
        if c.host:
            configuration.host = c.host.rstrip("/")
            if c.token:
                configuration.api_key["BearerToken"] = c.token
                configuration.api_key_prefix["BearerToken"] = "Bearer"
            if c.ca_file:
                configuration.ssl_ca_cert = c.ca_file
        elif c.kubeconfig_paths():
            path = os.pathsep.join(str(p) for p in c.kubeconfig_paths())
            try:
                await k.config.load_kube_config(
                    config_file=path,
                    context=c.context,
                    client_configuration=configuration,
                    persist_config=False,
                )
            except (k.config.ConfigException, OSError, ValueError) as exc:
                raise InvalidInput(
                    _t("cannot use the kubeconfig {path}: {exc}", path=path, exc=exc),
                    _t("Check the file, and the context name (kubectl config get-contexts)."),
                ) from exc
        elif (SERVICE_ACCOUNT / "token").exists():
            k.config.load_incluster_config(client_configuration=configuration)
        else:
            raise NoCluster(
                "no Kubernetes cluster is configured",
                f"Set KUBECONFIG (or create {DEFAULT_KUBECONFIG}), run inside a cluster, "
                f"or set {ENV_HOST} (and {ENV_TOKEN}).",
            )
        return k.client.ApiClient(configuration), c.default_namespace()

    # -- calls -------------------------------------------------------------------------------

    async def _call(self, what: str, call: Awaitable[T]) -> T:
        """Await one API call; its failure becomes a ``CubeError`` naming ``what``."""
        import aiohttp

        try:
            return await call
        except self._k.client.ApiException as exc:
            raise api_error(exc.status, exc.reason, exc.body, what, self.server) from exc
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:  # a lost connection too
            raise unreachable(exc, what, self.server) from exc

    @property
    def _custom(self) -> Any:
        return self._k.client.CustomObjectsApi(self._api)

    @property
    def _core(self) -> Any:
        return self._k.client.CoreV1Api(self._api)

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.namespace

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        res = Resource.of(obj)
        name = obj.get("metadata", {}).get("name", "")
        ns = self._ns(obj.get("metadata", {}).get("namespace"))
        call = (
            getattr(self._core, f"create_namespaced_{CORE_KINDS[res.kind]}")(ns, obj)
            if not res.group
            else self._custom.create_namespaced_custom_object(
                res.group, res.version, ns, res.plural, obj
            )
        )
        created = await self._call(f"create {res.kind} {name} in namespace {ns}", call)
        if not res.group:  # the core API answers a model object
            created = self._api.sanitize_for_serialization(created)
        return dict(created or {})

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        ns = self._ns(namespace)
        return dict(
            await self._call(
                f"read {res.kind or res.plural} {name} in namespace {ns}",
                self._custom.get_namespaced_custom_object(
                    res.group, res.version, ns, res.plural, name
                ),
            )
        )

    async def list(
        self, res: Resource, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        ns = self._ns(namespace)
        kwargs = {"label_selector": label_selector} if label_selector else {}
        found = await self._call(
            f"list {res.plural} in namespace {ns}",
            self._custom.list_namespaced_custom_object(
                res.group, res.version, ns, res.plural, **kwargs
            ),
        )
        return list(found.get("items") or [])

    async def patch(
        self, res: Resource, name: str, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386: a null removes the field)."""
        ns = self._ns(namespace)
        return dict(
            await self._call(
                f"update {res.kind or res.plural} {name} in namespace {ns}",
                self._custom.patch_namespaced_custom_object(
                    res.group, res.version, ns, res.plural, name, body
                ),
            )
            or {}
        )

    async def delete(self, res: Resource, name: str, namespace: str | None = None) -> bool:
        """Delete with its pods (background propagation); False when it was already gone."""
        ns = self._ns(namespace)
        call = (
            getattr(self._core, f"delete_namespaced_{CORE_KINDS[res.kind]}")(name, ns)
            if not res.group
            else self._custom.delete_namespaced_custom_object(
                res.group, res.version, ns, res.plural, name, propagation_policy="Background"
            )
        )
        try:
            await self._call(f"delete {res.kind or res.plural} {name} in namespace {ns}", call)
        except CubeError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def watch(
        self, res: Resource, name: str, namespace: str | None = None
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """``(event type, object)`` for one object, from its current state on; ends on
        DELETED. The server closes each watch after a while: it is watched again."""
        ns = self._ns(namespace)
        what = f"watch {res.kind or res.plural} {name} in namespace {ns}"
        version: str | None = None
        while True:
            watcher = self._k.watch.Watch()
            kwargs: dict[str, Any] = {
                "field_selector": f"metadata.name={name}",
                "timeout_seconds": WATCH_TIMEOUT_S,
                "_request_timeout": WATCH_TIMEOUT_S + 30,  # a silently dead connection too
            }
            if version:
                kwargs["resource_version"] = version
            stream = watcher.stream(
                self._custom.list_namespaced_custom_object,
                res.group,
                res.version,
                ns,
                res.plural,
                **kwargs,
            )
            try:
                while True:
                    try:
                        event = await self._call(what, stream.__anext__())
                    except StopAsyncIteration:
                        break
                    obj = event.get("object") or {}  # ERROR events were raised already
                    if obj.get("metadata", {}).get("name") != name:
                        continue  # a server that ignores fieldSelector
                    version = obj["metadata"].get("resourceVersion") or version
                    yield event["type"], obj
                    if event["type"] == "DELETED":
                        return
            except WatchExpired:
                version = None  # start again from the current state
            finally:
                await watcher.close()

    async def pods(self, label_selector: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Pods as plain dicts (the API's camelCase field names)."""
        ns = self._ns(namespace)
        found = await self._call(
            f"list pods {label_selector} in namespace {ns}",
            self._core.list_namespaced_pod(ns, label_selector=label_selector),
        )
        return [self._api.sanitize_for_serialization(p) for p in found.items]

    async def pod_log(
        self,
        pod: str,
        container: str | None = None,
        namespace: str | None = None,
        *,
        follow: bool = False,
        since_s: int | None = None,
    ) -> AsyncIterator[str]:
        """A container's log line by line (the last ``since_s`` seconds of it); with
        ``follow``, until the container ends."""
        ns = self._ns(namespace)
        what = f"read the log of pod {pod}" + (f" container {container}" if container else "")
        kwargs: dict[str, Any] = {"follow": follow, "_preload_content": False}
        if container:
            kwargs["container"] = container
        if since_s:
            kwargs["since_seconds"] = since_s
        response = await self._call(what, self._core.read_namespaced_pod_log(pod, ns, **kwargs))
        try:
            while True:
                line = await self._call(what, response.content.readline())
                if not line:
                    return
                yield line.decode("utf-8", "replace")
        finally:
            response.release()
