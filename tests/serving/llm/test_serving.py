"""LLM serving: ``python -m cube_lab.serving.llm`` on a tiny random-init model (nothing
downloaded), called with the official ``openai`` client, streaming and not.

One server for the module: a Llama-shaped base (hidden size 64, 2 layers, a tokenizer
trained on the spot by ``cube_lab.finetune.tiny``) and two random LoRA adapters of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("peft")
httpx = pytest.importorskip("httpx")

from cube_lab.finetune import tiny  # noqa: E402

# The tests share the module's server (a model and three adapters built, a process started:
# ~10 s). Under pytest-xdist (``--dist loadgroup``) they go to one worker, which starts it
# once, instead of once per worker and again after each test of another module between them.
pytestmark = pytest.mark.xdist_group("llm-serving-server")

TEXTS = [
    "hello world, the quick brown fox jumps over the lazy dog",
    "numbers one two three four five six seven eight nine ten",
    "lorem ipsum dolor sit amet, consectetur adipiscing elit",
] * 20
PROMPT = "the quick brown fox"


def make_adapter(base: Path, out: Path, seed: int) -> Path:
    """A LoRA adapter with random (not zero) B matrices, so it changes the base's output."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(base)
    config = LoraConfig(
        r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False
    )
    get_peft_model(model, config).save_pretrained(out)
    return out


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log
        self.url = f"http://127.0.0.1:{port}"
        self.client = openai.OpenAI(base_url=f"{self.url}/v1", api_key="unused", max_retries=0)

    def stats(self) -> dict[str, Any]:
        return httpx.get(f"{self.url}/stats").json()


def start(root: Path, *args: str) -> Server:
    ready = root / f"ready-{time.monotonic_ns()}.json"
    log = root / f"server-{time.monotonic_ns()}.log"
    env = {
        **os.environ,
        "HOME": str(root / "home"),
        "HF_HOME": str(root / "hf"),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    argv = [sys.executable, "-m", "cube_lab.serving.llm", "--port", "0", "--ready-file",
            str(ready), *args]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the LLM server did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    return Server(proc, json.loads(ready.read_text())["port"], log)


def stop(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(20)
    except subprocess.TimeoutExpired:
        server.proc.kill()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("llm")
    (root / "home").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root / "home"))
        mp.setenv("HF_HOME", str(root / "hf"))
        tiny.build(root / "base", TEXTS)
        make_adapter(root / "base", root / "lora-a", seed=1)
        make_adapter(root / "base", root / "lora-b", seed=2)
        make_adapter(root / "base", root / "lora-c", seed=3)
    return root


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Server]:
    s = start(
        root,
        "--model", str(root / "base"), "--name", "tiny",
        "--adapter", f"tiny-a={root / 'lora-a'}", "--adapter", f"tiny-b={root / 'lora-b'}",
    )  # fmt: skip
    yield s
    stop(s)


def greedy(server: Server, model: str = "tiny", **kw: Any) -> Any:
    args = {"prompt": PROMPT, "max_tokens": 12, "temperature": 0, **kw}
    return server.client.completions.create(model=model, **args)


def test_models_lists_the_base_and_its_adapters(server: Server) -> None:
    models = {m.id: m for m in server.client.models.list().data}
    assert set(models) == {"tiny", "tiny-a", "tiny-b"}
    assert models["tiny-a"].model_dump()["parent"] == "tiny"


def test_completion_and_usage(server: Server) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(server_root(server) / "base")
    r = greedy(server, max_tokens=7, extra_body={"ignore_eos": True})
    assert r.object == "text_completion" and r.model == "tiny"
    (choice,) = r.choices
    assert choice.finish_reason == "length"
    assert r.usage.prompt_tokens == len(tok(PROMPT)["input_ids"])
    assert r.usage.completion_tokens == 7
    assert r.usage.total_tokens == r.usage.prompt_tokens + 7
    # the text is the decoded tokens: asking for them as ids gives the same answer
    ids = tok(PROMPT)["input_ids"]
    again = greedy(server, prompt=ids, max_tokens=7, extra_body={"ignore_eos": True})
    assert again.choices[0].text == choice.text != ""


def server_root(server: Server) -> Path:
    return server.log.parent


def test_streaming_completion_matches_the_whole_one(server: Server) -> None:
    whole = greedy(server, extra_body={"ignore_eos": True})
    chunks = list(
        server.client.completions.create(
            model="tiny", prompt=PROMPT, max_tokens=12, temperature=0, stream=True,
            stream_options={"include_usage": True}, extra_body={"ignore_eos": True},
        )
    )  # fmt: skip
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == whole.choices[0].text
    assert len([c for c in chunks if c.choices and c.choices[0].text]) > 1  # streamed, not one
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage.completion_tokens == 12
    assert chunks[-1].usage.prompt_tokens == whole.usage.prompt_tokens


