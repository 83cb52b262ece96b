"""``cl.deploy("iris:3")``: serve a registered model version; ``Deployment`` handles, and
``cl.deployments.list()`` / ``cl.deployments.get(name)``.

An LLM deployment (a transformers causal LM or a peft adapter, ``runtime == "llm"``) answers
OpenAI's API: ``.chat(...)`` / ``.complete(...)`` call it with the ``openai`` client, and
``.openai_client()`` is that client, configured for the deployment."""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator
from typing import Any

from ..errors import CubeError, InvalidInput
from ..locale.messages import _t
from . import current
from .handle import Handle, Json

STARTING = ("starting", "updating")
KEY_ENV = "CUBE_LAB_DEPLOYMENT_KEY"  # the API key .openai_client() sends when given none


class InferFailed(CubeError):
    """The deployment answered an inference request with an error."""

    status = 422


class Deployment(Handle):
    """A deployment: ``.status``, ``.endpoint``, ``.wait()`` (until ready), ``.predict(x)``,
    ``.logs()``, ``.stop()`` / ``.undeploy()``; ``.data`` is the REST JSON of its last refresh.

    Deploying returns once every replica answers ready, so ``.wait()`` matters only while
    traffic changes (status ``updating``)."""

    kind = "deployment"
    ACTIVE = STARTING  # wait() waits while it starts or updates; running is "done" waiting

    def link_params(self) -> dict[str, str | int | None]:
        return {"project": self.data.get("project"), "name": self.data.get("name")}

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def project(self) -> str:
        return str(self.data["project"])

    @property
    def model(self) -> str:
        return str(self.data["model"])

    @property
    def version(self) -> int:
        return int(self.data["version"])

    @property
    def endpoint(self) -> str | None:
        """The base URL (OIP v2: ``{endpoint}/v2/models/{model}/infer``) while it runs."""
        return self.data.get("endpoint")

    @property
    def ready(self) -> bool:
        return self.status == "running"

    @property
    def live(self) -> bool:
        """Its view follows it while it starts, updates or runs (the traffic figures move)."""
        return self.status in (*STARTING, "running")

    def stats(self) -> Json:
        """Requests answered so far (all versions, mirrored ones not counted), ``errors``,
        latency ``mean_ms`` / ``p50_ms`` / ``p95_ms`` (from the router's histogram) and
        ``in_flight``."""
        from ..serving.metrics_summary import summary

        return summary(current().deployment_metrics(self.project, self.name))

    def view_parts(self) -> builtins.list[Any]:
        """The traffic figures (with requests per second between refreshes) and a test box."""
        from .view_parts import TestBox, TrafficStats

        return [TrafficStats(self), TestBox(self)]

    @property
    def runtime(self) -> str:
        """``llm`` (OpenAI's ``/v1`` API) or ``oip`` (OIP v2 and ``/predict``)."""
        return str(self.data.get("runtime") or "oip")

    # -- LLM deployments: OpenAI's API ---------------------------------------------------------

    def openai_client(self, api_key: str | None = None, **kwargs: Any) -> Any:
        """An ``openai.OpenAI`` client for this deployment (``base_url`` its ``/v1``).
        ``api_key``: one of the deployment's keys (default ``$CUBE_LAB_DEPLOYMENT_KEY``; a
        deployment with auth ``none`` takes any). ``kwargs`` go to ``openai.OpenAI``."""
        try:
            import openai
        except ImportError:
            raise InvalidInput(
                _t("calling an LLM deployment needs the openai package"), "pip install openai"
            ) from None
        if self.runtime != "llm":
            raise InvalidInput(
                _t(
                    "deployment {name!r} serves {model} with the OIP v2 server, not OpenAI's API",
                    name=self.name,
                    model=self.model,
                ),
                _t("Use predict()/infer(); deploy a causal LM or a peft adapter for chat."),
            )
        endpoint = self.endpoint if self.ready else self.refresh().endpoint
        if not endpoint:
            raise InvalidInput(
                _t(
                    "deployment {name!r} is not running ({status})",
                    name=self.name,
                    status=self.status,
                ),
                _t("Deploy it again: cl.deploy({ref!r}).", ref=f"{self.model}:{self.version}"),
            )
        key = api_key or os.environ.get(KEY_ENV) or "none"
        return openai.OpenAI(base_url=f"{endpoint}/v1", api_key=key, **kwargs)

    def chat(
        self,
        messages: str | builtins.list[Json],
        *,
        api_key: str | None = None,
        stream: bool = False,
        **kwargs: Any,
    ) -> str | Iterator[str]:
        """The assistant's answer to ``messages`` (OpenAI chat messages, or one user message
        as a string); with ``stream=True`` an iterator of its pieces as they come. ``kwargs``
        (``max_tokens``, ``temperature``, ``top_p``, ``stop``, ``seed``, ``model`` for
        another adapter...) go to ``chat.completions.create``."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        client = self.openai_client(api_key)
        kwargs.setdefault("model", self.model)
        if stream:
            return _pieces(
                client.chat.completions.create(messages=messages, stream=True, **kwargs),
                lambda c: c.delta.content,
            )
        answer = client.chat.completions.create(messages=messages, **kwargs)
        return answer.choices[0].message.content or ""

    def complete(
        self, prompt: str, *, api_key: str | None = None, stream: bool = False, **kwargs: Any
    ) -> str | Iterator[str]:
        """The text that follows ``prompt`` (``completions.create``); ``stream=True``: pieces."""
        client = self.openai_client(api_key)
        kwargs.setdefault("model", self.model)
        if stream:
            return _pieces(
                client.completions.create(prompt=prompt, stream=True, **kwargs), lambda c: c.text
            )
        return client.completions.create(prompt=prompt, **kwargs).choices[0].text

    def refresh(self) -> Deployment:
        self.data = current().get_deployment(self.project, self.name)
        return self

    def infer(self, request: Json) -> Json:
        """Send an Open Inference Protocol v2 request (``{"inputs": [...]}``); the answer's
        JSON (``{"model_name", "model_version", "outputs": [...]}``)."""
        if not isinstance(request, dict) or "inputs" not in request:
            raise InvalidInput(
                _t('an OIP v2 request is {{"inputs": [{{"name", "shape", "datatype", "data"}}]}}'),
                _t("Or call predict(rows) with a list of rows, a NumPy array or a DataFrame."),
            )
        answer = current().infer(self.project, self.name, request)
        body = answer.get("body")
        if int(answer.get("status") or 0) >= 400:
            error = body.get("error") if isinstance(body, dict) else str(body)
            detail = body.get("detail") if isinstance(body, dict) else None
            raise InferFailed(
                _t(
                    "deployment {name!r} refused the request: {error}",
                    name=self.name,
                    error=error,
                ),
                detail,
            )
        return body if isinstance(body, dict) else {"body": body}

    def predict(self, inputs: Any, outputs: builtins.list[str] | None = None) -> Any:
        """Predictions for ``inputs`` (rows as a list, a NumPy array or a pandas DataFrame;
        or a whole OIP v2 request dict) as a list; with ``outputs`` (e.g. ``["predict",
        "predict_proba"]``) a dict of those outputs, each a list."""
        if isinstance(inputs, dict) and "inputs" in inputs:
            request = inputs
        else:
            import numpy as np

            from ..serving.protocol import encode_output

            values = inputs.to_numpy() if hasattr(inputs, "to_numpy") else inputs
            array = np.asarray(values)
            if array.ndim == 1:
                array = array.reshape(1, -1)
            request = {"inputs": [encode_output("input-0", array)]}
        if outputs is not None:
            request = {**request, "outputs": [{"name": name} for name in outputs]}
        answered = self.infer(request).get("outputs") or []
        shaped = {o["name"]: _reshape(o) for o in answered}
        if outputs is None and len(shaped) == 1:
            return next(iter(shaped.values()))
        return shaped

    def logs(self) -> str:
        """The model servers' and router's log so far."""
        transport = current()
        text, offset = "", 0
        while True:
            chunk = transport.deployment_log(self.project, self.name, offset)
            text += chunk["text"]
            if chunk["offset"] == offset or chunk["offset"] >= chunk["size"]:
                return text
            offset = chunk["offset"]

    def undeploy(self) -> Deployment:
        """Stop it (the record stays, ``stopped``; undeploying that removes it); self."""
        self.data = current().undeploy(self.project, self.name)
        return self

    stop = undeploy

    def view_state(self) -> Json:
        state = super().view_state()
        state["title"] = _t(
            "Deployment {project}/{name} ({model}:{version})",
            project=self.project,
            name=self.name,
            model=self.model,
            version=self.version,
        )
        state["columns"] = ["version", "weight", "endpoint"]
        state["rows"] = [
            [
                t.get("version"),
                f"{t.get('weight', 0):g}%" + (" (shadow)" if t.get("shadow") else ""),
                self.endpoint,
            ]
            for t in self.data.get("traffic") or []
        ]
        return state

    def __repr__(self) -> str:
        where = f" at {self.endpoint}" if self.endpoint else ""
        return (
            f"<Deployment {self.project}/{self.name} {self.model}:{self.version}: "
            f"{self.status}{where}>"
        )


def _pieces(chunks: Any, text: Any) -> Iterator[str]:
    for chunk in chunks:
        for choice in chunk.choices:
            piece = text(choice)
            if piece:
                yield piece


def _reshape(output: Json) -> Any:
    import numpy as np

    data = output.get("data") or []
    shape = output.get("shape") or [len(data)]
    try:
        return np.asarray(data).reshape(shape).tolist()
    except ValueError:
        return data


def deploy(
    model: str,
    name: str | None = None,
    replicas: int | None = None,
    project: str | None = None,
    *,
    port: int | None = None,
    batch_max_rows: int | None = None,
    batch_wait_ms: float | None = None,
    auth: str | None = None,
    runtime: str | None = None,
    engine: str | None = None,
    engine_options: dict[str, object] | None = None,
) -> Deployment:
    """Serve ``model`` (``"iris"``, ``"iris:3"``, ``"iris@production"``) locally under ``name``
    (default: the model's name) with ``replicas`` model servers; returns once it is ready.
    ``runtime``: ``"llm"`` (OpenAI's API), ``"oip"``, or None to choose by the model's flavor
    (a causal LM or a peft adapter gets ``llm``: then ``.chat("...")``). ``engine``: an LLM's
    ``"transformers"``, ``"vllm"``, ``"llamacpp"`` (a GGUF file) or ``"ollama"`` (with
    ``engine_options={"url": ..., "model": TAG}``); None: auto."""
    from .models import parse_ref

    parse_ref(model)  # a clear error for an empty or half reference
    body = {
        "model": model,
        "name": name,
        "project": project,
        "replicas": replicas,
        "port": port,
        "batch_max_rows": batch_max_rows,
        "batch_wait_ms": batch_wait_ms,
        "auth": auth,
        "runtime": runtime,
        "engine": engine,
        "engine_options": engine_options,
    }
    return Deployment(current().deploy({k: v for k, v in body.items() if v is not None}))


class Deployments:
    """``cl.deployments.list()``, ``cl.deployments.get(name)``."""

    def list(self, project: str | None = None) -> builtins.list[Deployment]:
        """The deployments you can see, newest first."""
        return [Deployment(d) for d in current().list_deployments(project)]

    def get(self, name: str, project: str | None = None) -> Deployment:
        transport = current()
        return Deployment(transport.get_deployment(project or transport.personal_project(), name))

    def __repr__(self) -> str:
        return "<cube-lab deployments: list(), get(name); cl.deploy(model) starts one>"


deployments = Deployments()
