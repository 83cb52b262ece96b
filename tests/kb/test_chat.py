"""Chat with a knowledge base against a fake OpenAI-compatible server started here (a real HTTP
server that records each request and cites the passage it was asked about): the retrieved
passages are in the prompt as numbered blocks, the citations point at those chunks, a
question nothing in the documents is close to gets "no answer" without the model being
called, a custom template and history are filled in, and failures are 4xx JSON (unknown
deployment 404, unreachable or failing model server 424, bob 404)."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cube_lab.errors import InvalidInput, NotFound
from cube_lab.identity import Caller
from cube_lab.kb import rag
from tests.kb.test_service import DOCS, make_docs
from tests.sdk.test_sdk import local, server  # noqa: F401  (fixtures)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

KB = "kb/alice/docs"
REFUND = "How do I get my money back for something I bought?"
OFF_TOPIC = "Who won the football world cup in 1998?"


class FakeOpenAI:
    """``POST /v1/chat/completions``: records the request; answers citing the block of the
    prompt that holds ``cite`` (``[n]`` of the first block containing it), or fails with
    ``fail`` (a status) when set."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.cite = "reimbursement"
        self.fail: int | None = None
        self.no_stream = False  # answer in one piece even when asked to stream
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
                if fake.fail:
                    self._send(fake.fail, {"error": {"message": "the model fell over"}})
                    return
                prompt = body["messages"][-1]["content"]
                starts = list(re.finditer(r"\[(\d+)\] \(", prompt))
                ends = [m.start() for m in starts[1:]] + [len(prompt)]
                number = next(
                    (
                        m.group(1)
                        for m, end in zip(starts, ends, strict=True)
                        if fake.cite in prompt[m.start() : end]
                    ),
                    None,
                )
                text = f"Return it within thirty days [{number}]." if number else "I do not know."
                if body.get("stream") and not fake.no_stream:
                    self._stream(body["model"], text)
                    return
                self._send(
                    200,
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 1,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58},
                    },
                )

            def _stream(self, model: str, text: str) -> None:
                """The answer word by word as OpenAI streams chat completions."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for n, word in enumerate(re.findall(r"\S+\s*", text)):
                    delta = {"content": word} if n else {"role": "assistant", "content": word}
                    chunk = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion.chunk",
                        "created": 1,
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def target(self) -> dict[str, str]:
        return {"base_url": self.url, "model": "fake-model", "api_key": "sk-fake"}

    def prompt(self, n: int = -1) -> str:
        return str(self.requests[n]["body"]["messages"][-1]["content"])


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    running = FakeOpenAI()
    yield running
    running.server.shutdown()
    running.server.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_answer_cites_the_chunks_it_was_given(
    ws: Any, alice: Caller, bob: Caller, tmp_path: Path, fake: FakeOpenAI
) -> None:
    ws.kb.create(alice, "docs", chunking_="headings", chunk_size=64, overlap=8)
    ws.kb.add(alice, None, "docs", [make_docs(tmp_path / "docs")])
    body = {"query": REFUND, "target": fake.target(), "k": 3}
    result = rag.answer(ws.kb, ws.serving, alice, None, "docs", body)

    (request,) = fake.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer sk-fake"
    assert request["body"]["model"] == "fake-model"
    prompt = fake.prompt()
    assert prompt.endswith(f"Question: {REFUND}\nAnswer:")  # the default template
    given = result["citations"]
    assert 1 <= len(given) <= 3 and result["answered"] is True
    # each passage given is in the prompt as its numbered block, with its source
    for c in given:
        assert f"[{c['number']}] ({c['source']}" in prompt and c["text"] in prompt
    refund = next(c for c in given if c["name"] == "refund.md")
    assert result["cited"] == [refund["number"]]
    assert result["answer"] == f"Return it within thirty days [{refund['number']}]."
    assert refund["cited"] is True and all(not c["cited"] for c in given if c is not refund)
    # the citation is the chunk retrieval finds: same id, text, heading
    (top,) = ws.kb.query(alice, None, "docs", "refund policy reimbursement", k=1, mode="keyword")
    assert (refund["chunk_id"], refund["text"], refund["heading"]) == (
        top["id"],
        top["text"],
        "Returns",
    )
    assert refund["cosine"] >= rag.DEFAULT_THRESHOLD and refund["page"] is None
    assert result["usage"]["total_tokens"] == 58 and result["target"]["model"] == "fake-model"

    # nothing close enough: no answer, and the model is not asked
    nothing = rag.answer(
        ws.kb, ws.serving, alice, None, "docs", {"query": OFF_TOPIC, "target": fake.target()}
    )
    assert nothing["answered"] is False and nothing["citations"] == []
    assert nothing["answer"] == "No answer in the documents." and nothing["retrieved"] > 0
    assert len(fake.requests) == 1
    # a threshold of -1 lets everything through: the model is asked
    loose = {"query": OFF_TOPIC, "target": fake.target(), "threshold": -1, "k": 2}
    assert len(rag.answer(ws.kb, ws.serving, alice, None, "docs", loose)["citations"]) == 2
    assert len(fake.requests) == 2

    # filters keep the passages to the sources asked for
    only = {**body, "filters": {"source": "*shipping*"}, "threshold": -1}
    kept = rag.answer(ws.kb, ws.serving, alice, None, "docs", only)["citations"]
    assert [c["name"] for c in kept] == ["shipping.txt"]
    fake.requests.pop()

    # tenancy: bob sees no knowledge base of alice's
    with pytest.raises(NotFound):
        rag.answer(ws.kb, ws.serving, bob, "alice", "docs", body)
    assert len(fake.requests) == 2


def test_template_history_and_keyword_mode(
    ws: Any, alice: Caller, tmp_path: Path, fake: FakeOpenAI
) -> None:
    ws.kb.create(alice, "docs", chunking_="headings", chunk_size=64, overlap=8)
    ws.kb.add(alice, None, "docs", [make_docs(tmp_path / "docs")])
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! {query} stays as written."},
    ]
    body = {
        "query": "refund policy",
        "target": fake.target(),
        "template": "CONTEXT<{knowledge}> HISTORY<{history}> Q<{query}> {other}",
        "history": history,
        "system": "You are terse.",
        "mode": "keyword",
        "k": 1,
        "params": {"temperature": 0, "max_tokens": 40},
    }
    result = rag.answer(ws.kb, ws.serving, alice, None, "docs", body)
    (citation,) = result["citations"]
    assert citation["name"] == "refund.md" and result["mode"] == "keyword"
    sent = fake.requests[-1]["body"]
    assert sent["messages"][0] == {"role": "system", "content": "You are terse."}
    assert (sent["temperature"], sent["max_tokens"]) == (0, 40)
    assert fake.prompt() == (
        f"CONTEXT<[1] ({citation['source']}, Returns)\n{DOCS['refund.md'].split(chr(10), 2)[2]}> "
        "HISTORY<User: Hi\nAssistant: Hello! {query} stays as written.> "
        "Q<refund policy> {other}"
    )

    for bad, says in (
        ({"template": "no placeholders"}, "has no {knowledge}, {query}"),
        ({"history": [{"role": "tool", "content": "x"}]}, "history[0]"),
        ({"threshold": 3, "mode": "hybrid"}, "cosine from -1 to 1"),
        ({"threshold": "high"}, "threshold must be a number"),
        ({"target": None}, "target is required"),
        ({"target": {"base_url": "ftp://x", "model": "m"}}, "http(s) URL"),
        ({"query": " "}, "query must be a non-empty string"),
        ({"k": 0}, "k must be an integer"),
        ({"colour": 1}, "unknown fields"),
    ):
        with pytest.raises(InvalidInput, match=re.escape(says)):
            rag.answer(ws.kb, ws.serving, alice, None, "docs", {**body, **bad})


async def test_chat_over_rest(api: Any, jp_fetch: Any, jp_root_dir: Path, fake: FakeOpenAI) -> None:
    from tests.kb.test_parse import make_pdf
    from tests.kb.test_rest import _create, _finished

    make_docs(jp_root_dir / "docs")
    (jp_root_dir / "docs" / "valves.pdf").write_bytes(
        make_pdf(["Cover.", "Valve VQ-5521 gives a full reimbursement of the drain fee."])
    )
    await _create(api)
    status, started = await api("alice", "POST", f"{KB}/sources", {"paths": ["docs"]})
    assert status == 202, started
    await _finished(api, f"{KB}/ingests/{started['id']}")

    fake.cite = "VQ-5521"
    body = {"query": "What does valve VQ-5521 reimburse?", "target": fake.target(), "k": 3}
    status, result = await api("alice", "POST", f"{KB}/chat", body)
    assert status == 200, result
    (cited,) = [c for c in result["citations"] if c["cited"]]
    assert (cited["source"], cited["page"]) == ("docs/valves.pdf", 2)  # relative to the root
    assert "[" + str(cited["number"]) + "] (docs/valves.pdf, page 2)" in fake.prompt()
    assert str(jp_root_dir) not in fake.prompt()  # the server's paths stay in the server

    # no answer, in the reader's language; the model is not asked
    asked = len(fake.requests)
    resp = await jp_fetch(
        "cube", "api", "v1", *f"{KB}/chat".split("/"),
        method="POST",
        body=json.dumps({"query": OFF_TOPIC, "target": fake.target()}),
        headers={"Authorization": "token alice-secret", "Accept-Language": "zh-CN"},
    )  # fmt: skip
    nothing = json.loads(resp.body)
    assert nothing["answered"] is False and nothing["answer"] == "文档中没有答案。"
    assert len(fake.requests) == asked

    cases: list[tuple[str, Any, int, str]] = [
        ("alice", {"query": "x", "target": {"deployment": "nope"}}, 404, "not found"),
        (
            "alice",
            {"query": "refund", "target": {"base_url": f"http://127.0.0.1:{closed_port()}/v1",
                                           "model": "m"}},
            424,
            "cannot be reached",
        ),
        ("alice", {"query": "x", "template": "{query}", "target": fake.target()}, 400, "template"),
        ("alice", {"query": "x"}, 400, "target is required"),
        ("bob", {"query": "refund", "target": fake.target()}, 404, "not found"),
    ]  # fmt: skip
    for user, request, code, says in cases:
        status, answer = await api(user, "POST", f"{KB}/chat", request)
        assert status == code and says in answer["error"], (request, answer)
        assert answer["detail"], answer
    fake.fail = 500
    status, answer = await api(
        "alice", "POST", f"{KB}/chat", {"query": "refund", "target": fake.target()}
    )
    assert status == 424 and "answered 500" in answer["error"]
    assert answer["detail"] == "the model fell over"


def _sdk_chat(root: Path, fake: FakeOpenAI) -> dict[str, Any]:
    import cube_lab as cl

    make_docs(root / "docs")
    kb = cl.kb.create("docs", chunking="headings", chunk_size=64, overlap=8)
    kb.add("docs", wait=True)
    answer = kb.chat(REFUND, base_url=fake.url, model="fake-model", api_key="sk-fake", k=2)
    nothing = cl.kb.chat("docs", OFF_TOPIC, base_url=fake.url, model="fake-model")
    with pytest.raises(cl.CubeError) as no_target:
        kb.chat(REFUND)
    with pytest.raises(cl.CubeError) as missing:
        kb.chat(REFUND, deployment="nope")
    kb.delete()
    return {
        "answer": answer["answer"],
        "cited": [
            (c["source"], c["heading"], c["text"]) for c in answer["citations"] if c["cited"]
        ],
        "given": len(answer["citations"]),
        "nothing": [nothing["answered"], nothing["answer"]],
        "errors": [
            no_target.value.status,
            missing.value.status,
            "not found" in missing.value.error,
        ],
    }


def test_sdk_and_cli_here_and_over_rest(
    local: Path,  # noqa: F811  (the fixture of test_sdk)
    server: tuple[str, Path],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
    fake: FakeOpenAI,
) -> None:
    from cube_lab import sdk
    from cube_lab.cli import main
    from tests.sdk.test_sdk import _connect, _same_everywhere

    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(local))
    here = _sdk_chat(local, fake)
    assert here["cited"] == [("docs/refund.md", "Returns", DOCS["refund.md"].split("\n", 2)[2])]
    assert here["nothing"] == [False, "No answer in the documents."] and here["given"] >= 1
    assert here["errors"] == [400, 404, True]
    asked = len(fake.requests)
    assert asked == 1
    theirs = _sdk_chat(_connect(server, monkeypatch), fake)
    _same_everywhere(here, theirs)
    assert len(fake.requests) == 2

    # the CLI under the hub ($CUBE_LAB_SERVICE_URL): a REST call, the same text printed
    from server_util import TOKEN

    url, root = server
    monkeypatch.setenv("CUBE_LAB_SERVICE_URL", url)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", TOKEN)
    monkeypatch.setenv("CUBE_LAB_ROOT_DIR", str(root))
    monkeypatch.delenv("CUBE_LAB_USER")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    sdk.disconnect()
    capsys.readouterr()
    assert main(["kb", "create", "docs", "--chunking", "headings", "--chunk-size", "64"]) == 0
    assert main(["kb", "add", "docs", "docs", "-q"]) == 0
    (root / "t.txt").write_text("PASSAGES {knowledge}\nQ {query}")
    capsys.readouterr()
    args = ["kb", "chat", "docs", REFUND, "--base-url", fake.url, "--model", "fake-model"]
    assert main([*args, "--template", "t.txt", "-k", "2"]) == 0
    out = capsys.readouterr().out
    assert fake.prompt().startswith("PASSAGES [1] (docs/")
    assert fake.requests[-1]["headers"]["authorization"] == "Bearer sk-from-env"
    lines = out.splitlines()
    assert lines[0].startswith("Return it within thirty days [")
    assert any(line.startswith("*[") and "docs/refund.md, Returns" in line for line in lines)
    assert (
        main(["kb", "chat", "docs", OFF_TOPIC, "--base-url", fake.url, "--model", "m", "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["answered"] is False
    assert main(["kb", "chat", "docs", REFUND]) == 2
    assert "give --deployment or --base-url" in capsys.readouterr().err


def test_cli_in_this_process(
    ws: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, fake: FakeOpenAI
) -> None:
    from cube_lab.cli import main

    monkeypatch.setenv("CUBE_LAB_USER", "alice")
    monkeypatch.chdir(tmp_path)
    make_docs(tmp_path / "docs")
    assert main(["kb", "create", "docs", "--chunking", "headings", "--chunk-size", "64"]) == 0
    assert main(["kb", "add", "docs", "docs", "-q"]) == 0
    capsys.readouterr()
    base = ["kb", "chat", "docs", REFUND, "--base-url", fake.url, "--model", "fake-model"]
    assert main([*base, "--api-key", "sk-1", "--max-tokens", "30", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    (cited,) = [c for c in result["citations"] if c["cited"]]
    assert Path(cited["source"]).name == "refund.md" and cited["heading"] == "Returns"
    assert fake.requests[-1]["body"]["max_tokens"] == 30
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert main(["kb", "chat", "docs", OFF_TOPIC, "--base-url", fake.url, "--model", "m"]) == 0
    assert capsys.readouterr().out.startswith("文档中没有答案。")
    (tmp_path / "bad.txt").write_text("no placeholders")
    assert main([*base, "--template", "bad.txt"]) == 2
    assert main(["kb", "chat", "docs", REFUND, "--deployment", "nope"]) == 1
    assert len(fake.requests) == 1


async def test_chat_through_a_tiny_llm_deployment(
    api: Any, jp_fetch: Any, jp_root_dir: Path
) -> None:
    """A real LLM deployment of the project (a tiny random Llama built here, behind its router
    with auth required): the lab server reaches it with the deployment's own token; more
    passages make a longer prompt; a stopped deployment is a 409."""
    pytest.importorskip("transformers")

    async def slow(user: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """``api`` with room for a busy machine (api() gives up after 20 s)."""
        resp = await jp_fetch(
            "cube", "api", "v1", *path.split("/"),
            method=method,
            body=None if method == "DELETE" else json.dumps(body or {}),
            headers={"Authorization": f"token {user}-secret"},
            request_timeout=240,
            raise_error=False,
        )  # fmt: skip
        return resp.code, json.loads(resp.body) if resp.body else None

    from cube_lab.finetune import tiny
    from tests.kb.test_rest import _create, _finished
    from tests.serving.llm.test_deploy import TEXTS

    tiny.build(jp_root_dir / "models" / "tiny", TEXTS)
    status, _ = await slow("alice", "POST", "models", {"name": "tiny", "path": "models/tiny"})
    assert status == 201
    make_docs(jp_root_dir / "docs")
    await _create(api)
    status, started = await api("alice", "POST", f"{KB}/sources", {"paths": ["docs"]})
    await _finished(api, f"{KB}/ingests/{started['id']}")
    status, dep = await slow(
        "alice", "POST", "deployments", {"model": "tiny:1", "auth": "required"}
    )
    assert status == 201 and dep["status"] == "running", dep
    try:
        body = {
            "query": "fault ZQX4741 pump",
            "target": {"deployment": "tiny"},
            "mode": "keyword",
            "template": "{knowledge}\nQ: {query}\nA:",
            "params": {"max_tokens": 4, "temperature": 0},
        }
        usage = []
        for k in (1, 2):  # the first answer warms the engine: more than api()'s 20 s may pass
            status, result = await slow("alice", "POST", f"{KB}/chat", {**body, "k": k})
            assert status == 200, result
            assert result["answered"] is True and len(result["citations"]) == k
            assert result["target"] == {"deployment": "tiny", "model": "tiny"}
            assert result["citations"][0]["source"] == "docs/codes2.txt"
            assert isinstance(result["answer"], str)
            assert result["usage"]["completion_tokens"] <= 4
            usage.append(result["usage"]["prompt_tokens"])
        assert usage[1] > usage[0] > 10  # the second passage went into the prompt
        status, refused = await slow("bob", "POST", f"{KB}/chat", body)
        assert status == 404
    finally:
        status, stopped = await slow("alice", "DELETE", "projects/alice/deployments/tiny")
    assert stopped["status"] == "stopped"
    status, refused = await api("alice", "POST", f"{KB}/chat", body)
    assert status == 409 and "not running" in refused["error"], refused


def _events(body: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data: ") :])
        for line in body.decode().splitlines()
        if line.startswith("data: ")
    ]


async def test_chat_streams_citations_then_the_answer(
    api: Any, jp_fetch: Any, jp_root_dir: Path, fake: FakeOpenAI
) -> None:
    from tests.kb.test_rest import _create, _finished

    make_docs(jp_root_dir / "docs")
    await _create(api)
    status, started = await api("alice", "POST", f"{KB}/sources", {"paths": ["docs"]})
    assert status == 202, started
    await _finished(api, f"{KB}/ingests/{started['id']}")

    async def post(body: dict[str, Any], **headers: str) -> Any:
        return await jp_fetch(
            "cube", "api", "v1", *f"{KB}/chat".split("/"),
            method="POST",
            body=json.dumps(body),
            headers={"Authorization": "token alice-secret", **headers},
            raise_error=False,
        )  # fmt: skip

    body = {"query": REFUND, "target": fake.target(), "k": 3}
    status, whole = await api("alice", "POST", f"{KB}/chat", body)
    assert status == 200 and whole["answered"], whole
    resp = await post({**body, "stream": True})
    assert resp.code == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
    events = _events(resp.body)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "citations" and kinds[-1] == "done", kinds
    deltas = [e["text"] for e in events if e["event"] == "delta"]
    assert len(deltas) > 1  # the answer came in pieces
    first, done = events[0], events[-1]
    assert [c["chunk_id"] for c in first["citations"]] == [
        c["chunk_id"] for c in whole["citations"]
    ]
    assert "".join(deltas) == done["answer"] == whole["answer"]
    assert done["cited"] == whole["cited"] and done["citations"] == whole["citations"]
    assert fake.requests[-1]["body"]["stream"] is True

    # nothing passes the threshold: one done event, in the reader's language; no model call
    asked = len(fake.requests)
    resp = await post({"query": OFF_TOPIC, "target": fake.target(), "stream": True},
                      **{"Accept-Language": "zh-CN"})  # fmt: skip
    (only,) = _events(resp.body)
    assert only["event"] == "done" and only["answer"] == "文档中没有答案。"
    assert len(fake.requests) == asked
    # a bad request is the plain 400, before any event
    resp = await post({"query": REFUND, "target": fake.target(), "stream": "yes"})
    assert resp.code == 400 and "stream must be true or false" in json.loads(resp.body)["error"]
    # a server that ignores "stream" still gives the whole answer, as one piece
    fake.no_stream = True
    events = _events((await post({**body, "stream": True})).body)
    assert [e["event"] for e in events] == ["citations", "delta", "done"]
    assert events[1]["text"] == events[2]["answer"] == whole["answer"]
    assert events[2]["cited"] == whole["cited"]
    fake.no_stream = False
    # the model fails after the citations went out: an error event ends the stream
    fake.fail = 500
    events = _events((await post({**body, "stream": True})).body)
    assert [e["event"] for e in events] == ["citations", "error"]
    assert "answered 500" in events[-1]["error"] and events[-1]["detail"] == "the model fell over"
