"""The model server process: one model version, the Open Inference Protocol v2 over REST.

    python -m cube_lab.serving.server --name iris --version 3 --flavor sklearn \\
        --path /data/artifacts/models/1/3/model --port 0 --ready-file /tmp/ready.json

The model is loaded before the socket opens, so "listening" means "ready"; the ready
file (port and pid, written atomically) tells the deployment service the port it got.
Routes: /v2/health/live|ready, /v2, /v2/models/{name}[/versions/{v}][/ready|/infer] and a
plain JSON ``POST /predict`` (``{"instances": [...]}`` -> ``{"predictions": [...]}``).

Started by the deployment service, it answers only its router: the backend key comes in
``$CUBE_BACKEND_KEY`` and every request but the health probes must carry it in
``X-Cube-Backend-Key`` (401 without, 403 with a wrong one; see ``backend_auth.py``). Started
by hand without that variable, it answers anyone who can reach its address.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import hmac
import json
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from . import binary, codecs
from .backend_auth import HEADER, take_from_env
from .batching import Batcher
from .http import Request, Response, error_response, json_response, parse_size, serve
from .loaders import LoadError, Predictor, load
from .protocol import (
    InferError,
    Tensor,
    decode_inputs,
    dumps,
    encode_output,
    encode_output_array,
    loads,
)

# A body at least this big is parsed, predicted and answered on a worker thread (in pieces,
# see protocol.py), so the event loop keeps answering small requests meanwhile. One thread:
# big requests take turns, so only one is ever turned into Python objects and arrays at once
# (the others wait as raw bytes, counted in the server's body budget).
OFFLOOP_BYTES = 512 * 1024

_LIVE = json_response(200, {"live": True})
_READY = json_response(200, {"ready": True})
_KEY_HEADER = HEADER.lower()  # request headers arrive lower-cased
_PROBES = frozenset({"/v2/health/live", "/v2/health/ready"})  # open: they carry no data


class ModelApp:
    """Routes requests for one model version to its ``Predictor``.

    Small requests are answered on the event loop's thread; big ones (``OFFLOOP_BYTES``) on
    one worker thread, so a predictor may be called from two threads at once: the loaders'
    predictors (scikit-learn, PyTorch, ONNX Runtime, MLflow) are safe to call so.

    With a ``key``, every request but the health probes must carry it (the router adds it);
    it is checked, in constant time, before anything else is looked at."""

    def __init__(
        self,
        name: str,
        version: str,
        predictor: Predictor,
        batcher: Batcher | None = None,
        key: str = "",
    ) -> None:
        self.key = key.encode() if key else None
        self.name = name
        self.version = version
        self.predictor = predictor
        self.batcher = batcher
        base = f"/v2/models/{name}"
        versioned = f"{base}/versions/{version}"
        self.metadata = {
            "name": name,
            "versions": [version],
            "platform": predictor.platform,
            "inputs": predictor.inputs(),
            "outputs": predictor.outputs(),
        }
        meta = json_response(200, self.metadata)
        ready = json_response(200, {"name": name, "ready": True})
        self.gets: dict[str, Response] = {
            "/v2/health/live": _LIVE,
            "/v2/health/ready": _READY,
            "/v2": json_response(
                200, {"name": "cube-lab", "version": "1", "extensions": ["predict"]}
            ),
            base: meta,
            versioned: meta,
            f"{base}/ready": ready,
            f"{versioned}/ready": ready,
        }
        self.infer_paths = {f"{base}/infer", f"{versioned}/infer"}
        self.aliases = _aliases([o["name"] for o in self.metadata["outputs"]])
        self.pool: ThreadPoolExecutor | None = None

    def __call__(self, req: Request) -> Response | Awaitable[Response]:
        if self.key is not None:
            given = req.headers.get(_KEY_HEADER)
            # headers are decoded as latin-1, so they encode back to the bytes received
            wrong = given is None or not hmac.compare_digest(given.encode("latin-1"), self.key)
            if wrong and (req.path not in _PROBES or req.method not in ("GET", "HEAD")):
                return _refused(given is None)
        if req.method == "POST":
            if req.path in self.infer_paths:
                return self.infer(req)
            if req.path == "/predict":
                return self.predict(req)
        elif req.method in ("GET", "HEAD"):
            found = self.gets.get(req.path)
            if found is not None:
                return found
        return self.not_found(req)

    def not_found(self, req: Request) -> Response:
        parts = req.path.strip("/").split("/")
        if len(parts) >= 3 and parts[:2] == ["v2", "models"]:
            if parts[2] != self.name:
                return error_response(
                    404,
                    f"model {parts[2]!r} is not served here",
                    f"This server serves {self.name!r}.",
                )
            if len(parts) >= 5 and parts[3] == "versions" and parts[4] != self.version:
                return error_response(
                    404,
                    f"version {parts[4]!r} of {self.name!r} is not served here",
                    f"This server serves version {self.version}.",
                )
        known = sorted({*self.gets, *self.infer_paths, "/predict"})
        if req.path in known:
            return error_response(405, f"{req.method} is not allowed on {req.path}")
        return error_response(404, f"no route {req.method} {req.path}", f"Routes: {known}")

    @staticmethod
    def _json(req: Request, key: str = "data") -> Any:
        header = req.headers.get("inference-header-content-length")
        if header is None:
            payload = loads(req.body, key)  # InferError for bad or too deeply nested JSON
        elif key == "data":
            payload = binary.read_request(req.body, header)  # the binary tensor extension
        else:
            raise InferError(
                f"/predict takes JSON only, not the binary tensor extension ({binary.HEADER})",
                "Send binary tensors to /v2/models/{name}/infer.",
            )
        if len(req.body) >= OFFLOOP_BYTES:
            req.body = b""  # parsed: the raw bytes need not stay for the rest of the request
        return payload

    async def _offloop(self, work: Callable[[Request], Response], req: Request) -> Response:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(1, thread_name_prefix="cube-big-request")
        return await asyncio.get_running_loop().run_in_executor(self.pool, _trimmed, work, req)

    def infer(self, req: Request) -> Response | Awaitable[Response]:
        if len(req.body) >= OFFLOOP_BYTES:
            return self._offloop(self._infer_big, req)
        try:
            payload = self._json(req)
            model_input, wanted = self._decode(payload)
            batcher = self.batcher
            listed = isinstance(model_input, list)
            if batcher is not None and listed and batcher.stackable(model_input):  # type: ignore[arg-type]
                return self._batched(payload, batcher.submit(model_input, wanted))
            results = self._run(model_input, wanted)
        except InferError as exc:
            return error_response(400, exc.error, exc.detail)
        return self._answer(payload, results)

    def _decode(self, payload: Any) -> tuple[list[Tensor] | codecs.Native, list[str] | None]:
        """(what the model is given, the output names it is asked for) of a request."""
        inputs = decode_inputs(payload)
        request_id(payload)
        wanted = _wanted_outputs(payload.get("outputs"))
        if wanted is not None:
            wanted = [self.aliases.get(n, n) for n in wanted]
        return codecs.decode(payload, inputs), wanted

    def _run(self, model_input: list[Tensor] | codecs.Native, wanted: list[str] | None) -> Any:
        if isinstance(model_input, codecs.Native):
            return self.predictor.infer_native(model_input, wanted)
        return self.predictor.infer(model_input, wanted)

    def _infer_big(self, req: Request) -> Response:
        """A big request, on the worker thread (no batching: it is a batch already)."""
        try:
            payload = self._json(req)
            results = self._run(*self._decode(payload))
        except InferError as exc:
            return error_response(400, exc.error, exc.detail)
        return self._answer(payload, results, big=True)

    async def _batched(self, payload: Any, pending: Awaitable[list[Tensor]]) -> Response:
        try:
            results = await pending
        except InferError as exc:
            return error_response(400, exc.error, exc.detail)
        return self._answer(payload, results)

    def _answer(self, payload: Any, results: list[Tensor], big: bool = False) -> Response:
        encode = encode_output_array if big else encode_output
        results = _named_as_asked(payload, results, self.aliases)
        head: dict[str, Any] = {"model_name": self.name, "model_version": self.version}
        if isinstance(payload.get("id"), str):
            head["id"] = payload["id"]
        raw = binary.binary_outputs(payload, [n for n, _ in results])
        if raw:
            body, length = binary.encode_answer(head, results, raw, encode)
            return Response(200, body, "application/octet-stream", [(binary.HEADER, str(length))])
        head["outputs"] = [encode(n, a) for n, a in results]
        return Response(200, dumps(head)) if big else json_response(200, head)

    def predict(self, req: Request) -> Response | Awaitable[Response]:
        if len(req.body) >= OFFLOOP_BYTES:
            return self._offloop(self._predict, req)
        return self._predict(req)

    def _predict(self, req: Request) -> Response:
        big = len(req.body) >= OFFLOOP_BYTES
        try:
            payload = self._json(req, "instances")
            rows = (
                payload.get("instances", payload.get("inputs"))
                if isinstance(payload, dict)
                else None
            )
            if not isinstance(rows, list) or not rows:
                raise InferError(
                    "the body must be an object with a non-empty 'instances' list",
                    'e.g. {"instances": [[5.1, 3.5, 1.4, 0.2]]}',
                )
            predictions = self.predictor.predict_rows(rows)
        except InferError as exc:
            return error_response(400, exc.error, exc.detail)
        except (ValueError, TypeError) as exc:
            return error_response(400, f"the model rejected the input: {exc}")
        answer = {
            "predictions": predictions,
            "model_name": self.name,
            "model_version": self.version,
        }
        return Response(200, dumps(answer)) if big else json_response(200, answer)


def _refused(missing: bool) -> Response:
    how = (
        "This model server answers only its deployment's router. Send the request to the "
        "deployment's endpoint (`cube-lab deployments` shows it), with an API key if the "
        "deployment needs one."
    )
    if missing:
        return error_response(401, "this model server needs its router's backend key", how)
    return error_response(403, "the backend key is not this model server's", how)


def _trimmed(work: Callable[[Request], Response], req: Request) -> Response:
    """``work(req)``, then the C heap's free pages go back to the system: a big request's
    pieces and arrays leave holes that malloc would otherwise keep (and count in RSS)."""
    try:
        return work(req)
    finally:
        if _LIBC is not None:
            _LIBC.malloc_trim(0)


def _libc() -> Any:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 (glibc only)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def request_id(payload: Any) -> str | None:
    """The request's ``id``, which the protocol makes a string (echoed in the answer)."""
    rid = payload.get("id")
    if rid is None or isinstance(rid, str):
        return rid
    raise InferError(
        f"'id' must be a string, got {type(rid).__name__} {json.dumps(rid)[:40]}",
        f'The Open Inference Protocol makes the request id a string: send "id": "{rid}".',
    )


