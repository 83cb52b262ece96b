"""LLM engines other than cube-lab's transformers one: ``vllm``, ``llamacpp`` and ``ollama``.

Nothing here runs vLLM, llama.cpp or Ollama themselves (no GPU, nothing downloaded): the
engines are FAKES written by the test, a tiny ``vllm`` package whose
``vllm/entrypoints/openai/api_server.py`` parses vLLM's flags (strictly: an unknown flag is
an error), a ``llama_cpp/server`` likewise, and an Ollama-shaped HTTP server. What they prove
is cube-lab's launch contract: the command line and environment cube-lab starts each engine
with, the supervisor's ready file, backend key, forwarding (streamed too) and its ending,
and the deployment through the real service and router called with the official ``openai``
client. Whether vLLM itself answers those flags is vLLM's to keep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cube_lab import job_credentials
from cube_lab.errors import CubeError, Forbidden, InvalidInput
from cube_lab.outbound import ENV_ALLOWED
from cube_lab.processes import pid_alive
from cube_lab.serving.llm import deploy as llm

httpx = pytest.importorskip("httpx")

# a fake OpenAI-compatible engine: stdlib only; records how it was started to $FAKE_RECORD
_FAKE_SERVER = """
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(args, names, key):
    record = os.environ.get("FAKE_RECORD")
    if record:
        with open(record, "w") as f:
            json.dump({"argv": sys.argv[1:], "args": vars(args), "pid": os.getpid(),
                       "key": key, "env_backend_key": os.environ.get("CUBE_BACKEND_KEY")}, f)

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _json(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self):
            if key and self.headers.get("Authorization") != "Bearer " + key:
                self._json(401, {"error": {"message": "bad key", "type": "auth"}})
                return False
            return True

        def do_GET(self):
            if not self._authorized():
                return
            if self.path == "/v1/models":
                data = [{"id": n, "object": "model", "created": 0, "owned_by": "fake"}
                        for n in names]
                return self._json(200, {"object": "list", "data": data})
            self._json(404, {"error": {"message": "no route", "type": "invalid_request_error"}})

        def do_POST(self):
            if not self._authorized():
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            model = body.get("model")
            if self.path != "/v1/chat/completions" or model not in names:
                return self._json(404, {"error": {"message": f"no model {model}",
                                                  "type": "invalid_request_error"}})
            text = f"{model} heard: {body['messages'][-1]['content']}"
            if not body.get("stream"):
                return self._json(200, {
                    "id": "c1", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            words = text.split(" ")
            for i, word in enumerate(words):
                delta = {"content": (" " if i else "") + word}
                if i == 0:
                    delta["role"] = "assistant"
                chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0,
                         "model": model,
                         "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                self._chunk(f"data: {json.dumps(chunk)}\\n\\n".encode())
                time.sleep(0.01)
            end = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": model,
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            self._chunk(f"data: {json.dumps(end)}\\n\\ndata: [DONE]\\n\\n".encode())
            self._chunk(b"")

        def _chunk(self, data):
            self.wfile.write(f"{len(data):x}\\r\\n".encode() + data + b"\\r\\n")
            self.wfile.flush()

        def log_message(self, *a):
            pass

    ThreadingHTTPServer((args.host, args.port), H).serve_forever()
"""

# vLLM's OpenAI server, as far as cube-lab drives it (its flags, its key from $VLLM_API_KEY)
_FAKE_VLLM = """
import argparse, os
from vllm._fake import serve

p = argparse.ArgumentParser()
p.add_argument("--model", required=True)
p.add_argument("--served-model-name", nargs="+")
p.add_argument("--host", default="0.0.0.0")
p.add_argument("--port", type=int, default=8000)
p.add_argument("--api-key")
p.add_argument("--enable-lora", action="store_true")
p.add_argument("--lora-modules", nargs="+", default=[])
p.add_argument("--max-model-len", type=int)
p.add_argument("--gpu-memory-utilization", type=float)
p.add_argument("--tensor-parallel-size", type=int)
p.add_argument("--dtype")
p.add_argument("--enforce-eager", action="store_true")
p.add_argument("--max-lora-rank", type=int)
a = p.parse_args()
if a.lora_modules and not a.enable_lora:
    raise SystemExit("--lora-modules needs --enable-lora")
for m in a.lora_modules:
    name, _, path = m.partition("=")
    if not os.path.isdir(path):
        raise SystemExit(f"no LoRA folder {path}")
names = [*(a.served_model_name or [a.model]), *(m.partition("=")[0] for m in a.lora_modules)]
serve(a, names, a.api_key or os.environ.get("VLLM_API_KEY"))
"""

# llama-cpp-python's server: pydantic-settings fields as flags (--model_alias, --n_ctx)
_FAKE_LLAMA = """
import argparse, os
from llama_cpp._fake import serve

p = argparse.ArgumentParser()
p.add_argument("--model", required=True)
p.add_argument("--model_alias")
p.add_argument("--host", default="localhost")
p.add_argument("--port", type=int, default=8000)
p.add_argument("--n_ctx", type=int)
p.add_argument("--n_threads", type=int)
a = p.parse_args()
if not a.model.endswith(".gguf") or not os.path.isfile(a.model):
    raise SystemExit(f"not a GGUF file: {a.model}")
serve(a, [a.model_alias or a.model], os.environ.get("API_KEY"))
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path and $PYTHONPATH with fake ``vllm`` and ``llama_cpp`` (and empty
    stand-ins for llama-cpp-python's server extras when they are not installed)."""
    root = tmp_path / "fakes"
    files = {
        "vllm/__init__.py": "",
        "vllm/_fake.py": _FAKE_SERVER,
        "vllm/entrypoints/__init__.py": "",
        "vllm/entrypoints/openai/__init__.py": "",
        "vllm/entrypoints/openai/api_server.py": _FAKE_VLLM,
        "llama_cpp/__init__.py": "",
        "llama_cpp/_fake.py": _FAKE_SERVER,
        "llama_cpp/server/__init__.py": "",
        "llama_cpp/server/__main__.py": _FAKE_LLAMA,
    }
    for extra in ("sse_starlette", "starlette_context", "pydantic_settings", "uvicorn", "fastapi"):
        if not llm._importable(extra):
            files[f"{extra}/__init__.py"] = ""
    _write(root, files)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    )
    return root


# -- choosing and checking the engine ----------------------------------------------------------


def test_a_missing_engine_is_refused_with_the_package_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = llm._importable
    monkeypatch.setattr(llm, "_importable", lambda m: m not in ("vllm", "llama_cpp") and real(m))
    with pytest.raises(InvalidInput) as caught:
        llm.check_engine("vllm")
    assert "engine vllm is not installed" in str(caught.value)
    assert "pip install vllm" in str(caught.value.detail)
    with pytest.raises(InvalidInput) as caught:
        llm.check_engine("llamacpp", {"n_ctx": 256})
    assert "pip install 'llama-cpp-python[server]'" in str(caught.value.detail)
    # auto picking llama.cpp for a GGUF file asks for it the same way
    with pytest.raises(InvalidInput) as caught:
        llm.pick_engine("auto", "custom", _gguf(Path(os.environ.get("TMPDIR", "/tmp"))), "g:1")
    assert "llama-cpp-python" in str(caught.value.detail)


def _gguf(root: Path) -> Path:
    folder = root / f"gguf-{time.monotonic_ns()}"
    folder.mkdir()
    (folder / "tiny.gguf").write_bytes(b"GGUF")
    return folder


def test_engine_names_and_options_are_checked(fakes: Path, tmp_path: Path) -> None:
    for bad, words in [
        (("mindie", None), "unknown engine"),
        (("vllm", {"max_model_len": "lots"}), "takes a int"),
        (("vllm", {"trust_remote_code": True}), "has no option"),
        (("vllm", ["x"]), "engine_options must be an object"),
        ((None, {"n_ctx": 1}), "go with a named engine"),
        (("ollama", {"url": "http://h:11434"}), "needs engine_options model"),
        (("ollama", {"url": "file:///etc", "model": "m"}), "http(s) URL"),
    ]:
        with pytest.raises(InvalidInput) as caught:
            llm.check_engine(*bad)
        assert words in str(caught.value), (bad, caught.value)
    assert llm.check_engine(None) == ("auto", {})
    assert llm.check_engine("vllm", {"max_model_len": "512", "enforce_eager": "true"}) == (
        "vllm",
        {"max_model_len": 512, "enforce_eager": True},
    )
    assert llm.check_engine("ollama", {"url": "http://h:11434/v1/", "model": "m"}) == (
        "ollama",
        {"url": "http://h:11434", "model": "m"},
    )
    gguf = _gguf(tmp_path)
    assert llm.pick_engine("auto", "custom", gguf, "g:1") == "llamacpp"
    assert llm.choose("custom", gguf, "auto", "g:1") == "llm"
    assert llm.choose("sklearn", tmp_path, "auto", "m:1", engine="ollama") == "llm"
    with pytest.raises(InvalidInput, match="cannot load it"):
        llm.pick_engine("vllm", "custom", gguf, "g:1")
    with pytest.raises(InvalidInput, match="serves a GGUF file"):
        llm.pick_engine("llamacpp", "transformers", tmp_path, "t:1")
    with pytest.raises(InvalidInput, match="goes with runtime llm"):
        llm.choose("transformers", tmp_path, "oip", "t:1", engine="vllm")
    plan = llm.LLMPlan(gguf, "g", engine="llamacpp", engine_options={"n_ctx": 256})
    argv = plan.argv(tmp_path / "ready.json")
    assert argv[1:5] == ["-m", "cube_lab.serving.llm.external", "--engine", "llamacpp"]
    assert argv[argv.index("--model") + 1] == str(gguf / "tiny.gguf")
    assert argv[argv.index("--option") + 1] == "n_ctx=256"


def test_the_ollama_url_passes_the_outbound_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    job_credentials.configure(job_credentials.Issuer(b"k" * 32, "http://hub:8020"))
    try:
        with pytest.raises(Forbidden) as caught:
            llm.check_engine("ollama", {"url": "http://127.0.0.1:11434", "model": "llama3"})
        assert ENV_ALLOWED in str(caught.value.detail)
        with pytest.raises(Forbidden):
            llm.check_engine("ollama", {"url": "http://169.254.169.254", "model": "x"})
        monkeypatch.setenv(ENV_ALLOWED, "127.0.0.1")
        assert llm.check_engine("ollama", {"url": "http://127.0.0.1:11434", "model": "m"})
    finally:
        job_credentials.configure(None)


# -- the supervisor on its own -----------------------------------------------------------------


class Replica:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log
        self.url = f"http://127.0.0.1:{port}"


def start_replica(tmp: Path, plan: llm.LLMPlan, key: str = "sekrit") -> Replica:
    ready = tmp / f"ready-{time.monotonic_ns()}.json"
    log = tmp / f"replica-{time.monotonic_ns()}.log"
    env = {**os.environ, "CUBE_BACKEND_KEY": key}
    proc = subprocess.Popen(
        plan.argv(ready), env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the replica did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    info = json.loads(ready.read_text())
    assert info["pid"] == proc.pid
    return Replica(proc, info["port"], log)


def _wait_gone(pid: int, within: float = 10) -> None:
    deadline = time.monotonic() + within
    while pid_alive(pid):
        assert time.monotonic() < deadline, f"{pid} is still alive"
        time.sleep(0.05)


def test_the_supervisor_starts_vllm_with_its_flags_and_stands_for_it(
    fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_RECORD", str(record))
    (tmp_path / "base").mkdir()
    (tmp_path / "lora-a").mkdir()
    plan = llm.LLMPlan(
        tmp_path / "base", "tiny-base", {"tiny-a": tmp_path / "lora-a"}, engine="vllm",
        engine_options={"max_model_len": 512, "enforce_eager": True},
    )  # fmt: skip
    r = start_replica(tmp_path, plan)
    try:
        seen = json.loads(record.read_text())
        args = seen["args"]
        assert args["model"] == str(tmp_path / "base")
        assert args["served_model_name"] == ["tiny-base"]
        assert args["enable_lora"] and args["lora_modules"] == [f"tiny-a={tmp_path / 'lora-a'}"]
        assert args["max_model_len"] == 512 and args["enforce_eager"]
        assert args["host"] == "127.0.0.1" and args["port"] != r.port
        # the engine's key came in its environment, never argv; the backend key stayed behind
        assert seen["key"] and seen["key"] not in " ".join(seen["argv"])
        assert args["api_key"] is None and seen["env_backend_key"] is None
        # the supervisor demands the router's backend key (probes excepted) and adds the
        # engine's own on the way
        assert httpx.get(f"{r.url}/v1/models").status_code == 401
        wrong = httpx.get(f"{r.url}/v1/models", headers={"X-Cube-Backend-Key": "nope"})
        assert wrong.status_code == 403
        assert wrong.json()["error"]["code"] == "invalid_backend_key"
        assert httpx.get(f"{r.url}/health").status_code == 200
        # the engine's own port is no way around it either
        bare = httpx.get(f"http://127.0.0.1:{args['port']}/v1/models")
        assert bare.status_code == 401
        h = {"X-Cube-Backend-Key": "sekrit"}
        models = httpx.get(f"{r.url}/v1/models", headers=h).json()
        assert [m["id"] for m in models["data"]] == ["tiny-base", "tiny-a"]
        body = {"model": "tiny-a", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        with httpx.stream("POST", f"{r.url}/v1/chat/completions", json=body, headers=h) as s:
            assert s.status_code == 200
            assert s.headers["content-type"].startswith("text/event-stream")
            events = [line for line in s.iter_lines() if line.startswith("data: ")]
        assert events[-1] == "data: [DONE]" and len(events) >= 4
        missing = httpx.post(
            f"{r.url}/v1/chat/completions", json={**body, "model": "x", "stream": False}, headers=h
        )
        assert missing.status_code == 404 and "no model x" in missing.json()["error"]["message"]
        # SIGTERM ends the supervisor and its engine
        r.proc.send_signal(signal.SIGTERM)
        assert r.proc.wait(20) == 0
        _wait_gone(seen["pid"])
    finally:
        if r.proc.poll() is None:
            r.proc.kill()


def test_a_killed_supervisor_takes_its_engine_with_it(
    fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_RECORD", str(record))
    gguf = _gguf(tmp_path)
    plan = llm.LLMPlan(gguf, "tiny-gguf", engine="llamacpp", engine_options={"n_ctx": 256})
    r = start_replica(tmp_path, plan)
    seen = json.loads(record.read_text())
    assert seen["args"]["model"] == str(gguf / "tiny.gguf")
    assert seen["args"]["model_alias"] == "tiny-gguf" and seen["args"]["n_ctx"] == 256
    h = {"X-Cube-Backend-Key": "sekrit"}
    answer = httpx.post(
        f"{r.url}/v1/chat/completions",
        json={"model": "tiny-gguf", "messages": [{"role": "user", "content": "yo"}]},
        headers=h,
    ).json()
    assert answer["choices"][0]["message"]["content"] == "tiny-gguf heard: yo"
    r.proc.kill()
    r.proc.wait()
    _wait_gone(seen["pid"])


def test_an_engine_that_dies_before_it_answers_fails_the_replica(
    fakes: Path, tmp_path: Path
) -> None:
    plan = llm.LLMPlan(tmp_path / "base", "x", {"a": tmp_path / "no-such-lora"}, engine="vllm")
    ready = tmp_path / "ready.json"
    proc = subprocess.run(plan.argv(ready), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and not ready.exists()
    assert "no LoRA folder" in proc.stderr and "exited with status" in proc.stderr


# -- a fake Ollama -----------------------------------------------------------------------------


@pytest.fixture
def ollama() -> Iterator[dict[str, Any]]:
    """An Ollama-shaped server (its OpenAI-compatible /v1 routes) with model llama3:latest."""
    seen: dict[str, Any] = {"requests": []}

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _json(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                data = [{"id": "llama3:latest", "object": "model", "owned_by": "library"}]
                return self._json(200, {"object": "list", "data": data})
            return self._json(404, {"error": "not found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen["requests"].append((self.path, body))
            if body.get("model") not in ("llama3", "llama3:latest"):
                return self._json(404, {"error": {"message": f"model {body.get('model')!r} "
                                                  "not found", "type": "api_error"}})  # fmt: skip
            text = "ollama says " + body["messages"][-1]["content"]
            return self._json(200, {
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                "model": body["model"], "system_fingerprint": "fp_ollama",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            })  # fmt: skip

        def log_message(self, *a: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    seen["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    yield seen
    server.shutdown()
    server.server_close()


def test_the_supervisor_forwards_to_a_running_ollama(
    ollama: dict[str, Any], tmp_path: Path
) -> None:
    engine, options = llm.check_engine("ollama", {"url": ollama["url"] + "/v1", "model": "llama3"})
    plan = llm.LLMPlan(tmp_path, "my-llm", engine=engine, engine_options=options)
    r = start_replica(tmp_path, plan)
    try:
        h = {"X-Cube-Backend-Key": "sekrit"}
        assert httpx.post(f"{r.url}/v1/chat/completions", json={}).status_code == 401
        models = httpx.get(f"{r.url}/v1/models", headers=h).json()
        assert [m["id"] for m in models["data"]] == ["my-llm"]
        msg = {"model": "my-llm", "messages": [{"role": "user", "content": "hi"}]}
        answer = httpx.post(f"{r.url}/v1/chat/completions", json=msg, headers=h).json()
        assert answer["choices"][0]["message"]["content"] == "ollama says hi"
        assert ollama["requests"][-1] == ("/v1/chat/completions", {**msg, "model": "llama3"})
    finally:
        r.proc.terminate()
        assert r.proc.wait(20) == 0


def test_an_ollama_without_the_model_fails_the_replica(
    ollama: dict[str, Any], tmp_path: Path
) -> None:
    plan = llm.LLMPlan(
        tmp_path, "x", engine="ollama", engine_options={"url": ollama["url"], "model": "qwen2"}
    )
    ready = tmp_path / "ready.json"
    proc = subprocess.run(plan.argv(ready), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and not ready.exists()
    assert "has no model 'qwen2'" in proc.stderr and "ollama pull qwen2" in proc.stderr


# -- through the deployment service and its router ---------------------------------------------


def _causal_lm(folder: Path) -> Path:
    """A folder cube-lab takes for a causal LM (the fake vLLM loads nothing)."""
    folder.mkdir(parents=True)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes(b"not weights: the fake engine loads nothing")
    return folder


def _adapter(folder: Path, base_ref: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"lora")
    meta = {"kind": "cube-lab-finetune", "base_ref": base_ref, "base_model": "gone"}
    (folder / "cube_finetune.json").write_text(json.dumps(meta))
    return folder


@pytest.fixture
def serving(ws: Any) -> Iterator[Any]:
    from serving_util import stop_serving

    from cube_lab.identity import Caller

    yield ws
    stop_serving(ws, Caller("alice"))


def test_a_vllm_deployment_through_the_service_router_and_openai(
    fakes: Path, serving: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai = pytest.importorskip("openai")
    from cube_lab.identity import Caller

    me = Caller("alice")
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_RECORD", str(record))
    reg = serving.registry
    reg.register(me, name="tiny", path=_causal_lm(tmp_path / "base"), flavor="transformers")
    reg.register(me, name="tiny-chat", path=_adapter(tmp_path / "lora-1", "tiny:1"))
    reg.register(me, name="tiny-chat", path=_adapter(tmp_path / "lora-2", "tiny:1"))

    view = serving.serving.deploy(
        me, "tiny-chat:1", engine="vllm", engine_options={"max_model_len": 512}
    )
    assert view.runtime == "llm" and view.engine == "vllm" and view.status == "running"
    seen = json.loads(record.read_text())
    args = seen["args"]
    base_dir = reg.download(me, "alice", "tiny", 1).path
    lora_dir = reg.download(me, "alice", "tiny-chat", 1).path
    assert Path(args["model"]) == base_dir
    assert args["served_model_name"] == ["tiny"]
    assert args["enable_lora"] and args["lora_modules"] == [f"tiny-chat={lora_dir}"]
    assert args["max_model_len"] == 512
    client = openai.OpenAI(base_url=f"{view.endpoint}/v1", api_key="any", max_retries=0)
    assert sorted(m.id for m in client.models.list().data) == ["tiny", "tiny-chat"]
    said = client.chat.completions.create(
        model="tiny-chat", messages=[{"role": "user", "content": "hello"}]
    )
    assert said.choices[0].message.content == "tiny-chat heard: hello"
    chunks = list(
        client.chat.completions.create(
            model="tiny-chat", messages=[{"role": "user", "content": "a b c"}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "tiny-chat heard: a b c" and len(chunks) >= 5
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])

    # a canary to v2 starts its replicas on the same engine, with v2's adapter
    serving.serving.canary(me, "tiny-chat", "2", 100)
    again = json.loads(record.read_text())
    assert again["pid"] != seen["pid"]
    assert again["args"]["lora_modules"] == [
        f"tiny-chat={reg.download(me, 'alice', 'tiny-chat', 2).path}"
    ]
    raw = httpx.post(
        f"{view.endpoint}/v1/chat/completions",
        json={"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}]},
        timeout=30,
    )
    assert raw.status_code == 200 and raw.headers["x-cube-version"] == "2"
    serving.serving.undeploy(me, "tiny-chat")
    _wait_gone(seen["pid"])
    _wait_gone(again["pid"])


def test_an_ollama_deployment_through_the_service(
    ollama: dict[str, Any], serving: Any, tmp_path: Path
) -> None:
    openai = pytest.importorskip("openai")
    from cube_lab.identity import Caller

    me = Caller("alice")
    (tmp_path / "llama3.txt").write_text("served by Ollama as llama3")
    serving.registry.register(me, name="notes", path=tmp_path / "llama3.txt")
    options = {"url": ollama["url"], "model": "llama3"}
    view = serving.serving.deploy(me, "notes:1", engine="ollama", engine_options=options)
    assert view.runtime == "llm" and view.engine == "ollama"
    client = openai.OpenAI(base_url=f"{view.endpoint}/v1", api_key="any", max_retries=0)
    assert [m.id for m in client.models.list().data] == ["notes"]
    said = client.chat.completions.create(
        model="notes", messages=[{"role": "user", "content": "hi"}]
    )
    assert said.choices[0].message.content == "ollama says hi"
    assert ollama["requests"][-1][1]["model"] == "llama3"
    # an Ollama that lacks the tag fails the deploy, and nothing is left running
    with pytest.raises(CubeError) as caught:
        serving.serving.deploy(
            me, "notes:1", name="other", engine="ollama",
            engine_options={**options, "model": "qwen2"},
        )  # fmt: skip
    assert "ollama pull qwen2" in str(caught.value.detail)


async def test_rest_refuses_a_missing_engine_and_an_internal_ollama(api: Any) -> None:
    status, err = await api("alice", "POST", "deployments", {"model": "x:1", "engine": "vllm"})
    if llm._importable("vllm"):
        pytest.skip("vllm is installed here")
    assert status == 400, err
    assert "engine vllm is not installed" in err["error"] and "pip install vllm" in err["detail"]
    status, err = await api("alice", "POST", "deployments", {"model": "x:1", "engine": "turbo"})
    assert status == 400 and "unknown engine" in err["error"]
    job_credentials.configure(job_credentials.Issuer(b"k" * 32, "http://hub:8020"))
    try:
        body = {"model": "x:1", "engine": "ollama",
                "engine_options": {"url": "http://127.0.0.1:11434", "model": "llama3"}}  # fmt: skip
        status, err = await api("alice", "POST", "deployments", body)
        assert status == 403 and ENV_ALLOWED in err["detail"], err
    finally:
        job_credentials.configure(None)


def test_cli_engine_options() -> None:
    from cube_lab.cli.serving import engine_options

    assert engine_options(None) is None
    assert engine_options(["url=http://h:1", "model=a=b"]) == {"url": "http://h:1", "model": "a=b"}
    with pytest.raises(InvalidInput, match="KEY=VALUE"):
        engine_options(["nokey"])


# -- real llama.cpp (llama-cpp-python[server] and gguf installed; skipped elsewhere) -----------


def _tiny_gguf(path: Path) -> Path:
    """A random-init Llama-shaped GGUF (1 layer, width 32) with a byte-level vocabulary."""
    import numpy as np

    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), "llama")
    vocab, dim, ffn = 260, 32, 64
    w.add_name("tiny")
    w.add_context_length(256)
    w.add_embedding_length(dim)
    w.add_block_count(1)
    w.add_feed_forward_length(ffn)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(dim // 2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)
    w.add_vocab_size(vocab)
    byte_tokens = [f"<0x{i:02X}>".encode() for i in range(256)]
    tokens = [b"<unk>", b"<s>", b"</s>", *byte_tokens, "\u2581".encode()]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * vocab)
    w.add_token_types([2, 3, 3, *([6] * 256), 1])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    rng = np.random.default_rng(0)

    def tensor(name: str, *shape: int) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    tensor("token_embd.weight", vocab, dim)
    tensor("output_norm.weight", dim)
    tensor("output.weight", vocab, dim)
    square = (dim, dim)
    blocks = [("attn_norm", (dim,)), ("attn_q", square), ("attn_k", square), ("attn_v", square),
              ("attn_output", square), ("ffn_norm", (dim,)), ("ffn_gate", (ffn, dim)),
              ("ffn_up", (ffn, dim)), ("ffn_down", (dim, ffn))]  # fmt: skip
    for name, shape in blocks:
        tensor(f"blk.0.{name}.weight", *shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_real_llama_cpp_serves_a_gguf_version(serving: Any, tmp_path: Path) -> None:
    if not llm._importable("llama_cpp"):
        pytest.skip("llama-cpp-python is not installed")
    llm.require_installed("llamacpp")
    openai = pytest.importorskip("openai")
    from cube_lab.identity import Caller

    me = Caller("alice")
    serving.registry.register(me, name="tiny-gguf", path=_tiny_gguf(tmp_path / "tiny.gguf"))
    view = serving.serving.deploy(
        me,
        "tiny-gguf:1",
        engine_options=None,
        engine=None,  # auto: a .gguf is llama.cpp's
    )
    assert view.runtime == "llm" and view.engine == "llamacpp"
    client = openai.OpenAI(base_url=f"{view.endpoint}/v1", api_key="any", max_retries=0)
    assert [m.id for m in client.models.list().data] == ["tiny-gguf"]
    said = client.completions.create(model="tiny-gguf", prompt="hello", max_tokens=4)
    assert said.usage.prompt_tokens > 0 and said.choices[0].finish_reason in ("length", "stop")
    chunks = list(
        client.completions.create(model="tiny-gguf", prompt="hello", max_tokens=4, stream=True)
    )
    assert len(chunks) >= 2
    serving.serving.undeploy(me, "tiny-gguf")
