"""Chat through the REST API of a real jupyter-server (docs/chat.md) with a real LLM deployment
(a tiny random-init Llama built here, served by cube-lab's engine behind its router):
streamed answers relayed as server-sent events and saved, stop mid-stream (the engine stops
generating), regenerate, feedback, preference export to a dataset version that the DPO
fine-tune's data loader reads as it is, an external OpenAI-compatible target with a key,
an unreachable target, tenancy and bad input."""

from __future__ import annotations

import asyncio
import functools
import json
import time
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("transformers")

from conftest import TOKENS  # noqa: E402

from cube_lab.errors import InvalidInput  # noqa: E402
from cube_lab.finetune import tiny  # noqa: E402
from cube_lab.handlers.base import WORKSPACE  # noqa: E402
from cube_lab.identity import Caller  # noqa: E402

TEXTS = [
    "hello world, the quick brown fox jumps over the lazy dog",
    "numbers one two three four five six seven eight nine ten",
] * 20
CONV = "chat/conversations"


def _url(port: int, base: str, path: str) -> str:
    return f"http://localhost:{port}{base}cube/api/v1/{path}"


async def _stream(
    port: int, base: str, cid: int, body: dict[str, Any], user: str = "alice"
) -> tuple[int, list[dict[str, Any]], Any]:
    """Send a message; (status, the events, the JSON error body or None)."""
    events: list[dict[str, Any]] = []
    async with (
        httpx.AsyncClient(timeout=120) as client,
        client.stream(
            "POST",
            _url(port, base, f"{CONV}/{cid}/messages"),
            json=body,
            headers={"Authorization": f"token {TOKENS[user]}"},
        ) as resp,
    ):
        if resp.status_code != 200:
            return resp.status_code, [], json.loads(await resp.aread())
        assert resp.headers["content-type"].startswith("text/event-stream")
        async for line in resp.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    return 200, events, None


def _metrics(text: bytes) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            out[s.name] = out.get(s.name, 0.0) + s.value
    return out