def _aliases(outputs: list[str]) -> dict[str, str]:
    """Other servers' names for a model's first (default) output: KServe's sklearn server
    calls it ``output-0``, MLServer ``predict``; either is accepted where the model has no
    output of that name, and the answer uses the name that was asked for."""
    if not outputs:
        return {}
    return {n: outputs[0] for n in ("output-0", "predict") if n not in outputs}


def _named_as_asked(payload: Any, results: list[Tensor], aliases: dict[str, str]) -> list[Tensor]:
    """Results in the names the request asked for (an output asked for by an alias is
    answered under that alias)."""
    asked = payload.get("outputs")
    if not aliases or not isinstance(asked, list) or len(asked) != len(results):
        return results
    return [
        (o["name"], a) if aliases.get(o["name"]) == n else (n, a)
        for o, (n, a) in zip(asked, results, strict=True)
    ]


def _wanted_outputs(outputs: Any) -> list[str] | None:
    if outputs is None:
        return None
    if not isinstance(outputs, list) or not all(
        isinstance(o, dict) and isinstance(o.get("name"), str) for o in outputs
    ):
        raise InferError("'outputs' must be a list of objects with a name", '[{"name": "predict"}]')
    return [o["name"] for o in outputs] or None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cube_lab.serving.server")
    p.add_argument("--name", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--flavor", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--predictor-class", default="Predictor")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ready-file")
    p.add_argument("--batch-max-rows", type=int, default=0, help="adaptive batching (0: off)")
    p.add_argument("--batch-wait-ms", type=float, default=0.0)
    p.add_argument(
        "--body-budget",
        type=_size,
        help="bytes of request bodies held at once, over all connections (e.g. 256MiB; "
        "default: $CUBE_SERVING_BODY_BUDGET or 256MiB); a body that does not fit waits",
    )
    a = p.parse_args(argv)
    key = take_from_env()  # first: the model's own code must not find it in the environment
    try:
        predictor = load(Path(a.path), a.flavor, a.predictor_class)
    except LoadError as exc:
        print(f"cube-lab model server: cannot load the model: {exc}", file=sys.stderr, flush=True)
        return 3
    batcher = Batcher(predictor, a.batch_max_rows, a.batch_wait_ms) if a.batch_max_rows else None
    app = ModelApp(a.name, str(a.version), predictor, batcher, key)
    ready = Path(a.ready_file) if a.ready_file else None
    asyncio.run(serve(app, a.host, a.port, ready, body_budget=a.body_budget))
    return 0


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


if __name__ == "__main__":
    sys.exit(main())