def test_chat_uses_the_chat_template_and_streams(server: Server) -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    args = {"model": "tiny", "messages": messages, "max_tokens": 6, "temperature": 0,
            "extra_body": {"ignore_eos": True}}  # fmt: skip
    r = server.client.chat.completions.create(**args)
    assert r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant"
    # the template's prompt: <|system|>be brief<|end|>\n<|user|>hi<|end|>\n<|assistant|>
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(server_root(server) / "base")
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|assistant|>")
    assert r.usage.prompt_tokens == len(tok(text, add_special_tokens=False)["input_ids"])
    assert r.usage.completion_tokens == 6
    chunks = list(server.client.chat.completions.create(**args, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert streamed == r.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == "length"


def test_stop_sequences_end_the_text_before_them(server: Server) -> None:
    full = greedy(server, max_tokens=16, extra_body={"ignore_eos": True}).choices[0].text
    assert len(full) >= 6
    stop = full[3:6]
    cut = full[: full.find(stop)]
    r = greedy(server, max_tokens=16, stop=[stop, "never-in-it"], extra_body={"ignore_eos": True})
    assert r.choices[0].text == cut
    assert r.choices[0].finish_reason == "stop"
    assert r.usage.completion_tokens < 16
    streamed = server.client.completions.create(
        model="tiny", prompt=PROMPT, max_tokens=16, temperature=0, stop=stop, stream=True,
        extra_body={"ignore_eos": True},
    )  # fmt: skip
    chunks = list(streamed)
    assert "".join(c.choices[0].text for c in chunks) == cut  # the stop never leaks out
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_seed_and_n(server: Server) -> None:
    args = {"prompt": PROMPT, "max_tokens": 10, "temperature": 1.0, "seed": 7,
            "extra_body": {"ignore_eos": True}}  # fmt: skip
    one = server.client.completions.create(model="tiny", **args)
    two = server.client.completions.create(model="tiny", **args)
    assert one.choices[0].text == two.choices[0].text  # the same seed, the same sample
    other = server.client.completions.create(model="tiny", **{**args, "seed": 8})
    assert other.choices[0].text != one.choices[0].text
    many = server.client.completions.create(model="tiny", n=3, **args)
    assert [c.index for c in many.choices] == [0, 1, 2]
    assert many.choices[0].text == one.choices[0].text
    assert len({c.text for c in many.choices}) == 3  # each choice samples on its own
    assert many.usage.completion_tokens == 30


def test_sixteen_concurrent_streams_are_batched(server: Server) -> None:
    before = server.stats()
    barrier = threading.Barrier(16)
    texts: list[str] = [""] * 16
    errors: list[BaseException] = []

    def stream(i: int) -> None:
        try:
            client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
            barrier.wait(30)
            for c in client.completions.create(
                model="tiny", prompt=f"{PROMPT} {i}", max_tokens=48, temperature=0,
                stream=True, extra_body={"ignore_eos": True},
            ):  # fmt: skip
                texts[i] += c.choices[0].text
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    after = server.stats()
    sizes = {int(k): v - before["decode_batch_sizes"].get(k, 0)
             for k, v in after["decode_batch_sizes"].items()}  # fmt: skip
    steps = sum(sizes.values())
    tokens = after["completion_tokens"] - before["completion_tokens"]
    assert tokens == 16 * 48
    # one by one would be 16 * 47 decode steps of one row each; batched, the rows share steps
    print("decode batch sizes of 16 streams:", {k: v for k, v in sizes.items() if v})
    assert max(k for k, v in sizes.items() if v) >= 8, sizes
    assert steps <= 16 * 47 / 4, sizes
    # a batched row gives what it gives alone
    alone = greedy(server, prompt=f"{PROMPT} 3", max_tokens=48, extra_body={"ignore_eos": True})
    assert texts[3] == alone.choices[0].text


def test_adapters_change_the_output(server: Server) -> None:
    outs = {m: greedy(server, m, extra_body={"ignore_eos": True}).choices[0].text
            for m in ("tiny", "tiny-a", "tiny-b")}  # fmt: skip
    assert len(set(outs.values())) == 3, outs
    seeded = {m: greedy(server, m, temperature=0.9, seed=3).choices[0].text
              for m in ("tiny-a", "tiny-b")}  # fmt: skip
    assert seeded["tiny-a"] != seeded["tiny-b"]


def test_mixed_adapters_in_one_batch_match_each_alone(server: Server) -> None:
    models = ["tiny", "tiny-a", "tiny-b"] * 2
    alone = {m: greedy(server, m, max_tokens=24, extra_body={"ignore_eos": True}).choices[0].text
             for m in set(models)}  # fmt: skip
    got: dict[int, str] = {}
    barrier = threading.Barrier(len(models))

    def call(i: int, m: str) -> None:
        barrier.wait(30)
        got[i] = greedy(server, m, max_tokens=24, extra_body={"ignore_eos": True}).choices[0].text

    before = server.stats()["decode_batch_sizes"]
    threads = [threading.Thread(target=call, args=(i, m)) for i, m in enumerate(models)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [got[i] for i in range(len(models))] == [alone[m] for m in models]
    after = server.stats()["decode_batch_sizes"]
    ran = [int(k) for k, v in after.items() if v > before.get(k, 0)]
    assert max(ran) >= 3, after  # the adapters shared decode steps


def test_an_adapter_added_while_serving(server: Server, root: Path) -> None:
    r = httpx.post(f"{server.url}/v1/adapters",
                   json={"name": "tiny-c", "path": str(root / "lora-c")}, timeout=60)  # fmt: skip
    assert r.status_code == 201, r.text
    assert "tiny-c" in {m.id for m in server.client.models.list().data}
    c = greedy(server, "tiny-c", extra_body={"ignore_eos": True}).choices[0].text
    assert c != greedy(server, "tiny-a", extra_body={"ignore_eos": True}).choices[0].text
    again = httpx.post(f"{server.url}/v1/adapters", json={"name": "tiny-c", "path": "x"})
    assert again.status_code == 409
    bad = httpx.post(f"{server.url}/v1/adapters", json={"name": "tiny-d", "path": str(root)})
    assert bad.status_code == 400
    assert "adapter_config.json" in bad.json()["error"]["message"]


def test_unknown_model_is_404_in_openais_shape(server: Server) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        server.client.completions.create(model="nope", prompt="hi")
    error = caught.value.body
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert "tiny-a" in error["message"]  # says what is served


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "temperature": 9},
         "temperature"),
        ({"model": "tiny", "messages": []}, "messages"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "model"),
        ({"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 0},
         "max_tokens"),
        ({"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "n": "2"}, "n"),
        ({"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "stop": [1]},
         "stop"),
        ({"model": "tiny", "messages": [{"role": "user", "content": "hi"}],
          "max_tokens": 100000}, "max_tokens"),
    ],
)  # fmt: skip
def test_malformed_chat_requests_get_400_in_openais_shape(
    server: Server, body: dict[str, Any], param: str
) -> None:
    r = httpx.post(f"{server.url}/v1/chat/completions", json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert error["message"]


def test_the_openai_client_raises_bad_request(server: Server) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        server.client.completions.create(model="tiny", prompt="hi", top_p=3)
    assert caught.value.status_code == 400 and caught.value.body["param"] == "top_p"
    r = httpx.post(f"{server.url}/v1/completions", content=b"{not json")
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    r = httpx.get(f"{server.url}/v1/nothing")
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_url"


def test_the_backend_key_and_the_fallback_prompt(root: Path) -> None:
    """Started by a deployment (``$CUBE_BACKEND_KEY``), only the router's key is answered; a
    tokenizer without a chat template gets the plain-text fallback prompt."""
    plain = root / "plain"
    if not plain.exists():
        import shutil

        shutil.copytree(root / "base", plain)
        config = json.loads((plain / "tokenizer_config.json").read_text())
        config.pop("chat_template", None)
        (plain / "tokenizer_config.json").write_text(json.dumps(config))
        (plain / "chat_template.jinja").unlink(missing_ok=True)
    os.environ["CUBE_BACKEND_KEY"] = "k" * 64
    try:
        s = start(root, "--model", str(plain))
    finally:
        del os.environ["CUBE_BACKEND_KEY"]
    try:
        assert httpx.get(f"{s.url}/v2/health/ready").status_code == 200
        r = httpx.get(f"{s.url}/v1/models")
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        headers = {"X-Cube-Backend-Key": "k" * 64}
        client = openai.OpenAI(base_url=f"{s.url}/v1", api_key="x", default_headers=headers)
        msgs = [{"role": "user", "content": "hi"}]
        r2 = client.chat.completions.create(model="plain", messages=msgs, max_tokens=2)
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(plain)
        assert tok.chat_template is None
        assert r2.usage.prompt_tokens == len(tok("user: hi\nassistant:")["input_ids"])
    finally:
        stop(s)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--model", "/nonexistent/model"], "no such folder"),
        (["--model", ".", "--adapter", "no-equals-sign"], "NAME=DIR"),
        (["--model", ".", "--adapter", "a=x", "--adapter", "a=y"], "must differ"),
    ],
)
def test_cli_refuses_bad_arguments(args: list[str], said: str) -> None:
    r = subprocess.run([sys.executable, "-m", "cube_lab.serving.llm", *args],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and said in r.stderr, r.stderr
