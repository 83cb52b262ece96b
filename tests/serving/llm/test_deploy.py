"""A registered LLM deployed like any model (REST through a real jupyter-server), its replica
the LLM engine (``cube_lab.serving.llm``) behind the deployment's router, called with the
official ``openai`` client through the router: chat (whole and streamed), completions,
``/v1/models``, OpenAI-shaped errors, API keys, tenancy, stop.

The model is a tiny random-init Llama (hidden size 64, 2 layers) built in the test by
``cube_lab.finetune.tiny``; nothing is downloaded."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("transformers")

from cube_lab.errors import InvalidInput  # noqa: E402
from cube_lab.finetune import tiny  # noqa: E402
from cube_lab.processes import pid_alive  # noqa: E402

TEXTS = [
    "hello world, the quick brown fox jumps over the lazy dog",
    "numbers one two three four five six seven eight nine ten",
] * 20
HELLO = [{"role": "user", "content": "hello world"}]


async def test_deploy_a_registered_llm_and_call_it_with_openai(api: Any, jp_root_dir: Path) -> None:
    tiny.build(jp_root_dir / "models" / "tiny", TEXTS)
    status, version = await api("alice", "POST", "models", {"name": "tiny", "path": "models/tiny"})
    assert status == 201, version
    assert version["flavor"] == "transformers"
    # an LLM has no adaptive batching of the OIP server to turn on: told so, nothing started
    status, err = await api(
        "alice", "POST", "deployments", {"model": "tiny:1", "batch_max_rows": 8}
    )
    assert status == 400 and "batches requests itself" in err["error"], err
    status, err = await api("alice", "POST", "deployments", {"model": "tiny:1", "runtime": "vllm"})
    assert status == 400 and "unknown runtime" in err["error"], err

    status, dep = await api("alice", "POST", "deployments", {"model": "tiny:1", "auth": "required"})
    assert status == 201, dep
    assert dep["runtime"] == "llm" and dep["status"] == "running"
    endpoint = dep["endpoint"]
    servers = [p["pid"] for p in dep["processes"] if p["role"] == "server"]
    assert len(servers) == 1 and pid_alive(servers[0])
    try:
        status, made = await api(
            "alice", "POST", "projects/alice/deployments/tiny/keys", {"name": "nb"}
        )
        assert status == 201, made
        client = openai.OpenAI(base_url=f"{endpoint}/v1", api_key=made["key"], max_retries=0)

        # /v1/models through the router lists the deployed model under its registry name
        assert [m.id for m in client.models.list().data] == ["tiny"]

        answer = client.chat.completions.create(
            model="tiny", messages=HELLO, max_tokens=6, temperature=0
        )
        assert answer.object == "chat.completion"
        assert answer.choices[0].message.role == "assistant"
        assert answer.usage.completion_tokens == 6 or answer.choices[0].finish_reason == "stop"
        assert answer.usage.prompt_tokens > 0

        # streamed: chunk by chunk through the router, the same greedy text in the end
        chunks = list(
            client.chat.completions.create(
                model="tiny", messages=HELLO, max_tokens=6, temperature=0, stream=True
            )
        )
        assert chunks[0].choices[0].delta.role == "assistant"
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert streamed == answer.choices[0].message.content
        assert chunks[-1].choices[0].finish_reason in ("length", "stop")
        assert len(chunks) >= 3  # the opening, at least one token, the finish

        # the router hands the events on as a chunked stream, not one gathered body
        with httpx.stream(
            "POST",
            f"{endpoint}/v1/chat/completions",
            json={"model": "tiny", "messages": HELLO, "max_tokens": 4, "stream": True},
            headers={"Authorization": f"Bearer {made['key']}"},
            timeout=60,
        ) as raw:
            assert raw.status_code == 200
            assert raw.headers["content-type"].startswith("text/event-stream")
            assert raw.headers.get("transfer-encoding") == "chunked"
            assert "content-length" not in raw.headers
            events = [line for line in raw.iter_lines() if line.startswith("data: ")]
        assert events[-1] == "data: [DONE]" and len(events) >= 3

        text = client.completions.create(model="tiny", prompt="the quick", max_tokens=3)
        assert text.object == "text_completion" and text.usage.completion_tokens <= 3

        # a malformed request: 400 in OpenAI's error shape, from the model server
        with pytest.raises(openai.BadRequestError) as bad:
            client.chat.completions.create(model="tiny", messages=[], max_tokens=2)
        assert bad.value.status_code == 400
        assert set(bad.value.body) >= {"message", "type", "param", "code"}
        with pytest.raises(openai.NotFoundError) as missing:
            client.chat.completions.create(model="other", messages=HELLO, max_tokens=2)
        assert "tiny" in missing.value.body["message"]

        # no key, a wrong key, or bob's hub token: the router refuses, in OpenAI's shape
        no_key = httpx.post(f"{endpoint}/v1/chat/completions", json={}, timeout=30)
        assert no_key.status_code == 401
        assert no_key.json()["error"]["code"] == "invalid_api_key"
        assert no_key.json()["error"]["type"] == "invalid_request_error"
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(
                base_url=f"{endpoint}/v1", api_key="cube_wrong", max_retries=0
            ).models.list()
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(
                base_url=f"{endpoint}/v1", api_key="bob-secret", max_retries=0
            ).models.list()
        # the model server's own routes stay behind the router (loading an adapter by path)
        adapters = httpx.get(
            f"{endpoint}/v1/adapters",
            headers={"Authorization": f"Bearer {made['key']}"},
            timeout=30,
        )
        assert adapters.status_code == 404 and "error" in adapters.json()
        # the replica itself answers only its router
        server_port = next(p["port"] for p in dep["processes"] if p["role"] == "server")
        direct = httpx.get(f"http://127.0.0.1:{server_port}/v1/models", timeout=30)
        assert direct.status_code == 401

        # bob sees neither the deployment nor a way to a key of it
        status, _ = await api("bob", "GET", "projects/alice/deployments/tiny")
        assert status in (403, 404)
        status, _ = await api("bob", "POST", "projects/alice/deployments/tiny/keys", {"name": "x"})
        assert status in (403, 404)
        status, listed = await api("bob", "GET", "deployments")
        assert status == 200 and listed["deployments"] == []

        # the router's metrics counted the LLM requests like any other
        # ... and the engine's own figures, per replica, in one valid exposition
        status, metrics = await api("alice", "GET", "projects/alice/deployments/tiny/metrics")
        assert status == 200
        from prometheus_client.parser import text_string_to_metric_families

        families = {f.name: f for f in text_string_to_metric_families(metrics.decode())}
        served = {
            s.labels["code"]: s.value
            for s in families["cube_serving_requests"].samples
            if s.name == "cube_serving_requests_total"
        }
        assert served["200"] >= 5 and served["400"] >= 1
        tokens = families["cube_llm_completion_tokens"].samples
        assert [(t.labels["version"], t.labels["replica"]) for t in tokens] == [
            ("1", f"127.0.0.1:{server_port}")
        ]
        assert tokens[0].value >= 6 + 6 + 4
        assert families["cube_llm_time_to_first_token_seconds"].type == "summary"
    finally:
        status, stopped = await api("alice", "DELETE", "projects/alice/deployments/tiny")
    assert status == 200 and stopped["status"] == "stopped"
    deadline = time.monotonic() + 10
    while pid_alive(servers[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(servers[0])
    with pytest.raises(httpx.TransportError):  # the router is gone with it
        httpx.get(f"{endpoint}/v1/models", timeout=5)


def make_adapter(base: Path, out: Path, seed: int, base_ref: str) -> Path:
    """A LoRA adapter with random (not zero) B matrices, recording its registered base the way
    cube-lab's fine-tuning does (``cube_finetune.json``'s ``base_ref``)."""
    import json

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(base)
    config = LoraConfig(
        r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False
    )
    get_peft_model(model, config).save_pretrained(out)
    (out / "cube_finetune.json").write_text(
        json.dumps({"kind": "cube-lab-finetune", "base_ref": base_ref, "base_model": "gone"})
    )
    return out


@pytest.fixture
def local(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The embedded shape: the SDK in this process on the test's own data dir, as alice."""
    from cube_lab import sdk
    from cube_lab.workspace import default_workspace

    root = isolated_env / "root"
    root.mkdir()
    monkeypatch.setenv("CUBE_LAB_USER", "alice")
    monkeypatch.chdir(root)
    sdk.disconnect()
    default_workspace.cache_clear()
    yield root
    from serving_util import stop_serving

    from cube_lab.identity import Caller

    ws = default_workspace()
    stop_serving(ws, Caller("alice"))
    ws.close()
    sdk.disconnect()
    default_workspace.cache_clear()