async def test_chat_with_a_deployment_stream_stop_feedback_export_dpo(
    api: Any,
    jp_fetch: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    jp_serverapp: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    port, base = jp_http_port, jp_base_url
    tiny.build(jp_root_dir / "models" / "tiny", TEXTS)
    status, _ = await api("alice", "POST", "models", {"name": "tiny", "path": "models/tiny"})
    assert status == 201
    # loading the model may take longer than jp_fetch's 20 s on a busy machine
    resp = await jp_fetch(
        "cube", "api", "v1", "deployments",
        method="POST", body=json.dumps({"model": "tiny:1", "auth": "required"}),
        headers={"Authorization": f"token {TOKENS['alice']}"}, request_timeout=300,
    )  # fmt: skip
    dep = json.loads(resp.body)
    assert resp.code == 201 and dep["runtime"] == "llm", dep
    endpoint = dep["endpoint"]
    try:
        # the picker's list: the running LLM deployment, its /v1/models names
        status, found = await api("alice", "GET", "chat/targets", params={"project": "alice"})
        assert status == 200, found
        assert [(t["deployment"], t["models"]) for t in found["targets"]] == [("tiny", ["tiny"])]

        body = {
            "project": "alice",
            "target": {"deployment": "tiny"},
            "system": "Be brief.",
            "params": {"max_tokens": 8, "temperature": 0},
        }
        status, conv = await api("alice", "POST", CONV, body)
        assert status == 201, conv
        cid = conv["id"]
        assert conv["title"] == "" and conv["message_count"] == 0

        # streamed through the route: user, deltas, done; the same text as a direct call
        status, events, _ = await _stream(port, base, cid, {"content": "hello world"})
        assert status == 200
        assert events[0]["type"] == "user" and events[0]["message"]["content"] == "hello world"
        deltas = [e["delta"] for e in events if e["type"] == "delta"]
        assert len(deltas) >= 2, events
        done = events[-1]
        assert done["type"] == "done" and done["done"] is True
        assert done["message"]["content"] == "".join(deltas)
        assert done["message"]["status"] == "complete" and done["message"]["active"]
        assert done["usage"]["completion_tokens"] <= 8 and done["usage"]["prompt_tokens"] > 0
        status, key = await api(
            "alice", "POST", "projects/alice/deployments/tiny/keys", {"name": "t"}
        )
        assert status == 201
        client = openai.OpenAI(base_url=f"{endpoint}/v1", api_key=key["key"], max_retries=0)
        direct = client.chat.completions.create(
            model="tiny",
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hello world"},
            ],
            max_tokens=8,
            temperature=0,
        )
        assert direct.choices[0].message.content == done["message"]["content"]

        status, got = await api("alice", "GET", f"{CONV}/{cid}")
        assert status == 200 and got["title"] == "hello world"
        assert [(m["role"], m["turn"], m["status"]) for m in got["messages"]] == [
            ("user", 0, "complete"),
            ("assistant", 0, "complete"),
        ]
        first_answer = got["messages"][1]

        # stop mid-stream: close the request after two pieces; the partial answer is saved
        # as stopped, and the engine stops generating (its decode steps stop growing)
        status, raw = await api("alice", "GET", "projects/alice/deployments/tiny/metrics")
        before = _metrics(raw)
        async with (
            httpx.AsyncClient(timeout=120) as http,
            http.stream(
                "POST",
                _url(port, base, f"{CONV}/{cid}/messages"),
                json={"content": "numbers one two", "params": {"max_tokens": 400}},
                headers={"Authorization": f"token {TOKENS['alice']}"},
            ) as resp,
        ):
            assert resp.status_code == 200
            seen = 0
            async for line in resp.aiter_lines():
                if line.startswith("data: ") and json.loads(line[6:])["type"] == "delta":
                    seen += 1
                    if seen == 2:
                        break
        stopped = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, got = await api("alice", "GET", f"{CONV}/{cid}")
            answers = [m for m in got["messages"] if m["turn"] == 1 and m["role"] == "assistant"]
            if answers:
                stopped = answers[0]
                break
            await asyncio.sleep(0.1)
        assert stopped is not None and stopped["status"] == "stopped", got
        assert stopped["content"]  # what came before the stop
        await asyncio.sleep(0.5)
        status, raw = await api("alice", "GET", "projects/alice/deployments/tiny/metrics")
        after_stop = _metrics(raw)
        await asyncio.sleep(1.0)
        status, raw = await api("alice", "GET", "projects/alice/deployments/tiny/metrics")
        later = _metrics(raw)
        assert later["cube_llm_running"] == 0
        assert later["cube_llm_decode_steps_total"] == after_stop["cube_llm_decode_steps_total"]
        generated = (
            later["cube_llm_completion_tokens_total"] - before["cube_llm_completion_tokens_total"]
        )
        assert generated < 400, (generated, stopped)

        # regenerate the stopped answer: a new active answer, the stopped one an alternative
        status, events, _ = await _stream(
            port, base, cid, {"regenerate": stopped["id"], "params": {"max_tokens": 6}}
        )
        assert status == 200 and events[0]["type"] == "delta", events[:2]
        redo = events[-1]["message"]
        assert redo["turn"] == 1 and redo["active"] and redo["status"] == "complete"
        status, got = await api("alice", "GET", f"{CONV}/{cid}")
        turn1 = [(m["role"], m["id"], m["active"]) for m in got["messages"] if m["turn"] == 1]
        assert turn1[1:] == [("assistant", stopped["id"], False), ("assistant", redo["id"], True)]
        # only an answer of the last turn can be redone
        status, err = await api(
            "alice", "POST", f"{CONV}/{cid}/messages", {"regenerate": first_answer["id"]}
        )
        assert status == 400 and "last turn" in err["error"], err

        # feedback: thumbs up the new answer, down the stopped one; edit the first answer
        fb = f"{CONV}/{cid}/messages"
        status, m = await api("alice", "PUT", f"{fb}/{redo['id']}/feedback", {"rating": "up"})
        assert status == 200 and m["rating"] == "up"
        status, m = await api("alice", "PUT", f"{fb}/{stopped['id']}/feedback", {"rating": "down"})
        assert status == 200 and m["rating"] == "down"
        status, m = await api(
            "alice",
            "PUT",
            f"{fb}/{first_answer['id']}/feedback",
            {"edited": "Hello! How can I help?"},
        )
        assert status == 200 and m["edited"] == "Hello! How can I help?" and m["rating"] is None
        status, err = await api(
            "alice", "PUT", f"{fb}/{got['messages'][0]['id']}/feedback", {"rating": "up"}
        )
        assert status == 400 and "user" in err["error"], err

        # a conversation without feedback gives nothing (counted)
        status, plain = await api("alice", "POST", CONV, {**body, "title": "plain"})
        assert status == 201
        status, events, _ = await _stream(port, base, plain["id"], {"content": "the quick"})
        assert status == 200 and events[-1]["type"] == "done"

        # export: two pairs from the first conversation, registered as a dataset version
        status, out = await api(
            "alice", "POST", "chat/exports", {"project": "alice", "dataset": "chat-prefs"}
        )
        assert status == 201, out
        assert (out["dataset"], out["version"], out["ref"]) == ("chat-prefs", 1, "chat-prefs:1")
        assert out["pairs"] == 2 and out["conversations"] == 1
        assert out["skipped"] == {"no_preference": 1, "stopped": 0}, out  # the plain one
        records = [json.loads(line) for line in Path(out["path"]).read_text().splitlines()]
        by_turn = {r["turn"]: r for r in records}
        assert by_turn[0]["prompt"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hello world"},
        ]
        assert by_turn[0]["chosen"] == "Hello! How can I help?"
        assert by_turn[0]["rejected"] == first_answer["content"]
        assert by_turn[1]["prompt"][-2:] == [
            {"role": "assistant", "content": "Hello! How can I help?"},  # the edit is the context
            {"role": "user", "content": "numbers one two"},
        ]
        assert (by_turn[1]["chosen"], by_turn[1]["rejected"]) == (
            redo["content"],
            stopped["content"],
        )
        # a second export is the next version of the same dataset
        status, again = await api(
            "alice",
            "POST",
            "chat/exports",
            {"project": "alice", "dataset": "chat-prefs", "conversation_ids": [cid]},
        )
        assert status == 201 and again["version"] == 2 and again["pairs"] == 2, again

        # the CLI, on the server's store and under the hub (through the service)
        from cube_lab.cli import main

        data_dir = jp_serverapp.web_app.settings[WORKSPACE].settings.data_dir
        monkeypatch.setenv("CUBE_LAB_USER", "alice")
        argv = ["--data-dir", str(data_dir), "chat", "export", "--project", "alice"]
        argv += ["--dataset", "chat-prefs", "--conversation", str(cid), "--json"]
        capsys.readouterr()
        assert await asyncio.to_thread(main, argv) == 0
        made = json.loads(capsys.readouterr().out)
        assert (made["version"], made["pairs"]) == (3, 2), made
        monkeypatch.setenv("CUBE_LAB_SERVICE_URL", f"http://localhost:{port}{base}")
        monkeypatch.setenv("JUPYTERHUB_API_TOKEN", TOKENS["alice"])
        assert await asyncio.to_thread(main, ["chat", "list", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert sorted(c["id"] for c in listed) == sorted([cid, plain["id"]])
        assert await asyncio.to_thread(main, ["chat", "export", "--dataset", "chat-prefs"]) == 0
        said = capsys.readouterr().out
        assert "dataset chat-prefs:4 in project alice: 2 preference pair(s)" in said, said
        monkeypatch.delenv("CUBE_LAB_SERVICE_URL")
        monkeypatch.delenv("JUPYTERHUB_API_TOKEN")

        # the SDK over REST (as under the hub): cl.chat
        import cube_lab as cl
        from cube_lab import sdk

        await asyncio.to_thread(sdk.connect, f"http://localhost:{port}{base}", TOKENS["alice"])
        try:
            found = await asyncio.to_thread(cl.chat.conversations, "alice")
            assert sorted(c["id"] for c in found) == sorted([cid, plain["id"]])
            one = await asyncio.to_thread(cl.chat.get, cid)
            assert len(one["messages"]) == 5
            made = await asyncio.to_thread(
                functools.partial(cl.chat.export, "chat-prefs", project="alice")
            )
            assert (made["version"], made["pairs"]) == (5, 2), made
        finally:
            sdk.disconnect()

        # the DPO fine-tune reads the version as it is: the same parse and loader the job uses
        ws = jp_serverapp.web_app.settings[WORKSPACE]
        from cube_lab.finetune.data import load_records
        from cube_lab.finetune.service import FinetuneService
        from cube_lab.finetune.trainer import train

        raw_config = {
            "model": str(jp_root_dir / "models" / "tiny"),
            "method": "dpo",
            "data": {"dataset": "chat-prefs:1"},
            "lora": {"rank": 4, "alpha": 8},
            "max_steps": 2,
            "per_device_train_batch_size": 2,
            "cutoff_len": 64,
            "logging_steps": 1,
            "output_dir": str(jp_root_dir / "dpo-out"),
        }
        config = await asyncio.to_thread(
            FinetuneService(ws).parse, Caller("alice"), raw_config, jp_root_dir
        )
        assert config.dataset_ref == "alice/chat-prefs:1"
        loaded = load_records(config.data)
        assert len(loaded) == 2
        assert loaded[0]["chosen"] == [{"role": "assistant", "content": by_turn[0]["chosen"]}]
        assert loaded[0]["prompt"][0] == {"role": "system", "content": "Be brief."}
        await asyncio.to_thread(train, config)
        assert (jp_root_dir / "dpo-out" / "adapter_config.json").is_file() or any(
            (jp_root_dir / "dpo-out").rglob("adapter_config.json")
        )

        # bob: none of it is his
        for method, path, sent in [
            ("GET", f"{CONV}/{cid}", None),
            ("PATCH", f"{CONV}/{cid}", {"title": "mine"}),
            ("DELETE", f"{CONV}/{cid}", None),
            ("PUT", f"{fb}/{redo['id']}/feedback", {"rating": "down"}),
            ("POST", f"{fb}/{redo['id']}/activate", None),
            ("POST", f"{CONV}/{cid}/messages", {"content": "hi"}),
        ]:
            status, err = await api("bob", method, path, sent)
            assert status == 404 and "error" in err, (method, path, status, err)
        status, err = await api("bob", "GET", CONV, params={"project": "alice"})
        assert status == 404
        status, mine = await api("bob", "GET", CONV)
        assert status == 200 and mine["conversations"] == []
        status, err = await api("bob", "POST", "chat/exports", {"project": "alice", "dataset": "x"})
        assert status == 404
        status, err = await api("bob", "POST", CONV, {"target": {"deployment": "tiny"}})
        assert status == 404, err  # alice's deployment is not in bob's project
        status, err = await api("bob", "GET", "chat/targets", params={"project": "alice"})
        assert status == 404

        # an external OpenAI-compatible target with a key: the key is never answered
        ext = {"base_url": f"{endpoint}/v1", "model": "tiny", "api_key": key["key"]}
        status, other = await api(
            "alice", "POST", CONV, {"project": "alice", "target": ext, "params": {"max_tokens": 4}}
        )
        assert status == 201 and other["target"]["api_key"] == "***", other
        assert key["key"] not in json.dumps(other)
        status, events, _ = await _stream(port, base, other["id"], {"content": "hello"})
        assert status == 200 and events[-1]["type"] == "done", events
        status, listed = await api("alice", "GET", CONV, params={"project": "alice"})
        assert key["key"] not in json.dumps(listed)
        # sending the mask back keeps the key; a wrong key is the target's 401 as a 424
        status, kept = await api(
            "alice", "PATCH", f"{CONV}/{other['id']}", {"target": {**ext, "api_key": "***"}}
        )
        assert status == 200 and kept["target"]["api_key"] == "***"
        status, events, _ = await _stream(port, base, other["id"], {"content": "again"})
        assert status == 200 and events[-1]["type"] == "done"
        status, _ = await api(
            "alice", "PATCH", f"{CONV}/{other['id']}", {"target": {**ext, "api_key": "cube_wrong"}}
        )
        assert status == 200
        status, _, err = await _stream(port, base, other["id"], {"content": "again"})
        assert status == 424 and "401" in err["error"], err
        status, got = await api("alice", "GET", f"{CONV}/{other['id']}")
        assert len(got["messages"]) == 4  # the refused send saved nothing

        # delete
        status, _ = await api("alice", "DELETE", f"{CONV}/{other['id']}")
        assert status == 204
        status, _ = await api("alice", "GET", f"{CONV}/{other['id']}")
        assert status == 404
    finally:
        await api("alice", "DELETE", "projects/alice/deployments/tiny")


async def test_bad_input_and_an_unreachable_target(
    api: Any, jp_http_port: int, jp_base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = [
        ({"project": "alice"}, "target is required"),
        ({"target": {}}, "target must be an object"),
        ({"target": {"deployment": "nope"}}, "not found"),
        ({"target": {"base_url": "ftp://x/v1", "model": "m"}}, "http(s) URL"),
        ({"target": {"base_url": "http://x/v1"}}, "target.model is required"),
        (
            {"target": {"base_url": "http://x/v1", "model": "m"}, "params": {"temperature": 5}},
            "0.0..2.0",
        ),
        (
            {"target": {"base_url": "http://x/v1", "model": "m"}, "params": {"top_k": 5}},
            "unknown params",
        ),
        (
            {"target": {"base_url": "http://x/v1", "model": "m"}, "params": {"max_tokens": 0}},
            "max_tokens",
        ),
        (
            {"target": {"base_url": "http://x/v1", "model": "m"}, "params": {"stop": []}},
            "params.stop",
        ),
        ({"target": {"base_url": "http://x/v1", "model": "m"}, "colour": "red"}, "unknown fields"),
        ({"target": {"base_url": "http://x/v1", "model": "m"}, "project": "nobody"}, "not found"),
    ]
    for body, words in bad:
        status, err = await api("alice", "POST", CONV, body)
        assert status in (400, 404) and words in err["error"], (body, status, err)
        assert set(err) == {"error", "detail"}

    # port 9 (discard) answers nothing here: a 424 naming the target, nothing saved
    target = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "sk-test"}
    status, conv = await api("alice", "POST", CONV, {"target": target})
    assert status == 201 and conv["project"] == "alice"
    cid = conv["id"]
    status, _, err = await _stream(jp_http_port, jp_base_url, cid, {"content": "hi"})
    assert (
        status == 424 and "cannot be reached" in err["error"] and "127.0.0.1:9" in err["error"]
    ), err
    status, got = await api("alice", "GET", f"{CONV}/{cid}")
    assert got["messages"] == [] and got["target"]["api_key"] == "***"

    # a server that takes the connection and never answers: a 424 after the wait, not a hang
    import socket

    from cube_lab.chat import upstream

    monkeypatch.setattr(upstream, "HEADERS_TIMEOUT_S", 0.5)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    try:
        quiet = {"base_url": f"http://127.0.0.1:{silent.getsockname()[1]}/v1", "model": "m"}
        status, mute = await api("alice", "POST", CONV, {"target": quiet})
        assert status == 201
        status, _, err = await _stream(jp_http_port, jp_base_url, mute["id"], {"content": "hi"})
        assert status == 424 and "did not answer within 0.5 s" in err["error"], err
        # the conversation is free again for the next send (which fails the same way)
        status, _, err = await _stream(jp_http_port, jp_base_url, mute["id"], {"content": "hi"})
        assert status == 424, err
    finally:
        silent.close()

    for body, words in [
        ({}, "content must be a non-empty string"),
        ({"content": "  "}, "content must be a non-empty string"),
        ({"content": "hi", "regenerate": 1}, "not both"),
        ({"regenerate": "x"}, "regenerate must be"),
        ({"content": "hi", "params": {"seed": 1.5}}, "params.seed"),
    ]:
        status, err = await api("alice", "POST", f"{CONV}/{cid}/messages", body)
        assert status == 400 and words in err["error"], (body, err)
    status, err = await api("alice", "POST", f"{CONV}/{cid}/messages", {"regenerate": 99})
    assert status == 404
    for mid, body, code in [
        ("99", {"rating": "up"}, 404),
        ("x", {"rating": "up"}, 404),
    ]:
        status, err = await api("alice", "PUT", f"{CONV}/{cid}/messages/{mid}/feedback", body)
        assert status == code, err
    for cid_raw in ("0", "x", "99999999999999999999"):
        status, err = await api("alice", "GET", f"{CONV}/{cid_raw}")
        assert status == 404, err
    status, err = await api("alice", "POST", "chat/exports", {"dataset": "bad name!"})
    assert status == 400 and "dataset name" in err["error"], err
    status, err = await api("alice", "POST", "chat/exports", {"dataset": "prefs"})
    assert status == 400 and "no preference pairs" in err["error"], err
    status, err = await api(
        "alice", "POST", "chat/exports", {"dataset": "prefs", "conversation_ids": [99]}
    )
    assert status == 404, err
    status, err = await api(
        "alice", "POST", "chat/exports", {"dataset": "prefs", "conversation_ids": "1"}
    )
    assert status == 400, err


from tests.serving.llm.test_deploy import local  # noqa: E402, F401 - the embedded SDK as alice


def test_cube_chat_magic_prints_the_streamed_answer(
    local: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    import cube_lab as cl
    from cube_lab.magics import CubeMagics

    tiny.build(local / "tiny", TEXTS)
    cl.models.register(local / "tiny", "tiny")
    dep = cl.deploy("tiny:1")
    expected = dep.chat(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello world"}],
        max_tokens=6,
        temperature=0,
    )
    # the embedded SDK: cl.chat here is the in-process service (nothing to export yet)
    assert cl.chat.conversations() == []
    with pytest.raises(InvalidInput, match="no preference pairs"):
        cl.chat.export("prefs")
    magics = CubeMagics(shell=None)
    capsys.readouterr()
    magics.cube_chat('tiny "hello world" --system "Be brief." --max-tokens 6 --temperature 0')
    assert capsys.readouterr().out == expected + "\n"
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="deployment 'nope' not found"):  # no traceback
        magics.cube_chat("nope hi")
    with pytest.raises(UsageError, match="usage"):
        magics.cube_chat("tiny")
    dep.stop()