def test_sdk_chats_with_a_peft_adapter_on_its_registered_base(local: Path) -> None:
    pytest.importorskip("peft")
    import cube_lab as cl

    tiny.build(local / "base", TEXTS)
    make_adapter(local / "base", local / "lora-1", seed=1, base_ref="tiny:1")
    make_adapter(local / "base", local / "lora-2", seed=2, base_ref="tiny:1")
    assert cl.models.register(local / "base", "tiny").flavor == "transformers"
    assert cl.models.register(local / "lora-1", "tiny-chat").flavor == "peft"
    cl.models.register(local / "lora-2", "tiny-chat")

    with pytest.raises(InvalidInput, match="peft adapter"):
        cl.deploy("tiny-chat:1", runtime="oip")
    dep = cl.deploy("tiny-chat:1")
    assert dep.runtime == "llm" and dep.ready
    client = dep.openai_client()
    # the adapter under its model's name, its registered base beside it
    assert sorted(m.id for m in client.models.list().data) == ["tiny", "tiny-chat"]
    said = dep.chat("hello world", max_tokens=8, temperature=0)
    assert isinstance(said, str)
    assert "".join(dep.chat("hello world", max_tokens=8, temperature=0, stream=True)) == said
    base_said = dep.chat("hello world", model="tiny", max_tokens=8, temperature=0)
    assert base_said != said  # the adapter is applied: not the base's answer
    done = dep.complete("the quick", max_tokens=3, temperature=0)
    assert isinstance(done, str)

    # canary between two LLM versions: all of it to v2, the router says which answered
    canary = cl.deployments.get("tiny-chat")
    from cube_lab.identity import Caller
    from cube_lab.workspace import default_workspace

    view = default_workspace().serving.canary(Caller("alice"), "tiny-chat", "2", 100)
    assert [t["version"] for t in view.traffic] == [1, 2]
    raw = httpx.post(
        f"{canary.endpoint}/v1/chat/completions",
        json={"model": "tiny-chat", "messages": HELLO, "max_tokens": 8, "temperature": 0},
        timeout=60,
    )
    assert raw.status_code == 200 and raw.headers["x-cube-version"] == "2"
    assert raw.json()["choices"][0]["message"]["content"] != said  # another adapter

    servers = [p["pid"] for p in dep.refresh().data["processes"] if p["role"] == "server"]
    assert len(servers) == 2
    dep.stop()
    deadline = time.monotonic() + 10
    while any(pid_alive(p) for p in servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(pid_alive(p) for p in servers)
    with pytest.raises(InvalidInput, match="not running"):
        dep.chat("hello")


def test_cli_deploys_an_llm_and_says_where_openai_clients_go(
    ws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cube_lab import cli
    from cube_lab.identity import Caller

    tiny.build(tmp_path / "tiny", TEXTS)
    ws.registry.register(Caller(cli.local_username()), name="tiny", path=tmp_path / "tiny")
    base = ["--data-dir", str(ws.settings.data_dir)]
    assert cli.main([*base, "deploy", "tiny:1", "--runtime", "llm", "--name", "cli-llm"]) == 0
    out, err = capsys.readouterr()
    endpoint = out.strip().splitlines()[-1]
    try:
        assert f"base_url {endpoint}/v1, model 'tiny'" in err
        client = openai.OpenAI(base_url=f"{endpoint}/v1", api_key="any", max_retries=0)
        assert [m.id for m in client.models.list().data] == ["tiny"]
    finally:
        assert cli.main([*base, "undeploy", "cli-llm"]) == 0
